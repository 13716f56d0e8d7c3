"""A scripted OpenAI-compatible embeddings server on 127.0.0.1 for the OpenAIEmbedder tests.

It stands in for a real embedding server (OpenAI, vLLM, Ollama, TEI) because none can run
here: real HTTP through the real openai SDK, with answers the test scripts.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest

DIMENSION = 8


def fake_vector(text: str, dimension: int = DIMENSION) -> list[float]:
    """A deterministic vector for a text, deliberately not of unit length."""
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    values = np.random.default_rng(seed).normal(size=dimension) * 3.0
    return [float(x) for x in values]


@dataclass
class Reply:
    """One scripted answer: a status, a body (dict as JSON, or raw text) and headers."""

    status: int = 200
    body: dict[str, Any] | str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class ScriptedEmbeddingServer:
    """Answers POST /v1/embeddings; scripted replies first, then deterministic vectors."""

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.dimension = DIMENSION
        self.reverse_order = False
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        # Daemon handler threads: stop() does not wait for a reply the test made slow.
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def script(
        self,
        status: int = 200,
        body: dict[str, Any] | str | None = None,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Queue one reply; queued replies go out in order, then default answers resume."""
        with self._lock:
            self._script.append(Reply(status, body, headers or {}, delay))

    def expected_vector(self, text: str) -> list[float]:
        """The raw (not normalised) vector the default answer gives for a text."""
        return fake_vector(text, self.dimension)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def reply_for(self, recorded: Recorded) -> Reply:
        with self._lock:
            self.requests.append(recorded)
            if self._script:
                return self._script.pop(0)
        return Reply(body=self.default_body(recorded.body))

    def default_body(self, request: dict[str, Any]) -> dict[str, Any]:
        texts = request["input"]
        data = [
            {"object": "embedding", "index": i, "embedding": fake_vector(t, self.dimension)}
            for i, t in enumerate(texts)
        ]
        if self.reverse_order:
            data.reverse()
        return {"object": "list", "data": data, "model": request["model"], "usage": None}

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                headers = {name.lower(): value for name, value in self.headers.items()}
                recorded = Recorded(self.path, headers, body)
                reply = server.reply_for(recorded)
                if reply.delay:
                    threading.Event().wait(reply.delay)
                raw = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
                payload = raw.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest's output clean

        return Handler


@pytest.fixture
def embedding_server() -> Iterator[ScriptedEmbeddingServer]:
    server = ScriptedEmbeddingServer()
    server.start()
    yield server
    server.stop()
