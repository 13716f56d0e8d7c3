"""A fair queue: another owner's small add is served within seconds behind a 100k backlog.

``.venv/bin/python -m bench.fair_queue [--turns 100000] [--turns-per-job 1]`` on a fresh embedded
PostgreSQL (or ``MEMHUB_DATABASE_URL``): one owner's backlog of ``--turns`` turns is queued
directly in SQL (``--turns-per-job`` turns a job: 1 is a stream of REST adds, 256 an import),
the claim's statements are run once under ``EXPLAIN (ANALYZE, BUFFERS)`` and timed, a
``memhub worker`` starts on the backlog, and once it is busy another owner adds 10 turns.
Reported: seconds from that add's return until all 10 are embedded (searchable by meaning,
checked with a search sharing no word with them), and how much of the backlog was done by
then. The machine and its load are printed with the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg

from bench.machine import describe, summary
from memhub import AsyncMemory, MemhubSettings
from memhub.store.postgres import jobs as pg_jobs
from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server
from memhub.store.postgres.store import PostgresStore
from memhub.store.records import Lane, Lease

INGEST = Lane(("consolidate",), exclude=True, ordered=False)  # the worker's, without an LLM
SMALL = [f"note {n}: the quarterly budget review moved to the Lisbon office" for n in range(10)]


async def _sql(url: str, query: str) -> int:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(query.encode())
        row = await cur.fetchone() if cur.description else None
        return int(row[0]) if row else 0


async def queue_backlog(url: str, turns: int, per_job: int, owner: str = "big") -> None:
    """``turns`` turns of ``owner`` and their ingest jobs, ``per_job`` turns each, in SQL."""
    await _sql(
        url,
        "INSERT INTO conversation_context (user_id, session_id, role, message)"
        f" SELECT '{owner}', 's', 'user', json_build_object('content', 'backlog note ' || g"
        " || ' about topic ' || (g % 97), 'role', 'user')::text"
        f" FROM generate_series(1, {int(turns)}) AS g",
    )
    await _sql(
        url,
        "INSERT INTO memory_jobs (kind, user_id, payload) SELECT 'ingest', user_id,"
        " jsonb_build_object('infer', false, 'turn_ids', jsonb_agg(id ORDER BY id))"
        f" FROM (SELECT id, user_id, (row_number() OVER (ORDER BY id) - 1) / {int(per_job)} AS n"
        f"  FROM conversation_context WHERE user_id = '{owner}') t GROUP BY user_id, n",
    )
    await _sql(url, "ANALYZE memory_jobs")


async def _until(url: str, count: str, reaches: int) -> None:
    """Poll ``count`` (another process's writes) until it reaches ``reaches``."""
    while True:
        if await _sql(url, count) >= reaches:
            return
        await asyncio.sleep(0.02)


class _Explaining:
    """A connection that runs each SELECT of a claim under EXPLAIN ANALYZE first."""

    def __init__(self, conn: Any, plans: list[str]) -> None:
        self._conn, self._plans = conn, plans

    def transaction(self) -> Any:
        return self._conn.transaction()

    async def execute(self, query: str, params: Any = None) -> Any:
        if query.lstrip().startswith(("SELECT", "WITH")):
            cur = await self._conn.execute(f"EXPLAIN (ANALYZE, BUFFERS) {query}", params)
            self._plans.append("\n".join(str(row[0]) for row in await cur.fetchall()))
        return await self._conn.execute(query, params)


class _ExplainingDatabase:
    def __init__(self, store: PostgresStore, plans: list[str]) -> None:
        self._store, self._plans = store, plans

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[_Explaining]:
        async with self._store.database.connection() as conn:
            yield _Explaining(conn, self._plans)


async def claim_cost(url: str) -> dict[str, Any]:
    """The claim's statements under EXPLAIN ANALYZE once, then 30 claims timed (released)."""
    store = await PostgresStore.open(MemhubSettings(database_url=url))
    lease = Lease("bench", 60.0, 5)
    plans: list[str] = []
    try:
        database: Any = _ExplainingDatabase(store, plans)
        taken, _ = await pg_jobs.claim_jobs(database, INGEST, 64, lease, None, turns=256)
        await store.release_jobs([j.id for j in taken], "bench", None, datetime.now(UTC), 5)
        times = []
        for _ in range(30):
            started = time.perf_counter()
            taken = await store.claim_jobs(INGEST, 64, lease, turns=256)
            times.append((time.perf_counter() - started) * 1000)
            await store.release_jobs([j.id for j in taken], "bench", None, datetime.now(UTC), 5)
    finally:
        await store.aclose()
    return {
        "claim_p50_ms": round(statistics.median(times), 2),
        "claim_max_ms": round(max(times), 2),
        "explain": plans,
    }


async def small_add_served(url: str) -> dict[str, float]:
    """Seconds until another owner's 10-turn add is searchable by meaning, the worker busy
    with the backlog."""
    env = {**os.environ, "MEMHUB_DATABASE_URL": url}
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memhub.cli", "worker", env=env
    )
    settings = MemhubSettings(database_url=url, worker="off")
    try:
        await _until(url, "SELECT count(embedding) FROM memories", 1)  # busy on the backlog
        await asyncio.sleep(2.0)
        async with AsyncMemory(settings=settings) as small:
            await small.add(SMALL, user_id="small", infer=False)
            added = time.perf_counter()
            backlog_before = await _sql(url, "SELECT count(embedding) FROM memories")
            await _until(url, "SELECT count(embedding) FROM memories WHERE user_id = 'small'", 10)
            served = time.perf_counter() - added
            backlog_after = await _sql(url, "SELECT count(embedding) FROM memories")
        async with AsyncMemory(settings=settings) as reader:  # by meaning: no shared word
            hits = await reader.search("financial planning meeting in Portugal", user_id="small")
    finally:
        worker.terminate()
        await asyncio.wait_for(worker.wait(), 120)
    return {
        "small_add_searchable_seconds": round(served, 2),
        "found_by_meaning": float(len(hits["results"])),
        "backlog_turns_embedded_meanwhile": float(backlog_after - backlog_before - 10),
        "backlog_queued_jobs_left": float(
            await _sql(url, "SELECT count(*) FROM memory_jobs WHERE user_id = 'big'")
        ),
    }


async def main(turns: int, per_job: int) -> dict[str, Any]:
    home = None if os.environ.get("MEMHUB_DATABASE_URL") else Path(tempfile.mkdtemp())
    url = os.environ.get("MEMHUB_DATABASE_URL") or embedded_database_url(home or Path())
    try:
        async with AsyncMemory(settings=MemhubSettings(database_url=url, worker="off")) as m:
            await m.open()  # migrated, the embedding space (the vector column) set up
        await queue_backlog(url, turns, per_job)
        machine = describe(url)
        result = {**await claim_cost(url), **await small_add_served(url)}
        machine["load_after"] = os.getloadavg()
        return {"turns": turns, "turns_per_job": per_job, **result, "machine": summary(machine)}
    finally:
        if home is not None:
            stop_embedded_server(home)
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--turns-per-job", type=int, default=1)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.turns, args.turns_per_job)), indent=1))
