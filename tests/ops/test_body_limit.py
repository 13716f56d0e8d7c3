"""A body over ``MEMHUB_MAX_BODY_BYTES`` sent to a real ``memhub serve``: Python's own HTTP
clients receive the 413 (the server reads and drops the rest of the body before answering)
instead of a connection reset."""

from __future__ import annotations

import json
import signal
import urllib.error
import urllib.request
from pathlib import Path

import httpx
import requests

from tests.ops.procs import ADMIN_KEY, memhub_env, start_server, stop

AUTH = {"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "application/json"}
BODY = b'{"messages": "' + b"x" * (5 * 1024 * 1024) + b'", "user_id": "u"}'  # 5 MB


def _is_413(status: int, body: bytes) -> None:
    assert status == 413
    assert json.loads(body)["type"] == "PayloadTooLarge"


def test_urllib_requests_and_httpx_receive_the_413(home: Path, tmp_path: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off")
    server, url = start_server(env, tmp_path / "serve.log")
    target = f"{url}/v1/memories"
    try:
        urllib.request.urlopen(urllib.request.Request(target, BODY, AUTH), timeout=30)
        raise AssertionError("urllib: no error")
    except urllib.error.HTTPError as exc:
        _is_413(exc.code, exc.read())
    answer = requests.post(target, data=BODY, headers=AUTH, timeout=30)
    _is_413(answer.status_code, answer.content)
    answer2 = httpx.post(target, content=BODY, headers=AUTH, timeout=30)
    _is_413(answer2.status_code, answer2.content)

    def chunks():  # no Content-Length: refused once past the bound while it streams
        for _ in range(5):
            yield b" " * (1024 * 1024)

    streamed = httpx.post(target, content=chunks(), headers=AUTH, timeout=30)
    _is_413(streamed.status_code, streamed.content)
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200
    stop(server, signal.SIGTERM)
