"""A script that never calls ``close()`` (as Mem0's quickstart never does) exits cleanly.

Real processes (``bench/exit_runs.py``'s scripts) on the test's real PostgreSQL: stderr stays
empty, the turns they added are embedded, and no job is left leased by the dead process.
``python -m bench.exit_runs`` runs them 20 times each, quiet and under load.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import psycopg
import pytest
from bench.exit_runs import inspect, run_script


@pytest.mark.parametrize(("kind", "attempt"), [("sync", 0), ("sync", 1), ("async", 0)])
def test_a_script_that_never_closes_exits_quietly_and_strands_nothing(
    db_url: str, kind: str, attempt: int
) -> None:
    # Generous bounds: this machine may be loaded; what is checked is that the exit finishes
    # the work and says nothing, not how fast.
    env = {
        "MEMHUB_DATABASE_URL": db_url,
        "MEMHUB_EXIT_TIMEOUT": "30",
        "MEMHUB_SEARCH_WAIT_TIMEOUT": "30",
    }
    outcome = run_script(kind, env, f"{kind}-{attempt}", adds=30)
    assert outcome.returncode == 0 and outcome.stderr == "", outcome.stderr
    first, found = outcome.stdout.splitlines()
    assert first and int(found) > 0  # the memory was there, and found, before the exit
    stored = inspect(db_url, f"{kind}-{attempt}")
    # sync: 3 of the quickstart's 4 messages (not the system prompt) and 30 notes
    assert stored.memories == (33 if kind == "sync" else 31)
    assert stored.embedded == stored.memories  # finished before exiting
    assert (stored.queued_jobs, stored.leased_jobs) == (0, 0)


class _Proxy:
    """A TCP port forwarding to PostgreSQL's socket, which the test can take down: the
    database becomes unreachable for the client while the real server keeps running (it is
    the session's, shared by every test)."""

    def __init__(self, unix_path: str) -> None:
        self.unix_path = unix_path
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX)
            server.connect(self.unix_path)
            self.sockets += [client, server]
            for a, b in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)

    def down(self) -> None:
        self.listener.close()
        for s in self.sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def proxied(db_url: str) -> Iterator[tuple[str, _Proxy]]:
    parts = urlsplit(db_url)
    query = parse_qs(parts.query)
    unix = f"{query['host'][0]}/.s.PGSQL.{query.get('port', ['5432'])[0]}"
    proxy = _Proxy(unix)
    yield f"postgresql://postgres@127.0.0.1:{proxy.port}{parts.path}", proxy
    proxy.down()


DOWN_SCRIPT = """
import sys
from memhub import Memory

memory = Memory()
for n in range(20):
    memory.add(f"note {n}: the database goes down before I exit", user_id="down")
if sys.argv[1] == "thread":  # its worker is done (the search waits for that) and idle
    memory.search("note", user_id="down")
print("ready", flush=True)
sys.stdin.readline()
"""


@pytest.mark.parametrize("worker", ["thread", "off"])
def test_an_exit_while_the_database_is_down_says_so_once_and_loses_nothing(
    db_url: str, proxied: tuple[str, _Proxy], worker: str
) -> None:
    url, proxy = proxied
    env = {
        **os.environ,
        "MEMHUB_DATABASE_URL": url,
        "MEMHUB_WORKER": worker,
        "MEMHUB_WORKER_POLL_INTERVAL": "60",  # no idle poll logs the outage before the exit
        "MEMHUB_CONNECT_TIMEOUT": "1",
        "MEMHUB_SEARCH_WAIT_TIMEOUT": "60",
    }
    child = subprocess.Popen(
        [sys.executable, "-c", DOWN_SCRIPT, worker],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "ready"
    proxy.down()
    _, stderr = child.communicate("\n", timeout=60)
    assert child.returncode == 0
    # The thread worker may still be making the claim after its last batch (the search
    # waits for the batch, not for that claim) when the proxy goes down: it then says it is
    # retrying, as a worker that loses its database does. Anything else is the exit's.
    retrying = "worker: database unavailable, retrying"
    lines = [line for line in stderr.splitlines() if retrying not in line]
    assert "Traceback" not in stderr and len(lines) <= 1, stderr
    if worker == "thread":  # it had to ask the database what was left: it says so
        assert len(lines) == 1 and "database was unreachable" in lines[0], stderr
    else:
        assert retrying not in stderr, stderr  # no worker ran
    with psycopg.connect(db_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT (SELECT count(*) FROM conversation_context WHERE user_id = 'down'),"
            " (SELECT count(*) FROM memories WHERE user_id = 'down'),"
            " (SELECT count(*) FROM memory_jobs WHERE user_id = 'down'),"
            " (SELECT count(lease_owner) FROM memory_jobs WHERE user_id = 'down')"
        ).fetchone()
    assert row is not None
    turns, memories, jobs, leased = row
    assert (turns, memories, leased) == (20, 20, 0)  # every add is there; no lease stranded
    assert jobs == (20 if worker == "off" else 0)  # queued jobs stay queued for the next
