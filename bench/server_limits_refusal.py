"""What one refused request costs the server: CPU per 429, measured from the outside.

Run with the dev install: ``python -m bench.server_limits_refusal`` (starts ``memhub serve``
on an embedded PostgreSQL of its own in a temporary directory, or on ``MEMHUB_DATABASE_URL``,
as ``bench.server_limits`` does). One client process sends ``--requests N`` (default 20,000)
requests with a tenant key past its quota over ``--connections C`` (default 4) keep-alive
connections, each request written only after the previous answer on its connection was read,
and the script reads the server's CPU time (user + system, /proc) before and after. The client
is raw sockets, not httpx, so that it stays cheap beside the server it measures. Refusals are
not held (``MEMHUB_FLOOD_HOLD_SECONDS=0``): this is the cost of each one.
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import time
from pathlib import Path

import httpx

from bench.server_limits import ADMIN, served


def _cpu(pid: int) -> tuple[float, float]:
    """The process's user and system CPU seconds so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def _request(port: int, key: str) -> bytes:
    # A search with a body: what a flooding client sends; the gate must refuse it unread.
    body = b'{"query": "where does the user live", "user_id": "u", "limit": 5}'
    return (
        b"POST /v1/memories/search HTTP/1.1\r\n"
        + f"Host: 127.0.0.1:{port}\r\n".encode()
        + f"Authorization: Bearer {key}\r\n".encode()
        + b"Content-Type: application/json\r\n"
        + f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )


def _answers(buffer: bytearray) -> tuple[int, list[int]]:
    """How many complete responses ``buffer`` holds (removed from it) and their statuses."""
    statuses = []
    while True:
        end = buffer.find(b"\r\n\r\n")
        if end < 0:
            return len(statuses), statuses
        head = bytes(buffer[:end]).lower()
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name == b"content-length":
                length = int(value)
        if len(buffer) < end + 4 + length:
            return len(statuses), statuses
        statuses.append(int(head[9:12]))
        del buffer[: end + 4 + length]


def flood(port: int, key: str, requests: int, connections: int) -> dict[int, int]:
    """Send ``requests`` requests over ``connections`` connections, one at a time on each."""
    raw = _request(port, key)
    selector = selectors.DefaultSelector()
    buffers: dict[socket.socket, bytearray] = {}
    sent = 0
    for _ in range(connections):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        selector.register(sock, selectors.EVENT_READ)
        buffers[sock] = bytearray()
        sock.sendall(raw)
        sent += 1
    statuses: dict[int, int] = {}
    answered = 0
    while answered < requests:
        for event, _ in selector.select():
            sock = event.fileobj
            assert isinstance(sock, socket.socket)
            chunk = sock.recv(65536)
            if not chunk:  # closed by the server: open another connection
                selector.unregister(sock)
                del buffers[sock]
                sock.close()
                sock = socket.create_connection(("127.0.0.1", port))
                selector.register(sock, selectors.EVENT_READ)
                buffers[sock] = bytearray()
                sock.sendall(raw)
                sent += 1
                continue
            buffers[sock] += chunk
            count, got = _answers(buffers[sock])
            answered += count
            for status in got:
                statuses[status] = statuses.get(status, 0) + 1
            if count and sent < requests:
                sock.sendall(raw)
                sent += 1
    for sock in buffers:
        sock.close()
    return statuses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--profile", metavar="FILE", help="run the server under cProfile")
    args = parser.parse_args()
    # One request, then none: every measured request is refused, none held (the cost of one
    # refusal, not how a flood is slowed).
    quota = {
        "MEMHUB_RATE_LIMIT": "0.001",
        "MEMHUB_RATE_BURST": "1",
        "MEMHUB_FLOOD_HOLD_SECONDS": "0",
    }
    profile = ("-m", "cProfile", "-o", args.profile) if args.profile else ()
    with served(quota, profile) as (process, base):
        port = int(base.rsplit(":", 1)[1])
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=120
        ) as admin:
            key = admin.post("/v1/keys", json={"name": "a", "tenant": "a"}).json()["key"]
        flood(port, key, 200, args.connections)  # the key cached, its bucket empty
        user, system = _cpu(process.pid)
        started = time.monotonic()
        statuses = flood(port, key, args.requests, args.connections)
        elapsed = time.monotonic() - started
        now_user, now_system = _cpu(process.pid)
        user, system = now_user - user, now_system - system
        cpu = user + system
        each = 1e6 / args.requests
        print(f"statuses: {statuses}")
        print(
            f"server CPU per request: {cpu * each:.0f} µs "
            f"(user {user * each:.0f}, system {system * each:.0f}) "
            f"({args.requests / elapsed:.0f} requests/s, server at {cpu / elapsed:.0%} "
            f"of a core, load average {os.getloadavg()[0]:.2f})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
