"""HTTP's edges against a real ``memhub serve`` (and ``memhub mcp --http``), byte by byte over a raw socket: requests
uvicorn's parser refuses, a WebSocket upgrade, ``Expect: 100-continue`` with a body over the
limit, and a method a path does not take. Each is answered with memhub's JSON error body and
the status docs/api.md's error table gives it, never uvicorn's plain text."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.ops.procs import (
    ADMIN_KEY,
    free_port,
    memhub_env,
    private_home,
    spawned,
    start,
    start_server,
    stop,
)

AUTH = f"Authorization: Bearer {ADMIN_KEY}\r\n".encode()


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int]]:
    """One ``memhub serve`` for the module (each case is a connection of its own)."""
    home = private_home()
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off")
    proc, url = start_server(env, home / "serve.log")
    spawned.remove(proc)  # the module's, not one test's: stopped here, not after each test
    try:
        address = urlsplit(url)
        assert address.hostname is not None and address.port is not None
        yield address.hostname, address.port
    finally:
        stop(proc, signal.SIGTERM)  # the last process using the embedded server stops it
    log = (home / "serve.log").read_text()
    shutil.rmtree(home, ignore_errors=True)
    assert "Traceback" not in log, log


def _exchange(server: tuple[str, int], request: bytes, *, until_close: bool = True) -> bytes:
    """Send ``request`` and read the answer (until the server closes, or one answer's head)."""
    with socket.create_connection(server, timeout=30) as sock:
        # Answered and closed before all of a huge request was sent: read the answer.
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(request)
        received = b""
        while chunk := _recv(sock):
            received += chunk
            if not until_close and _complete(received):
                break
        return received


def _complete(received: bytes) -> bool:
    head, found, body = received.partition(b"\r\n\r\n")
    length = next(
        (
            line.split(b":")[1]
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        None,
    )
    return bool(found) and length is not None and len(body) >= int(length)


def _recv(sock: socket.socket) -> bytes:
    try:
        return sock.recv(65536)
    except ConnectionResetError:
        return b""


def _json_answer(raw: bytes) -> tuple[int, dict[str, str], dict[str, object]]:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
    assert headers["content-type"] == "application/json", raw[:300]
    return status, headers, json.loads(body[: int(headers["content-length"])])


MALFORMED = {
    "NUL in the path": (b"GET /v1/me\x00x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "invalid UTF-8 in the path": (b"GET /v1/\xff\xfe HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "NUL in the query": (b"GET /v1/me?a=\x00 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "invalid UTF-8 in the query": (b"GET /v1/me?a=\xc3\x28 HTTP/1.1\r\nHost: x\r\n\r\n", 400),
    "NUL in a header": (b"GET /v1/me HTTP/1.1\r\nHost: x\r\nX-A: a\x00b\r\n\r\n", 400),
    "invalid UTF-8 in a header name": (b"GET /v1/me HTTP/1.1\r\nHost: x\r\nX-\xff: a\r\n\r\n", 400),
    "Content-Length: -1": (
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
        400,
    ),
    "two different Content-Length headers": (
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
        400,
    ),
    "conflicting Transfer-Encoding": (
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    "Content-Length and Transfer-Encoding": (
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        400,
    ),
    "a 1 MiB URL": (b"GET /v1/me?q=" + b"a" * (1 << 20) + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414),
    "a 1 MB header": (
        b"GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * 1_000_000 + b"\r\n\r\n",
        431,
    ),
}


def _listens(pid: int, port: int) -> bool:
    """True once process ``pid`` holds a socket listening on ``port`` (Linux /proc)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{fields[9]}]")
    with contextlib.suppress(OSError):
        fds = Path(f"/proc/{pid}/fd")
        return any(os.readlink(fd) in inodes for fd in fds.iterdir())
    return False


@pytest.fixture(scope="module")
def mcp_server() -> Iterator[tuple[str, int]]:
    """One ``memhub mcp --http`` for the module: the same protocol handling as ``serve``."""
    home = private_home()
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off")
    port = free_port()
    proc = start(["mcp", "--http", "--port", str(port)], env, home / "mcp.log")
    spawned.remove(proc)
    try:
        deadline = time.monotonic() + 120
        while not _listens(
            proc.pid, port
        ):  # its own socket: not another process's on a reused port
            assert proc.poll() is None, (home / "mcp.log").read_text()
            assert time.monotonic() < deadline, (home / "mcp.log").read_text()
            time.sleep(0.1)
        yield "127.0.0.1", port
    finally:
        stop(proc, signal.SIGTERM)
    log = (home / "mcp.log").read_text()
    shutil.rmtree(home, ignore_errors=True)
    assert "Traceback" not in log, log


@pytest.mark.parametrize("case", MALFORMED)
def test_what_the_parser_refuses_is_answered_in_json(server: tuple[str, int], case: str) -> None:
    _refused_in_json(server, case)


# Both headers at once pass h11 (it frames the body by Transfer-Encoding, as RFC 9112 says);
# `serve` refuses them in its application (server/limits.py), which the MCP server is not.
PARSER_REFUSES = [case for case in MALFORMED if case != "Content-Length and Transfer-Encoding"]


@pytest.mark.parametrize("case", PARSER_REFUSES)
def test_the_mcp_http_server_answers_what_the_parser_refuses_in_json(
    mcp_server: tuple[str, int], case: str
) -> None:
    _refused_in_json(mcp_server, case)


def _refused_in_json(server: tuple[str, int], case: str) -> None:
    request, expected = MALFORMED[case]
    status, headers, body = _json_answer(_exchange(server, request))
    assert status == expected
    assert (
        body["type"]
        == {400: "BadRequest", 414: "URITooLong", 431: "RequestHeaderFieldsTooLarge"}[expected]
    )
    assert isinstance(body["error"], str) and len(body["error"]) <= 300
    assert headers["connection"] == "close"


def test_a_websocket_upgrade_is_a_json_400(server: tuple[str, int]) -> None:
    request = (
        b"GET /v1/me HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
        + AUTH
        + b"\r\n"
    )
    status, _, body = _json_answer(_exchange(server, request))
    assert status == 400
    assert body["type"] == "BadRequest"
    assert "WebSocket" in str(body["error"])


def test_expect_continue_over_the_limit_gets_413_and_no_100(server: tuple[str, int]) -> None:
    request = (
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: 10000000\r\nExpect: 100-continue\r\n" + AUTH + b"\r\n"
    )
    raw = _exchange(server, request, until_close=False)
    assert not raw.startswith(b"HTTP/1.1 100"), raw[:200]
    status, _, body = _json_answer(raw)
    assert status == 413
    assert body["type"] == "PayloadTooLarge"


def test_expect_continue_within_the_limit_still_gets_100(server: tuple[str, int]) -> None:
    payload = json.dumps({"messages": "hello", "user_id": "u1", "infer": False}).encode()
    head = (
        b"POST /v1/memories HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        b"Content-Length: " + str(len(payload)).encode() + b"\r\nExpect: 100-continue\r\n"
        b"Connection: close\r\n" + AUTH + b"\r\n"
    )
    with socket.create_connection(server, timeout=30) as sock:
        sock.sendall(head)
        assert sock.recv(65536).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(payload)
        raw = b""
        while chunk := _recv(sock):
            raw += chunk
    assert raw.startswith(b"HTTP/1.1 200"), raw[:300]


def test_405_names_every_method_of_the_path(server: tuple[str, int]) -> None:
    request = b"PATCH /v1/memories HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + AUTH + b"\r\n"
    status, headers, body = _json_answer(_exchange(server, request))
    assert status == 405
    assert body["type"] == "MethodNotAllowed"
    assert set(headers["allow"].split(", ")) == {"DELETE", "GET", "POST"}


def test_the_connection_is_served_after_a_well_formed_request(server: tuple[str, int]) -> None:
    """A control: the same socket code reads a normal answer (the cases above are refusals)."""
    request = b"GET /v1/me HTTP/1.1\r\nHost: x\r\nConnection: close\r\n" + AUTH + b"\r\n"
    status, _, body = _json_answer(_exchange(server, request))
    assert status == 200
    assert body["is_admin"] is True


def test_a_header_value_outside_utf8_is_served_in_json(server: tuple[str, int]) -> None:
    """HTTP allows bytes 0x80-0xFF in a header value (obs-text): the request is served, and
    the same bytes in the key itself are an unknown key (401), both in JSON."""
    served = b"GET /v1/me HTTP/1.1\r\nHost: x\r\nX-Note: \xff\xfe\r\nConnection: close\r\n"
    status, _, body = _json_answer(_exchange(server, served + AUTH + b"\r\n"))
    assert (status, body["is_admin"]) == (200, True)
    bad_key = b"Authorization: Bearer mhk_\xff\xfe\r\n"
    status, _, body = _json_answer(_exchange(server, served + bad_key + b"\r\n"))
    assert (status, body["type"]) == (401, "Unauthorized")
