"""A scripted OpenAI-compatible HTTP server: a test double for an LLM (and embedding) server.

No capable model runs in CI, so tests of code that talks to an LLM script its answers instead
and exercise the real client over a real socket. Standard library only.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self, TypeAlias
from urllib.parse import urlsplit

from memhub.testing._openai_wire import (
    assistant_message,
    chat_bodies,
    deterministic_embedding,
    embeddings_body,
    error_body,
    tool_call,
)

__all__ = [
    "DelayedReply",
    "HTTPErrorReply",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAIServer",
    "deterministic_embedding",
    "tool_call",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HTTPErrorReply:
    """Answer with an HTTP error; a ``str`` body is wrapped in OpenAI's error shape."""

    status: int
    body: str | Mapping[str, Any] = "scripted error"
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DelayedReply:
    """Wait ``seconds`` (to provoke client timeouts), then answer ``reply`` or the default."""

    seconds: float
    reply: Reply | None = None


@dataclass(frozen=True)
class RawReply:
    """Answer with arbitrary bytes, e.g. garbage that is not JSON at all."""

    text: str
    status: int = 200
    content_type: str = "text/plain"


Reply: TypeAlias = (
    str
    | Mapping[str, Any]
    | Callable[[dict[str, Any]], "Reply"]
    | HTTPErrorReply
    | DelayedReply
    | RawReply
)
"""A scripted answer: assistant text, a message dict (``content``, ``tool_calls``, any extra
fields, optional ``finish_reason``), a callable of the request JSON returning a reply, or one
of the reply classes above."""


@dataclass(frozen=True)
class RecordedRequest:
    """One request the server received; ``json`` is ``None`` if the body was not JSON."""

    method: str
    path: str
    headers: Mapping[str, str]
    json: Any

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages sent, or ``[]``."""
        return list(self.json.get("messages", [])) if isinstance(self.json, dict) else []


class ScriptedOpenAIServer:
    """Serves ``/v1/chat/completions`` (plain and streamed), ``/v1/embeddings``, ``/v1/models``.

    Chat requests take the next scripted reply; an empty script falls back to ``default``, or
    to an HTTP 500 saying the script ran out (marked not-retryable, so clients fail at once).
    Usage counts words as tokens, deterministically.

    Example:
        >>> with ScriptedOpenAIServer('{"facts": []}') as server:  # doctest: +SKIP
        ...     client = AsyncOpenAI(base_url=server.base_url, api_key="x")

    Args:
        *replies: Chat replies to serve, in order.
        default: The reply when the script is empty.
        model: Model name reported when a request names none, and by ``/v1/models``.
        embedding_dim: Length of embedding vectors, unless a request asks for ``dimensions``.
        port: Port on 127.0.0.1; 0 picks a free one.
    """

    def __init__(
        self,
        *replies: Reply,
        default: Reply | None = None,
        model: str = "scripted-model",
        embedding_dim: int = 16,
        port: int = 0,
    ) -> None:
        self.port = port
        self.default = default
        self.model = model
        self.embedding_dim = embedding_dim
        self._chat: deque[Reply] = deque(replies)
        self._embeddings: deque[Reply] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- scripting -------------------------------------------------------------------------

    def enqueue(self, *replies: Reply) -> None:
        """Append chat replies to the script."""
        with self._lock:
            self._chat.extend(replies)

    def enqueue_embeddings(self, *replies: Reply) -> None:
        """Script the next embedding requests (errors, delays, raw text); then vectors again."""
        with self._lock:
            self._embeddings.extend(replies)

    @property
    def pending(self) -> int:
        """Chat replies not served yet."""
        with self._lock:
            return len(self._chat)

    # -- inspection ------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received so far, oldest first (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The chat completion requests received so far."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    @property
    def embedding_requests(self) -> list[RecordedRequest]:
        """The embedding requests received so far."""
        return [r for r in self.requests if r.path.endswith("/embeddings")]

    @property
    def last_messages(self) -> list[dict[str, Any]]:
        """The messages of the latest chat request; raises ``LookupError`` if there was none."""
        chats = self.chat_requests
        if not chats:
            raise LookupError("ScriptedOpenAIServer has received no chat request yet")
        return chats[-1].messages

    def reset(self) -> None:
        """Forget the script and the recorded requests."""
        with self._lock:
            self._chat.clear()
            self._embeddings.clear()
            self._requests.clear()

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, for ``base_url=`` of OpenAI clients."""
        if self._httpd is None:
            raise RuntimeError("ScriptedOpenAIServer is not started; call start() or use `with`")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> Self:
        """Bind the port on 127.0.0.1 (a free one by default) and serve from a daemon thread."""
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = _HTTPServer(("127.0.0.1", self.port), _Handler)
            self._httpd.owner = self
            self._thread = threading.Thread(
                target=self._httpd.serve_forever,
                kwargs={"poll_interval": 0.05},
                name="ScriptedOpenAIServer",
                daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; delayed replies in progress are cut short."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- serving (runs in handler threads) -------------------------------------------------

    def _handle(self, handler: _Handler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        payload = _json_or_none(body)
        path = urlsplit(handler.path).path
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self._lock:
            self._requests.append(RecordedRequest(method, path, headers, payload))
        route = (method, path.removeprefix("/v1"))
        try:
            if route == ("GET", "/models"):
                models = [
                    {"id": name, "object": "model", "owned_by": "memhub"}
                    for name in (self.model, "scripted-embedding")
                ]
                _send_json(handler, 200, {"object": "list", "data": models})
            elif route in {("POST", "/chat/completions"), ("POST", "/embeddings")}:
                self._route_post(handler, route[1], payload)
            else:
                _send_error(handler, HTTPErrorReply(404, f"no route for {method} {path}"))
        except (BrokenPipeError, ConnectionResetError):
            log.debug("client left before the answer to %s %s", method, path)

    def _route_post(self, handler: _Handler, route: str, payload: Any) -> None:
        if not isinstance(payload, dict):
            _send_error(handler, HTTPErrorReply(400, "the request body is not a JSON object"))
        elif route == "/chat/completions":
            self._serve(handler, payload, self._chat, self._chat_answer)
        else:
            self._serve(handler, payload, self._embeddings, self._embedding_answer)

    def _serve(
        self,
        handler: _Handler,
        request: dict[str, Any],
        queue: deque[Reply],
        answer: Callable[[_Handler, dict[str, Any], Reply | None], None],
    ) -> None:
        # An empty chat script means the default reply; an empty embedding script, vectors.
        is_chat = queue is self._chat
        with self._lock:
            first: Reply | None = queue.popleft() if queue else None
        try:
            reply = self._resolve(first, request, is_chat)
        except Exception as exc:  # the edge of a test's callable: answer so the test sees why
            log.exception("a scripted reply failed")
            reply = _fatal(f"the scripted reply raised {exc!r}")
        if isinstance(reply, HTTPErrorReply):
            _send_error(handler, reply)
        elif isinstance(reply, RawReply):
            _send(handler, reply.status, reply.text.encode(), reply.content_type)
        else:
            answer(handler, request, reply)

    def _resolve(self, reply: Reply | None, request: dict[str, Any], is_chat: bool) -> Reply | None:
        for _ in range(100):  # callables may return callables or delays; stop at some point
            if reply is None and is_chat:
                reply = self._default_reply()
            if isinstance(reply, DelayedReply):
                self._stopping.wait(reply.seconds)
                reply = reply.reply
            elif callable(reply):
                reply = reply(request)
            else:
                break
        if is_chat and not isinstance(reply, str | Mapping | HTTPErrorReply | RawReply):
            return _fatal(f"not a chat reply: {reply!r}")
        return reply

    def _default_reply(self) -> Reply:
        if self.default is not None:
            return self.default
        message = (
            "ScriptedOpenAIServer has no scripted reply left for POST /v1/chat/completions; "
            "enqueue more replies or pass default=..."
        )
        return _fatal(message)

    def _chat_answer(self, handler: _Handler, request: dict[str, Any], reply: Reply | None) -> None:
        assert reply is None or isinstance(reply, str | Mapping)  # checked by _resolve
        number = next(self._ids)
        message = assistant_message(reply, number)
        model = request.get("model") or self.model
        bodies = chat_bodies(request, message, f"chatcmpl-scripted-{number}", model)
        if not request.get("stream"):
            _send_json(handler, 200, next(bodies))
            return
        handler.send_response(200)
        handler.send_header("Content-Type", "text/event-stream")
        handler.send_header("Cache-Control", "no-cache")
        handler.end_headers()
        for body in bodies:
            handler.wfile.write(b"data: " + json.dumps(body).encode() + b"\n\n")
            handler.wfile.flush()
        handler.wfile.write(b"data: [DONE]\n\n")

    def _embedding_answer(
        self, handler: _Handler, request: dict[str, Any], reply: Reply | None
    ) -> None:
        _send_json(handler, 200, embeddings_body(request, self.embedding_dim))


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    owner: ScriptedOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:
        self.server.owner._handle(self, "GET")

    def do_POST(self) -> None:
        self.server.owner._handle(self, "POST")

    def log_message(self, format: str, *args: Any) -> None:
        log.debug(format, *args)


def _json_or_none(body: bytes) -> Any:
    try:
        return json.loads(body) if body else None
    except ValueError:
        return None


def _send(
    handler: _Handler,
    status: int,
    body: bytes,
    content_type: str,
    headers: Mapping[str, str] | None = None,
) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.end_headers()
    handler.wfile.write(body)


def _send_json(
    handler: _Handler, status: int, payload: Any, headers: Mapping[str, str] | None = None
) -> None:
    _send(handler, status, json.dumps(payload).encode(), "application/json", headers)


def _send_error(handler: _Handler, error: HTTPErrorReply) -> None:
    body = error.body if not isinstance(error.body, str) else error_body(error.body, error.status)
    _send_json(handler, error.status, body, error.headers)


def _fatal(message: str) -> HTTPErrorReply:
    # x-should-retry stops the openai SDK from retrying a broken script three times.
    return HTTPErrorReply(500, message, {"x-should-retry": "false"})


if __name__ == "__main__":  # python -m memhub.testing.openai_server --port N --script FILE
    from memhub.testing._serve import main

    raise SystemExit(main())
