"""The embedded PostgreSQL's lifecycle under real ``memhub serve`` processes: killed, stopped
with SIGTERM and SIGINT, its postmaster killed under load, and ``memhub db``."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from tests.ops.procs import (
    ADMIN_KEY,
    MEMHUB,
    memhub_env,
    pid_alive,
    postmaster_pid,
    start_server,
    stop,
    wait_gone,
)

AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}


def test_sigkill_of_serve_then_clean_stops_leave_no_postgres(home: Path, tmp_path: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off")
    pgdata = home / "pg"
    log = tmp_path / "serve.log"

    for sig in (signal.SIGTERM, signal.SIGINT):
        killed, _ = start_server(env, log)
        postmaster = postmaster_pid(pgdata)
        assert postmaster is not None and pid_alive(postmaster)
        killed.kill()
        killed.wait(timeout=30)
        assert pid_alive(postmaster), "a SIGKILLed owner leaves the server to the next process"

        server, _ = start_server(env, log)
        handles = json.loads((pgdata / ".handle_pids.json").read_text())
        assert handles == [server.pid], "the dead PID was not pruned from the handle file"
        assert postmaster_pid(pgdata) == postmaster, "it attached to the running server"
        status = stop(server, sig)
        assert status in (128 + sig, 130, 0), log.read_text()
        assert wait_gone(postmaster), f"PostgreSQL still runs after {sig.name} of serve"
        assert postmaster_pid(pgdata) is None
    assert "Traceback" not in log.read_text()


def _load(
    url: str, stop_at: threading.Event, killed: threading.Event, results: list[tuple[bool, int]]
) -> None:
    """Add and list until ``stop_at``: (started after the kill, worst status; 0 no answer)."""
    with httpx.Client(base_url=url, headers=AUTH, timeout=15) as client:
        n = 0
        while not stop_at.is_set():
            n += 1
            after_kill = killed.is_set()
            try:
                response = client.post(
                    "/v1/memories",
                    json={"messages": f"turn {n}", "user_id": "load", "infer": False},
                )
                listed = client.get("/v1/memories", params={"user_id": "load"})
                results.append((after_kill, max(response.status_code, listed.status_code)))
            except httpx.HTTPError:
                results.append((after_kill, 0))
            time.sleep(0.02)


def _wait_for(condition: Callable[[], bool], what: str, log: Path, timeout: float = 120) -> None:
    """Poll until ``condition``; fail only after ``timeout`` s (a deadline, not a bound)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"{what}; serve's log:\n{log.read_text()}"
        time.sleep(0.1)


def test_postmaster_killed_under_load_serves_again(home: Path, tmp_path: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off")
    pgdata = home / "pg"
    log = tmp_path / "serve.log"
    server, url = start_server(env, log)
    results: list[tuple[bool, int]] = []
    done, killed = threading.Event(), threading.Event()
    loaders = [threading.Thread(target=_load, args=(url, done, killed, results)) for _ in range(2)]
    try:
        for loader in loaders:
            loader.start()
        _wait_for(lambda: (False, 200) in results, "no answer before the kill", log)
        old = postmaster_pid(pgdata)
        assert old is not None
        subprocess.run(["kill", "-KILL", str(old)], check=True)
        killed.set()  # requests started from here on began after the kill
        _wait_for(lambda: (True, 200) in results, "never served again", log)
    finally:
        done.set()
        for loader in loaders:
            loader.join(timeout=30)
    new = postmaster_pid(pgdata)
    assert new is not None and new != old and pid_alive(new)
    assert "stopped; restarting it" in log.read_text()
    codes = {code for _, code in results}
    assert codes <= {200, 503}, f"only 200 or 503 while it was down, got {codes}"
    stop(server, signal.SIGTERM)
    assert wait_gone(new), "the restarted server outlived the SIGTERM of serve"


def test_db_commands(home: Path, tmp_path: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home))

    def db(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MEMHUB, "db", *args], env=env, capture_output=True, text=True, timeout=120
        )

    assert db("status").returncode == 3
    assert db("url").returncode == 3
    started = db("start")
    assert started.returncode == 0, started.stderr
    assert "running (pid" in started.stdout
    url = db("url").stdout.strip()
    status = json.loads(db("status", "--json").stdout)
    assert status["running"] and status["pinned"], "db start keeps it running after exiting"
    import psycopg

    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT current_database()").fetchone() == ("memhub",)
    stopped = db("stop")
    assert stopped.returncode == 0 and "stopped" in stopped.stdout
    assert not pid_alive(status["pid"])
    assert db("status").returncode == 3


def test_db_stop_is_not_healed_and_db_start_outlives_serve(home: Path, tmp_path: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off")
    log = tmp_path / "serve.log"

    def db(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*MEMHUB, "db", *args], env=env, capture_output=True, text=True, timeout=120
        )

    server, url = start_server(env, log)
    assert db("stop").returncode == 0
    time.sleep(3)  # the server's watchdog looks every 0.5 s
    assert db("status").returncode == 3, "a server stopped on purpose was restarted"
    assert log.read_text().count("was stopped; not restarting") == 1
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 503

    assert db("start").returncode == 0  # pinned: no process exit stops it now
    postmaster = postmaster_pid(home / "pg")
    assert postmaster is not None
    # The watch sees the new postmaster and swaps in a fresh pool (no reconnection back-off):
    # it says so in serve's log, then /healthz answers.
    _wait_for(lambda: f"runs again (pid {postmaster})" in log.read_text(), "no new pool", log)
    _wait_for(lambda: httpx.get(f"{url}/healthz", timeout=10).status_code == 200, "no 200", log)
    stop(server, signal.SIGTERM)
    assert pid_alive(postmaster), "db start keeps it running after serve exits"
    assert db("stop").returncode == 0
    assert wait_gone(postmaster)
