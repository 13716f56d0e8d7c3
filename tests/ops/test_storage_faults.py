"""A storage fault under a real ``memhub serve`` on its embedded PostgreSQL: the files of the
table every add writes become unreadable to the database server's OS user (a permission
change, as an operator's mistake or a bad restore would make). Adds answer JSON 503 with
``Retry-After``, never a 500; ``/healthz`` says ``degraded`` while writes fail and ``ok``
once the permission is back and a write succeeded."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import httpx
import psycopg

from tests.ops.procs import ADMIN_KEY, MEMHUB, memhub_env, start_server, stop

AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}


def _add(client: httpx.Client, text: str) -> httpx.Response:
    body = {"messages": text, "user_id": "alice", "infer": False}
    return client.post("/v1/memories", json=body)


def _table_files(url: str, table: str) -> list[Path]:
    with psycopg.connect(url, autocommit=True) as conn:
        data_directory = conn.execute("SHOW data_directory").fetchone()
        relation = conn.execute("SELECT pg_relation_filepath(%s::regclass)", (table,)).fetchone()
    assert data_directory is not None and relation is not None
    main = Path(str(data_directory[0])) / str(relation[0])
    return sorted(main.parent.glob(f"{main.name}*"))  # the relation's forks and segments


def _new_sessions_only(url: str) -> None:
    """End the server's sessions: a session keeps the files it opened, a new one opens them."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def test_a_permission_fault_is_503_and_healthz_degraded(home: Path, tmp_path: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off")
    server, base = start_server(env, tmp_path / "serve.log")
    url = subprocess.run(
        [*MEMHUB, "db", "url"], env=env, capture_output=True, text=True, timeout=120, check=True
    ).stdout.strip()
    with httpx.Client(base_url=base, headers=AUTH, timeout=30) as client:
        assert _add(client, "before the fault").status_code == 200
        files = _table_files(url, "conversation_context")
        modes = {path: path.stat().st_mode for path in files}
        try:
            for path in files:
                path.chmod(0)
            _new_sessions_only(url)
            answers = [_add(client, f"during the fault {n}") for n in range(6)]
            assert {answer.status_code for answer in answers} == {503}, [a.text for a in answers]
            for answer in answers:
                assert answer.json()["type"] == "StoreUnavailable"
                assert answer.headers["Retry-After"] == "5"
            # Reads of other tables go on (the list reads memories, not the turns).
            assert client.get("/v1/memories", params={"user_id": "alice"}).status_code == 200
            health = client.get("/healthz")
            assert health.status_code == 503
            assert health.json() == {"status": "degraded", "database": "writes failing"}
            assert health.headers["Retry-After"] == "5"
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        # The sessions that failed keep no memory of it: the next write opens the files again.
        assert client.get("/healthz").status_code == 503  # no write has succeeded yet
        assert _add(client, "after the fault").status_code == 200
        health = client.get("/healthz")
        assert (health.status_code, health.json()["status"]) == (200, "ok")
        listed = client.get("/v1/memories", params={"user_id": "alice"}).json()["results"]
        texts = {memory["memory"] for memory in listed}
        assert {"before the fault", "after the fault"} <= texts
        assert not any(text.startswith("during") for text in texts)  # no partial write
    assert "Traceback" not in (tmp_path / "serve.log").read_text()
    stop(server, signal.SIGTERM)
