"""The job queue under a backlog: claim latency, fairness, and how fast a worker stops.

``python -m bench.queue [--jobs 100000]`` on a fresh embedded PostgreSQL (or
``MEMHUB_DATABASE_URL``): one user queues ``--jobs`` jobs, 100 others one each; then it times
claims, counts the claims until a newcomer's job is taken, and times SIGTERM of a
``memhub worker`` ingesting one job of ``--jobs`` turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from memhub.config import MemhubSettings
from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server
from memhub.store.postgres.store import PostgresStore
from memhub.store.records import Lane, Lease

UNORDERED = Lane(("consolidate",), exclude=True, ordered=False)
ORDERED = Lane(("consolidate",), exclude=True)


async def _sql(url: str, query: str) -> int:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cur = await conn.execute(query.encode())
        row = await cur.fetchone() if cur.description else None
        return int(row[0]) if row else 0


async def claims(url: str, jobs: int) -> dict[str, float]:
    """Claim latency with a backlog, and whether a newcomer waits behind it."""
    await _sql(
        url,
        "INSERT INTO memory_jobs (kind, user_id, payload) SELECT 'ingest', 'big',"
        f" '{{\"turn_ids\": []}}' FROM generate_series(1, {int(jobs)})",
    )
    await _sql(
        url,
        "INSERT INTO memory_jobs (kind, user_id, payload) SELECT 'ingest', 'user-' || g,"
        " '{\"turn_ids\": []}' FROM generate_series(1, 100) AS g",
    )
    await _sql(url, "ANALYZE memory_jobs")
    store = await PostgresStore.open(MemhubSettings(database_url=url))
    lease = Lease("bench", 60.0, 5)
    result: dict[str, float] = {}
    try:
        for name, lane in (("unordered", UNORDERED), ("ordered", ORDERED)):
            times = []
            for _ in range(50):
                started = time.perf_counter()
                taken = await store.claim_jobs(lane, 64, lease)
                times.append((time.perf_counter() - started) * 1000)
                now = datetime.now(UTC)
                await store.release_jobs([j.id for j in taken], lease.owner, None, now, 5)
            result[f"claim_{name}_p50_ms"] = statistics.median(times)
            result[f"claim_{name}_p95_ms"] = sorted(times)[int(len(times) * 0.95) - 1]
        await _sql(
            url,
            "INSERT INTO memory_jobs (kind, user_id, payload)"
            " VALUES ('ingest', 'newcomer', '{\"turn_ids\": []}')",
        )
        # Owners are served round robin, 64 per claim: with 102 owners the newcomer waits
        # at most 2 claims, whatever the size of the backlog queued before it.
        for n in range(1, 1000):
            taken = await store.claim_jobs(UNORDERED, 64, lease)
            if any(j.owner == "newcomer" for j in taken):
                result["claims_until_newcomer_served"] = float(n)
                break
    finally:
        await store.aclose()
    return result


async def sigterm(url: str, turns: int) -> dict[str, float]:
    """Seconds from SIGTERM to exit while a worker ingests one job of ``turns`` turns."""
    await _sql(url, "DELETE FROM memory_jobs")
    await _sql(
        url,
        "INSERT INTO conversation_context (user_id, session_id, role, message)"
        " SELECT 'bulk', 's', 'user', json_build_object('content', 'bulk note ' || g,"
        f" 'role', 'user')::text FROM generate_series(1, {int(turns)}) AS g",
    )
    await _sql(
        url,
        "INSERT INTO memory_jobs (kind, user_id, payload) SELECT 'ingest', 'bulk',"
        " jsonb_build_object('infer', false, 'turn_ids', jsonb_agg(id ORDER BY id))"
        " FROM conversation_context",
    )
    env = {**os.environ, "MEMHUB_DATABASE_URL": url}
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "memhub.cli", "worker", env=env
    )
    while True:
        if await _sql(url, "SELECT count(*) FROM memories"):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(2.0)  # well into the job
    started = time.perf_counter()
    worker.send_signal(signal.SIGTERM)
    await asyncio.wait_for(worker.wait(), 120)
    return {
        "sigterm_exit_seconds": time.perf_counter() - started,
        "stored_before_exit": float(await _sql(url, "SELECT count(*) FROM memories")),
    }


async def main(jobs: int) -> dict[str, float]:
    home = None if os.environ.get("MEMHUB_DATABASE_URL") else Path(tempfile.mkdtemp())
    url = os.environ.get("MEMHUB_DATABASE_URL") or embedded_database_url(home or Path())
    try:
        store = await PostgresStore.open(MemhubSettings(database_url=url))  # migrate
        await store.aclose()
        return {**await claims(url, jobs), **await sigterm(url, jobs)}
    finally:
        if home is not None:
            stop_embedded_server(home)
            shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main(args.jobs)), indent=1))
