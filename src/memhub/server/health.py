"""What ``/healthz`` knows beyond a ping: whether the server's writes are failing.

A database can answer ``SELECT 1`` while every write fails (a full disk, a table file whose
permission changed): a ping alone would report ``ok``. The server therefore watches its own
writing requests and remembers the last one answered 503 (the database unavailable, out of
space, unable to open its files, or too slow) until a writing request succeeds again, or for
:data:`WRITE_FAILURE_SECONDS` if none does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["WRITE_FAILURE_SECONDS", "WriteHealth", "WriteWatch"]

WRITE_FAILURE_SECONDS = 60.0
"""How long a failed write keeps ``/healthz`` degraded when no write succeeds after it."""

_WRITING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_READING_POSTS = frozenset({"/v1/memories/search"})  # a POST for its body; writes nothing


@dataclass
class WriteHealth:
    """The outcome of the server's latest writing request, as far as health goes."""

    failed_at: float | None = None

    def failed(self, now: float) -> None:
        self.failed_at = now

    def succeeded(self) -> None:
        self.failed_at = None

    def degraded(self, now: float) -> bool:
        """True while the latest write failed less than WRITE_FAILURE_SECONDS ago."""
        return self.failed_at is not None and now - self.failed_at < WRITE_FAILURE_SECONDS


def is_write(scope: Scope) -> bool:
    """A request that writes to the database (by its method; search only reads)."""
    return scope.get("method") in _WRITING_METHODS and scope.get("path") not in _READING_POSTS


class WriteWatch:
    """ASGI middleware: record each writing request's outcome in ``health``.

    Once the server serves (``serving()``), a 503 is a failed write (memhub then answers 503
    only when the database cannot do it); a 2xx shows the database took one. Other answers (a
    refusal of the caller's input, a provider's 502) say nothing of the database's writes, nor
    does the 503 of a server still starting (building its model), which reached no database.
    """

    def __init__(self, app: ASGIApp, health: WriteHealth, serving: Callable[[], bool]) -> None:
        self.app = app
        self.health = health
        self.serving = serving

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not is_write(scope) or not self.serving():
            await self.app(scope, receive, send)
            return

        async def watched(message: Message) -> None:
            if message["type"] == "http.response.start":
                status = int(message["status"])
                if status == 503:
                    self.health.failed(time.monotonic())
                elif status < 300:
                    self.health.succeeded()
            await send(message)

        await self.app(scope, receive, watched)
