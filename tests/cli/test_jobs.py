"""``memhub jobs stats | parked | retry`` and ``memhub migrate``, run as the CLI runs them."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub._portal import run_sync
from memhub.cli import main


def _cli(db_url: str, capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(["--database-url", db_url, *argv])
    return code, capsys.readouterr().out


async def _queue(settings: MemhubSettings) -> None:
    quiet = settings.model_copy(update={"worker": "off"})  # the jobs stay queued
    async with AsyncMemory(settings=quiet) as memory:
        await memory.add("I keep bees.", user_id="ada", infer=False)
        await memory.add("I sail.", user_id="bo", infer=False)


def test_jobs_stats_parked_and_retry(
    db_url: str,
    settings: MemhubSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("MEMHUB_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("MEMHUB_WORKER", "off")
    run_sync(_queue(settings))
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE memory_jobs SET status = 'parked', last_error = 'boom' WHERE user_id = 'bo'"
        )
    code, out = _cli(db_url, capsys, "jobs", "stats")
    stats = json.loads(out)
    assert code == 0 and (stats["queued"], stats["parked"]) == (1, 1)
    code, out = _cli(db_url, capsys, "jobs", "parked")
    (parked,) = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and (parked["user_id"], parked["error"]) == ("bo", "boom")
    code, out = _cli(db_url, capsys, "jobs", "retry", str(parked["id"]))
    assert code == 0 and out.strip() == "requeued 1 parked jobs"
    code, out = _cli(db_url, capsys, "jobs", "stats")
    assert (json.loads(out)["queued"], json.loads(out)["parked"]) == (2, 0)


def test_migrate_reports_an_up_to_date_database(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMHUB_DATA_DIR", str(tmp_path))
    code, out = _cli(db_url, capsys, "migrate")
    assert code == 0 and out.strip() == "database is up to date"
    with psycopg.connect(db_url) as conn:
        (applied,) = conn.execute("SELECT count(*) FROM memhub_schema_migrations").fetchone() or (
            0,
        )
    assert applied > 0
