"""memhub's JSON error body, sent straight from ASGI middleware, and the retry hint both
doors give.

A door refuses before any framework sees the request (a missing key, a tenant over its
quota, a body too large), so it writes the two ASGI messages itself:
``{"error": "...", "type": "..."}`` with ``content-type: application/json``.
"""

from __future__ import annotations

import functools
import json

from starlette.types import Message, Send

__all__ = ["RETRY_AFTER_SECONDS", "answer", "too_many_requests"]

RETRY_AFTER_SECONDS = 5
"""What ``Retry-After`` says on 502/503 answers for outages: a short, fixed back-off."""


async def answer(
    send: Send, status: int, error: str, type_: str, headers: dict[str, str] | None = None
) -> None:
    """Send memhub's JSON error body with ``status`` (and ``headers``)."""
    body = json.dumps({"error": error, "type": type_}).encode()
    extra = [(name.lower().encode(), value.encode()) for name, value in (headers or {}).items()]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *extra,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def too_many_requests(error: str, seconds: int) -> tuple[Message, Message]:
    """The two ASGI messages of a 429 with ``Retry-After: seconds``, fresh each time (a
    server may keep or change them) from bytes encoded once: a flooding key's refusals
    cost a dictionary lookup, not a JSON encoding."""
    body, headers = _too_many_requests_bytes(error, seconds)
    start: Message = {"type": "http.response.start", "status": 429, "headers": list(headers)}
    return start, {"type": "http.response.body", "body": body}


@functools.lru_cache(maxsize=64)
def _too_many_requests_bytes(
    error: str, seconds: int
) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
    # Few distinct refusals (the message names the setting and the seconds).
    body = json.dumps({"error": error, "type": "TooManyRequests"}).encode()
    headers = (
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(seconds).encode()),
    )
    return body, headers
