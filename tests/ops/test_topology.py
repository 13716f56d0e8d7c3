"""Scale-out as deployed: one PostgreSQL over TCP, two ``memhub serve`` and two
``memhub worker`` processes, a bounded load through both servers, one worker killed mid-run."""

from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import psycopg

from tests.ops.procs import ADMIN_KEY, TcpPostgres, memhub_env, start, start_server, stop

USERS = 8
TURNS_PER_USER = 30  # 240 acknowledged adds in all
AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}

# Test instrumentation, not memhub's: which worker process embedded each memory (add()
# writes the row, a worker fills in its vector). Every process names itself through libpq's
# PGAPPNAME.
AUDIT = """
CREATE TABLE ops_test_audit (memory_id uuid, app text);
CREATE FUNCTION ops_test_audit() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ops_test_audit VALUES (NEW.id, current_setting('application_name'));
    RETURN NEW;
END $$;
CREATE TRIGGER ops_test_audit AFTER INSERT OR UPDATE OF embedding ON memories
    FOR EACH ROW WHEN (NEW.embedding IS NOT NULL) EXECUTE FUNCTION ops_test_audit();
"""


def _text(user: int, n: int) -> str:
    return f"user {user} noted fact number {n}: the {n}th parcel goes to depot {user * 100 + n}"


def _load(urls: list[str], adds: list[tuple[int, int]], acked: list[tuple[str, str]]) -> None:
    """``adds`` (user, n) in order, alternating between the servers, ~20 per second."""
    clients = [httpx.Client(base_url=url, headers=AUTH, timeout=30) for url in urls]
    try:
        for user, n in adds:
            body = {"messages": _text(user, n), "user_id": f"u{user}", "infer": False}
            response = clients[(n + user) % len(clients)].post("/v1/memories", json=body)
            assert response.status_code == 200, response.text
            acked.append((f"u{user}", _text(user, n)))
            time.sleep(0.05)
    finally:
        for client in clients:
            client.close()


def _run_load(urls: list[str], turns: range, acked: list[tuple[str, str]]) -> None:
    """Turns ``turns`` of every user through 4 client threads; returns when all are acked."""
    adds = [(user, n) for n in turns for user in range(USERS)]
    threads = [threading.Thread(target=_load, args=(urls, adds[k::4], acked)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)


def _drained(url: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    with psycopg.connect(url) as conn:
        while time.monotonic() < deadline:
            if conn.execute("SELECT count(*) FROM memory_jobs").fetchone() == (0,):
                return True
            time.sleep(0.5)
    return False


def _inserted_by(url: str, app: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    with psycopg.connect(url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            if conn.execute("SELECT 1 FROM ops_test_audit WHERE app = %s", (app,)).fetchone():
                return True
            time.sleep(0.05)
    return False


def test_two_servers_two_workers_one_killed(tcp_postgres: TcpPostgres, tmp_path: Path) -> None:
    url = tcp_postgres.create_database()
    log = tmp_path / "processes.log"

    def env(app: str) -> dict[str, str]:
        # Small batches spread the work over the workers instead of one taking it all.
        return memhub_env(
            MEMHUB_DATABASE_URL=url,
            MEMHUB_WORKER="off",
            MEMHUB_WORKER_BATCH_SIZE="4",
            MEMHUB_JOB_LEASE_SECONDS="5",  # the killed worker's jobs come back after this
            PGAPPNAME=app,
        )

    server_a, url_a = start_server(env("serve-a"), log)  # migrates the database
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(AUDIT)
    server_b, url_b = start_server(env("serve-b"), log)
    servers = [url_a, url_b]
    workers = {app: start(["-v", "worker"], env(app), log) for app in ("worker-a", "worker-b")}

    acked: list[tuple[str, str]] = []
    third = TURNS_PER_USER // 3
    _run_load(servers, range(third), acked)
    for app in workers:
        assert _inserted_by(url, app, timeout=600), f"{app} never worked:\n{log.read_text()}"

    # Mid-run: worker-b dies (its claimed batch rolls back) while adds keep coming.
    second = threading.Thread(target=_run_load, args=(servers, range(third, 2 * third), acked))
    second.start()
    time.sleep(0.5)
    workers["worker-b"].kill()
    workers["worker-b"].wait(timeout=30)
    workers["worker-b2"] = start(["-v", "worker"], env("worker-b2"), log)
    second.join(timeout=300)
    # The last third with worker-a stopped (SIGSTOP: its leases expire as a hung process's
    # would), so the replacement must take it; on a loaded machine worker-a used to drain
    # everything before worker-b2 had started, and worker-b2 was never seen working.
    workers["worker-a"].send_signal(signal.SIGSTOP)
    _run_load(servers, range(2 * third, TURNS_PER_USER), acked)
    assert _inserted_by(url, "worker-b2", timeout=600), (
        f"worker-b2 never worked:\n{log.read_text()}"
    )
    workers["worker-a"].send_signal(signal.SIGCONT)

    assert len(acked) == USERS * TURNS_PER_USER
    assert _drained(url, timeout=180), f"jobs left unprocessed:\n{log.read_text()[-3000:]}"

    with psycopg.connect(url) as conn:
        stored = Counter(
            (str(user), str(text))
            for user, text in conn.execute("SELECT user_id, memory FROM memories").fetchall()
        )
        by_app = dict(
            conn.execute("SELECT app, count(*) FROM ops_test_audit GROUP BY app").fetchall()
        )
    print(f"memories embedded per worker process: {by_app}")
    assert set(stored) == set(acked), "lost or unexpected memories"
    assert max(stored.values()) == 1, "duplicated memories"
    assert by_app.get("worker-a", 0) > 0, by_app
    assert by_app.get("worker-b", 0) > 0 and by_app.get("worker-b2", 0) > 0, by_app
    assert set(by_app) <= {"worker-a", "worker-b", "worker-b2"}, by_app

    with httpx.Client(headers=AUTH, timeout=60) as client:
        for user in range(0, USERS, 3):
            query = {"query": f"parcel depot {user * 100 + 7}", "user_id": f"u{user}", "limit": 5}
            found = [
                client.post(f"{server}/v1/memories/search", json=query).json()["results"]
                for server in (url_a, url_b)
            ]
            assert [hit["id"] for hit in found[0]] == [hit["id"] for hit in found[1]]
            listed = [
                client.get(f"{server}/v1/memories", params={"user_id": f"u{user}"}).json()
                for server in (url_a, url_b)
            ]
            assert listed[0] == listed[1]
            assert len(listed[0]["results"]) == TURNS_PER_USER

    for proc in (server_a, server_b, *workers.values()):
        if proc.poll() is None:
            stop(proc, signal.SIGTERM)
