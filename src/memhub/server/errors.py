"""memhub's errors as HTTP answers: ``{"error": "...", "type": "..."}``, never a traceback.

Every class of :mod:`memhub.errors` has one status in :data:`STATUSES` (a test walks the tree).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pydantic
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match

from memhub.doors.answers import RETRY_AFTER_SECONDS
from memhub.errors import (
    ConfigurationError,
    Conflict,
    MemhubError,
    MemoryNotFound,
    ModelBudgetSpent,
    NotRestorable,
    ProviderError,
    ProviderHTTPError,
    ProviderOutputError,
    StatementTimeout,
    StoreError,
    StoreUnavailable,
    UsageError,
)

__all__ = ["STATUSES", "install_error_handlers"]


@dataclass(frozen=True)
class _Mapping:
    status: int
    retry: bool = False  # send Retry-After: the same call may work later
    public: str | None = None  # the message shown instead of the exception's (hides details)


STATUSES: dict[type[MemhubError], _Mapping] = {
    UsageError: _Mapping(422),
    MemoryNotFound: _Mapping(404),
    NotRestorable: _Mapping(409),  # retrying cannot help: the memory is erased or current
    ModelBudgetSpent: _Mapping(429),  # the user's budget of model changes is spent for now
    Conflict: _Mapping(409, retry=True),
    StoreUnavailable: _Mapping(503, True, "the database is unavailable; retry later"),
    StatementTimeout: _Mapping(503, True, "the database did not answer in time; retry later"),
    StoreError: _Mapping(500, public="the database failed (see the server log)"),
    ProviderHTTPError: _Mapping(502, True, "the embedding or LLM provider failed; retry later"),
    ProviderOutputError: _Mapping(502, public="the provider answered with unusable output"),
    ProviderError: _Mapping(502, public="the embedding or LLM provider failed"),
    ConfigurationError: _Mapping(500, public="the server is misconfigured (see the server log)"),
    MemhubError: _Mapping(500, public="internal server error (see the server log)"),
}
"""memhub's error classes and their answers; the status of a class is its own entry."""

log = logging.getLogger("memhub.server")

_HTTP_TYPES = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "Conflict",
    413: "PayloadTooLarge",
    429: "TooManyRequests",
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


def _mapping(exc: MemhubError) -> tuple[type[MemhubError], _Mapping]:
    for cls in type(exc).__mro__:
        if cls in STATUSES:
            return cls, STATUSES[cls]
    return MemhubError, STATUSES[MemhubError]


async def _memhub(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemhubError)
    cls, mapping = _mapping(exc)
    if mapping.status >= 500 and not mapping.retry:
        log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    elif mapping.status >= 500 or mapping.status == 409:
        log.warning("%s %s: %s", request.method, request.url.path, exc)
    response = _body(mapping.status, mapping.public or str(exc), cls.__name__)
    if mapping.retry:
        response.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


async def _internal(request: Request, exc: Exception) -> JSONResponse:
    log.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _body(500, "internal server error (see the server log)", "InternalError")


# FastAPI's answer when a body cannot even be decoded (invalid UTF-8, an integer of more
# than 4,300 digits): the same class of error as invalid JSON, so the same 422.
_UNPARSEABLE = "There was an error parsing the body"


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 400 and exc.detail == _UNPARSEABLE:
        why = f"request body is not valid JSON: {exc.__cause__ or 'it cannot be decoded'}"
        return _body(422, why, "ValidationError", details=[{"loc": "body", "message": why}])
    response = _body(exc.status_code, str(exc.detail), _HTTP_TYPES.get(exc.status_code, "Error"))
    if exc.headers:
        response.headers.update(exc.headers)
    if exc.status_code == 405:
        # Starlette names the methods of the first route of the path only; several routes
        # share one (GET, POST and DELETE /v1/memories are three).
        response.headers["Allow"] = ", ".join(_allowed_methods(request))
    return response


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route of the request's path accepts.

    Asked of each route as the router asks (``matches`` with that method), so routes that
    FastAPI nests under included routers are found too.
    """
    routes = request.app.router.routes
    allowed = []
    for method in _METHODS:
        scope = {**request.scope, "method": method}
        if any(route.matches(scope)[0] is Match.FULL for route in routes):
            allowed.append(method)
    return allowed


def install_error_handlers(app: FastAPI) -> None:
    """Map memhub's error tree, validation failures and anything else to JSON answers."""
    app.add_exception_handler(RequestValidationError, _request_validation)
    # Raised inside memhub while building a message from the caller's dict: still bad input.
    app.add_exception_handler(pydantic.ValidationError, _request_validation)
    app.add_exception_handler(HTTPException, _http)
    app.add_exception_handler(MemhubError, _memhub)
    # Anything else: Starlette answers with this handler, then re-raises so the server logs it.
    app.add_exception_handler(Exception, _internal)
