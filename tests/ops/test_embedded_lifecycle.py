"""The embedded PostgreSQL's lifecycle under real ``memhub serve`` processes: killed, stopped
with SIGTERM and SIGINT, its postmaster killed under load, and ``memhub db``."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
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


def _load(url: str, stop_at: threading.Event, results: list[tuple[float, int]]) -> None:
    with httpx.Client(base_url=url, headers=AUTH, timeout=15) as client:
        n = 0
        while not stop_at.is_set():
            n += 1
            try:
                response = client.post(
                    "/v1/memories",
                    json={"messages": f"turn {n}", "user_id": "load", "infer": False},
                )
                listed = client.get("/v1/memories", params={"user_id": "load"})
                results.append((time.monotonic(), max(response.status_code, listed.status_code)))
            except httpx.HTTPError:
                results.append((time.monotonic(), 0))
            time.sleep(0.02)


def test_postmaster_killed_under_load_serves_again_within_10_s(home: Path, tmp_path: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off")
    pgdata = home / "pg"
    log = tmp_path / "serve.log"
    server, url = start_server(env, log)
    results: list[tuple[float, int]] = []
    done = threading.Event()
    loaders = [threading.Thread(target=_load, args=(url, done, results)) for _ in range(2)]
    try:
        for loader in loaders:
            loader.start()
        time.sleep(1.5)
        old = postmaster_pid(pgdata)
        assert old is not None
        killed_at = time.monotonic()
        subprocess.run(["kill", "-KILL", str(old)], check=True)
        deadline = killed_at + 10
        while time.monotonic() < deadline:
            if any(at > killed_at + 0.5 and code == 200 for at, code in results[-4:]):
                break
            time.sleep(0.1)
        healed_after = time.monotonic() - killed_at
    finally:
        done.set()
        for loader in loaders:
            loader.join(timeout=30)
    print(f"serving again {healed_after:.1f} s after the postmaster was killed")
    assert healed_after < 10, (
        f"still failing {healed_after:.1f} s after the kill:\n{log.read_text()}"
    )
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
    started = time.monotonic()
    # The watch sees the new postmaster and swaps in a fresh pool: no reconnection back-off.
    while httpx.get(f"{url}/healthz", timeout=10).status_code != 200:
        assert time.monotonic() - started < 2, f"serve did not reconnect within 2 s:\n{log}"
        time.sleep(0.1)
    print(f"serving again {time.monotonic() - started:.2f} s after db start")
    postmaster = postmaster_pid(home / "pg")
    assert postmaster is not None
    stop(server, signal.SIGTERM)
    assert pid_alive(postmaster), "db start keeps it running after serve exits"
    assert db("stop").returncode == 0
    assert wait_gone(postmaster)
