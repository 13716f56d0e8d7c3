"""``memhub jobs stats | parked | retry`` and ``memhub migrate``, run as the CLI runs them."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub._portal import run_sync
from memhub.cli import main
from memhub.embed import Embedder


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
    # Per worker lane, as GET /v1/jobs/stats shows them (both read AsyncAdmin.job_stats).
    ingest = stats["by_lane"]["ingest"]
    assert (ingest["queued"], ingest["parked"]) == (1, 1)
    assert stats["by_lane"]["consolidate"]["queued"] == 0
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


async def test_worker_logs_its_start_and_its_progress(
    db_url: str, settings: MemhubSettings, caplog: pytest.LogCaptureFixture
) -> None:
    import asyncio
    import logging
    import os
    import signal

    from memhub.cli import ops

    await _queue(settings)  # two jobs waiting before the worker starts
    caplog.set_level(logging.INFO, logger="memhub")
    run = asyncio.ensure_future(ops.worker(settings, 1, report_every=0.3))
    for _ in range(200):
        await asyncio.sleep(0.05)
        if any(
            "jobs in" in r.getMessage() and "0 queued" in r.getMessage() for r in caplog.records
        ):
            break
    os.kill(os.getpid(), signal.SIGINT)  # the worker's own handler stops it
    assert await asyncio.wait_for(run, 30) == 0
    lines = [r.getMessage() for r in caplog.records if r.name == "memhub.worker"]
    start = lines[0]
    assert start.startswith("worker started: database postgresql://postgres@/memhub_test")
    assert "embedder all-MiniLM-L6-v2 (384 dimensions), 1 concurrent batches" in start
    progress = [line for line in lines if "turns/s" in line]
    assert sum(int(line.split("(")[1].split()[0]) for line in progress) == 2  # jobs done
    assert "queue: 0 queued, 0 parked" in progress[-1]
    assert lines[-1] == "worker stopped after 2 jobs (2 turns)"


def test_the_worker_names_its_database_without_the_password() -> None:
    from memhub.cli.ops import database_label

    url = "postgresql://bob:s3cret@db.example:5433/mem?sslmode=require"
    assert database_label(MemhubSettings(database_url=url)) == (
        "postgresql://bob@db.example:5433/mem?sslmode=require"
    )


class _HeldAfterFirstChunk:
    """The services' embedder, held at its second call until ``release`` is set."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.calls = 0
        self.second_call = asyncio.Event()
        self.release = asyncio.Event()
        self.model_name, self.dimension = inner.model_name, inner.dimension

    async def embed(self, texts: Sequence[str]) -> Any:
        self.calls += 1
        if self.calls == 2:
            self.second_call.set()
            await self.release.wait()
        return await self.inner.embed(texts)


async def test_worker_progress_counts_the_turns_of_a_batch_still_in_flight(
    settings: MemhubSettings,
) -> None:
    """One job of five turns, embedded two at a time: held after the first chunk, the
    worker has finished no job, and its progress line says two turns were embedded."""
    from memhub.cli.ops import WorkDone, progress_line
    from memhub.memory.services import acquire_services, release_services

    quiet = settings.model_copy(update={"worker": "off"})
    async with AsyncMemory(settings=quiet) as memory:
        await memory.add([f"fact {n} about bees" for n in range(5)], user_id="ada", infer=False)
    services = await acquire_services(quiet)
    worker = services.worker
    lane = worker.ingest  # the ingest lane embeds and chunks
    lane.config = dataclasses.replace(lane.config, ingest_chunk=2)
    held = _HeldAfterFirstChunk(lane.embedder)
    lane.embedder = held  # type: ignore[assignment]
    stop = asyncio.Event()
    before = WorkDone.of(worker)
    running = asyncio.ensure_future(worker.run(stop))
    try:
        await asyncio.wait_for(held.second_call.wait(), 60)
        line = progress_line(before, WorkDone.of(worker), {"queued": 0})
        assert (worker.jobs_done, worker.turns_embedded) == (0, 2)
        assert line is not None and "(0 jobs in" in line and ", 2 turns embedded)" in line
        held.release.set()
        for _ in range(600):  # until the job is done: a count, not a time, is asserted
            if worker.jobs_done:
                break
            await asyncio.sleep(0.05)
        assert (worker.jobs_done, worker.turns_embedded, held.calls) == (1, 5, 3)
    finally:
        held.release.set()
        stop.set()
        worker.wake()
        await running
        await release_services(services)
    assert progress_line(WorkDone.of(worker), WorkDone.of(worker), {"queued": 0}) is None
