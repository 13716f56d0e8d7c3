"""uvicorn's HTTP/1.1 protocol, answering what it cannot parse with memhub's JSON error body.

A request h11 refuses (NUL or a byte outside ASCII in the request line or a header, a
``Content-Length`` of ``-1`` or two different ones, an unsupported ``Transfer-Encoding``, a
URL or headers past h11's buffer) never reaches the application: uvicorn answers it with a
plain-text 400 of its own. This subclass writes ``{"error": ..., "type": ...}`` instead,
with the status that names the fault (414 for a request line too long, 431 for headers),
then closes the connection as uvicorn does. ``memhub serve`` and ``memhub mcp --http`` run
uvicorn with it (hence here, in what the two doors share).
"""

from __future__ import annotations

import http
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["JsonH11Protocol", "protocol_error"]

_MESSAGE_CHARS = 200  # h11 quotes the offending line; a 1 MB header is not echoed back

_TYPES = {400: "BadRequest", 414: "URITooLong", 431: "RequestHeaderFieldsTooLarge"}


def protocol_error(status: int, error: str) -> bytes:
    """A whole HTTP/1.1 answer: memhub's JSON error body, then the connection closes."""
    body = json.dumps({"error": error, "type": _TYPES.get(status, "BadRequest")}).encode()
    head = (
        f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _Connection(h11.Connection):
    """h11's connection, keeping the protocol error it raised (uvicorn drops it)."""

    refused: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.refused = exc
            raise


def _answer(conn: _Connection) -> tuple[int, str]:
    """The status and message for the request h11 refused on ``conn``."""
    refused = conn.refused
    if refused is None:  # pragma: no cover - uvicorn calls send_400_response only after one
        return 400, "malformed HTTP request"
    if refused.error_status_hint == 431:
        # Past h11's buffer: in the request line (its URL) if no line has ended yet.
        buffered = conn.trailing_data[0]
        if b"\n" not in buffered:
            return 414, "the request line (URL) is too long"
        return 431, "the request headers are too large"
    # 501 (a Transfer-Encoding other than chunked) is the client's to change, as any other.
    detail = str(refused)[:_MESSAGE_CHARS]
    return 400, f"malformed HTTP request: {detail}"


class JsonH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with memhub's JSON answers to malformed requests.

    Connection upgrades are never performed: memhub serves no WebSocket, and an
    ``Upgrade: websocket`` request reaches the application, which refuses it in JSON.
    (``serve`` also passes ``ws="none"``, which is what stops them in uvicorn releases
    before 0.30.6, where ``_should_upgrade`` does not exist yet.)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.conn = _Connection(h11.SERVER, self.conn._max_incomplete_event_size)

    def _should_upgrade(self) -> bool:
        return False

    def send_400_response(self, msg: str) -> None:
        assert isinstance(self.conn, _Connection)
        status, error = _answer(self.conn)
        self.transport.write(protocol_error(status, error))
        self.transport.close()
