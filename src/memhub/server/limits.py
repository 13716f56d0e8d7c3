"""Guards that run before any work: the request-size bound and per-key token buckets.

Both answer with memhub's JSON error body naming the setting that refused the request.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memhub.doors.answers import answer

__all__ = ["DRAIN_BYTES", "BodyLimit"]

DRAIN_BYTES = 16 * 1024 * 1024
"""How much of a refused body is read and dropped before the 413 is sent.

A client still sending when the server answers and closes gets a connection reset, and most
(urllib, requests, httpx) then report that instead of the 413: reading the rest first lets
them see the answer. Bounded, so a client cannot keep a connection busy with an endless body;
past it the 413 goes out and the connection is closed anyway.
"""


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with 413, before anything parses them.

    A declared ``Content-Length`` over the bound is refused before any of it is kept; a
    chunked body is kept up to the bound and refused as soon as it passes it, so no request
    holds more than ``max_bytes`` of memory. The rest of a refused body is read and dropped
    (up to :data:`DRAIN_BYTES`) so that the client receives the 413, then the connection
    is closed.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def _refuse(self, send: Send) -> None:
        error = f"request body is larger than {self.max_bytes} bytes (MEMHUB_MAX_BODY_BYTES)"
        await answer(send, 413, error, "PayloadTooLarge", {"Connection": "close"})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers", [])
        lengths = {value for name, value in headers if name == b"content-length"}
        if len(lengths) > 1 or (lengths and any(n == b"transfer-encoding" for n, _ in headers)):
            # Two framings of one body (RFC 9112 6.3): a proxy in front may have read another
            # body than this server would, the ground of request smuggling. Refused, closed.
            await answer(
                send,
                400,
                "conflicting Content-Length and Transfer-Encoding headers",
                "BadRequest",
                {"Connection": "close"},
            )
            return
        if _asks_websocket(headers):
            await answer(send, 400, _NO_WEBSOCKET, "BadRequest", {"Connection": "close"})
            return
        declared = next(iter(lengths), None)
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            # A client sending "Expect: 100-continue" waits for a word before its body: the
            # 413 is that word, and nothing needs draining (reading would send "100 Continue").
            waiting = any(n == b"expect" and v.lower() == b"100-continue" for n, v in headers)
            if not waiting and declared.isdigit() and int(declared) <= DRAIN_BYTES:
                await _drain(receive, DRAIN_BYTES)
            await self._refuse(send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client left
                await self.app(scope, _replay([message]), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                if message.get("more_body", False):
                    await _drain(receive, DRAIN_BYTES - size)
                await self._refuse(send)
                return
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        await self.app(scope, _replay([{"type": "http.request", "body": body}], receive), send)


_NO_WEBSOCKET = "this server speaks plain HTTP only: it does not switch to WebSocket"


def _asks_websocket(headers: list[tuple[bytes, bytes]]) -> bool:
    # Only WebSocket: an "Upgrade: h2c" may be ignored, and the request served in HTTP/1.1.
    return any(n == b"upgrade" and b"websocket" in v.lower() for n, v in headers)


async def _drain(receive: Receive, limit: int) -> None:
    """Read and drop the rest of a request body, at most ``limit`` bytes of it."""
    while limit > 0:
        message = await receive()
        if message["type"] != "http.request":
            return
        limit -= len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        if then is None:
            return {"type": "http.disconnect"}
        return await then()

    return receive
