"""memhub's errors as HTTP answers: ``{"error": "...", "type": "..."}``, never a traceback."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pydantic
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException

from memhub.errors import (
    MemhubError,
    MemoryNotFound,
    StatementTimeout,
    StoreUnavailable,
    UsageError,
)

__all__ = ["install_error_handlers"]

log = logging.getLogger("memhub.server")

_HTTP_TYPES = {
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
}


def _body(status: int, error: str, type_: str, **extra: Any) -> JSONResponse:
    content: dict[str, Any] = {"error": error, "type": type_, **extra}
    return JSONResponse(content, status_code=status)


def _where(loc: Sequence[int | str]) -> str:
    # ("body", "messages", 0, "content") -> "body.messages[0].content"
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _validation_message(errors: Sequence[Any]) -> tuple[str, list[dict[str, Any]]]:
    details: list[dict[str, Any]] = []
    for error in errors:
        where = _where(tuple(error.get("loc", ())))
        if error.get("type") == "json_invalid":
            message = f"request body is not valid JSON: {error.get('ctx', {}).get('error', '')}"
        else:
            message = f"{where}: {error.get('msg', 'invalid')}"
        details.append({"loc": where, "message": message})
    summary = "; ".join(d["message"] for d in details) or "invalid request"
    return summary, details


async def _request_validation(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError | pydantic.ValidationError)
    summary, details = _validation_message(exc.errors())
    return _body(422, summary, "ValidationError", details=details)


async def _usage(request: Request, exc: Exception) -> JSONResponse:
    return _body(422, str(exc), "UsageError")


async def _not_found(request: Request, exc: Exception) -> JSONResponse:
    return _body(404, str(exc), "MemoryNotFound")


async def _unavailable(request: Request, exc: Exception) -> JSONResponse:
    log.warning("%s %s: %s", request.method, request.url.path, exc)
    return _body(503, "the database is unavailable; retry later", "StoreUnavailable")


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _body(500, "internal server error (see the server log)", "InternalError")


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    response = _body(exc.status_code, str(exc.detail), _HTTP_TYPES.get(exc.status_code, "Error"))
    if exc.headers:
        response.headers.update(exc.headers)
    return response


def install_error_handlers(app: FastAPI) -> None:
    """Map memhub's error tree, validation failures and anything else to JSON answers."""
    app.add_exception_handler(RequestValidationError, _request_validation)
    # Raised inside memhub while building a message from the caller's dict: still bad input.
    app.add_exception_handler(pydantic.ValidationError, _request_validation)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(UsageError, _usage)
    app.add_exception_handler(MemoryNotFound, _not_found)
    app.add_exception_handler(StoreUnavailable, _unavailable)
    app.add_exception_handler(StatementTimeout, _unavailable)  # overloaded: retry later
    app.add_exception_handler(MemhubError, _internal)
    # Anything else: Starlette answers with this handler, then re-raises so the server logs it.
    app.add_exception_handler(Exception, _internal)
