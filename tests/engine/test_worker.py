"""The background worker on a real database: crash safety, retries and parking."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings, ProviderError
from memhub.testing import FakeEmbedder


async def _count(db_url: str, sql: str) -> int:
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(sql.encode())
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])


def _start_worker(
    db_url: str, batch_size: str = "1", extra: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **(extra or {}),
        "MEMHUB_DATABASE_URL": db_url,
        "MEMHUB_WORKER_BATCH_SIZE": batch_size,
        # a killed worker's lease expires this fast, so the next worker takes its job over
        "MEMHUB_JOB_LEASE_SECONDS": "3",
    }
    return subprocess.Popen(
        [sys.executable, "-m", "memhub.cli", "worker"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


async def test_kill_9_mid_ingest_loses_and_duplicates_nothing(
    settings: MemhubSettings, db_url: str
) -> None:
    total = 1000
    async with AsyncMemory(settings=settings.model_copy(update={"worker": "off"})) as memory:
        for start in range(0, total, 50):
            batch = [f"fact number {n} about topic {n % 7}" for n in range(start, start + 50)]
            await memory.add(batch, user_id="durable", infer=False)
    assert await _count(db_url, "SELECT count(*) FROM memory_jobs") == total // 50

    first = _start_worker(db_url)
    try:
        for _ in range(600):
            if await _count(db_url, "SELECT count(embedding) FROM memories") > 0:
                break
            await asyncio.sleep(0.05)
        first.send_signal(signal.SIGKILL)
    finally:
        first.wait(30)
    # add() wrote every memory's text; the worker fills the vectors in
    assert await _count(db_url, "SELECT count(*) FROM memories") == total
    stored_at_kill = await _count(db_url, "SELECT count(embedding) FROM memories")
    assert 0 < stored_at_kill < total, (
        "the kill must land mid-ingest for this test to mean anything"
    )

    second = _start_worker(db_url)
    try:
        for _ in range(1200):
            if await _count(db_url, "SELECT count(*) FROM memory_jobs") == 0:
                break
            await asyncio.sleep(0.05)
    finally:
        second.terminate()
        second.wait(30)
    assert await _count(db_url, "SELECT count(*) FROM memory_jobs") == 0
    assert await _count(db_url, "SELECT count(*) FROM memories") == total
    assert await _count(db_url, "SELECT count(embedding) FROM memories") == total
    assert await _count(db_url, "SELECT count(DISTINCT source_turn_ids[1]) FROM memories") == total
    assert await _count(db_url, "SELECT count(*) FROM memory_history WHERE event = 'ADD'") == total


async def test_failing_embedder_retries_then_parks_and_keeps_the_turn(
    settings: MemhubSettings, db_url: str
) -> None:
    quick = settings.model_copy(
        update={"worker": "off", "job_max_attempts": 3, "job_retry_base_seconds": 0.01}
    )
    # FakeEmbedder stands in for an embedder whose server is down: a real one cannot be made
    # to fail on demand.
    embedder = FakeEmbedder()
    embedder.error = ProviderError("embedding server unreachable")
    async with AsyncMemory(settings=quick, embedder=embedder) as memory:
        await memory.add("My passport number is in the drawer.", user_id="u", infer=False)
        await memory.add("I prefer window seats.", user_id="u", infer=False)
        async with asyncio.timeout(30):
            await memory.wait_idle()  # retries with backoff until both jobs are parked
        assert await _count(db_url, "SELECT count(*) FROM memory_jobs WHERE status = 'parked'") == 2
        assert await _count(db_url, "SELECT min(attempts) FROM memory_jobs") == 3
        async with await psycopg.AsyncConnection.connect(db_url) as conn:
            cur = await conn.execute("SELECT last_error FROM memory_jobs")
            errors = [row[0] for row in await cur.fetchall()]
        assert all("embedding server unreachable" in e for e in errors)
        assert await _count(db_url, "SELECT count(*) FROM conversation_context") == 2

        embedder.error = None
        from memhub.store.postgres.store import PostgresStore

        store = await PostgresStore.open(quick)
        assert await store.job_counts() == {"queued": 0, "parked": 2}
        assert await store.requeue_parked(None) == 2
        assert await store.job_counts() == {"queued": 2, "parked": 0}
        await store.aclose()
        await memory.wait_idle()
        assert await _count(db_url, "SELECT count(*) FROM memories") == 2


@pytest.mark.parametrize("bad_kind", ["mystery"])
async def test_one_bad_job_does_not_hold_back_the_batch(
    settings: MemhubSettings, db_url: str, bad_kind: str
) -> None:
    quiet = settings.model_copy(update={"worker": "off", "job_max_attempts": 1})
    async with AsyncMemory(settings=quiet) as memory:
        await memory.add("good one", user_id="a", infer=False)
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
            await conn.execute(
                "INSERT INTO memory_jobs (kind, user_id, payload) VALUES (%s, 'b', '{}')",
                (bad_kind,),
            )
        await memory.add("good two", user_id="c", infer=False)
        await memory.wait_idle()
    assert await _count(db_url, "SELECT count(*) FROM memories") == 2
    assert await _count(db_url, "SELECT count(*) FROM memory_jobs WHERE status = 'parked'") == 1


@pytest.mark.parametrize(
    ("kind", "payload", "reason"),
    [
        ("ingest", {"turn_ids": "not a list"}, "payload turn_ids must be a list of integers"),
        ("ingest", {"turn_ids": [1], "memory_ids": ["x"]}, "payload memory_ids must be a list"),
        ("ingest", {"turn_ids": [], "done": "3"}, "payload done must be an integer"),
    ],
)
async def test_a_payload_that_does_not_read_is_parked_with_the_reason(
    settings: MemhubSettings, db_url: str, kind: str, payload: dict[str, object], reason: str
) -> None:
    """Read once at claim: the job fails like any attempt (here the only one) and says why;
    the jobs around it are done."""
    quiet = settings.model_copy(update={"worker": "off", "job_max_attempts": 1})
    async with AsyncMemory(settings=quiet) as memory:
        await memory.add("good one", user_id="a", infer=False)
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
            cur = await conn.execute(
                "INSERT INTO memory_jobs (kind, user_id, payload) VALUES (%s, 'b', %s)"
                " RETURNING id",
                (kind, json.dumps(payload)),
            )
            row = await cur.fetchone()
            assert row is not None
        await memory.add("good two", user_id="c", infer=False)
        await memory.wait_idle()
    assert await _count(db_url, "SELECT count(*) FROM memories") == 2
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT id, status, attempts, last_error FROM memory_jobs")
        (parked,) = await cur.fetchall()
    assert parked[:3] == (row[0], "parked", 1)
    assert parked[3].startswith(f"TypeError: job {row[0]}: {reason}")


async def test_concurrent_batches_on_one_user_with_duplicates(
    settings: MemhubSettings, db_url: str
) -> None:
    # Jobs alternate between two sets of texts (H L L H H L ...), so concurrent batches of two
    # jobs meet the same texts in opposite job orders. Whether they would have deadlocked
    # depends on timing; what must always hold is below: no failed batch, and every turn kept
    # as its own memory (turn memories are not deduplicated, as in Mem0).
    quiet = settings.model_copy(update={"worker": "off", "worker_batch_size": 2})
    high = [f"repeated fact {n}" for n in range(10, 20)]
    low = [f"repeated fact {n}" for n in range(10)]
    async with AsyncMemory(settings=quiet) as memory:
        for n in range(60):
            await memory.add(high if n % 4 in (0, 3) else low, user_id="dup", infer=False)
        services = await memory._services()

        async def drain() -> None:
            while await services.store.pending_jobs():
                if not await services.worker.run_once():
                    await asyncio.sleep(0.005)

        await asyncio.gather(drain(), drain(), drain())
        assert services.worker.failed == 0
    assert await _count(db_url, "SELECT count(*) FROM memories") == 600
    assert await _count(db_url, "SELECT count(DISTINCT memory) FROM memories") == 20
    assert await _count(db_url, "SELECT count(*) FROM memory_jobs") == 0


async def test_bulk_growth_refreshes_planner_statistics(
    settings: MemhubSettings, db_url: str
) -> None:
    # Stale statistics right after a bulk import make PostgreSQL sort a whole scope by
    # distance instead of using HNSW; the worker runs ANALYZE itself after enough growth.
    quiet = settings.model_copy(update={"worker": "off"})
    async with AsyncMemory(settings=quiet) as memory:
        await memory.add([f"note {n}" for n in range(1100)], user_id="bulk", infer=False)
        await memory.wait_idle()
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT last_analyze IS NOT NULL FROM pg_stat_user_tables WHERE relname = 'memories'"
        )
        assert await cur.fetchone() == (True,)


async def test_sigterm_with_a_100k_turn_backlog_stops_between_chunks(
    settings: MemhubSettings, db_url: str
) -> None:
    # One job of 100,000 turns (a bulk import): ingestion goes in chunks, each applied in its
    # own short transaction, so stopping waits for one chunk at most, never the whole job:
    # the worker exits with part of the job done, a whole number of chunks, the rest handed
    # back (how long that took is no evidence on a loaded machine; what was done is). The
    # rows are written as `memhub import` writes them: each turn's memory with its text, no
    # vector; the job pairs turn ids with memory ids.
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO conversation_context (user_id, session_id, role, message)"
            " SELECT 'bulk', 's', 'user', json_build_object('content', 'bulk note ' || g,"
            " 'role', 'user')::text FROM generate_series(1, 100000) AS g"
        )
        await conn.execute(
            "INSERT INTO memories (id, user_id, memory, hash, metadata, valid_from,"
            " source_turn_ids, created_at, role)"
            " SELECT gen_random_uuid(), 'bulk', message::json->>'content',"
            " md5(message::json->>'content'), '{}', now(), ARRAY[id], now(), 'user'"
            " FROM conversation_context"
        )
        await conn.execute(
            "INSERT INTO memory_jobs (kind, user_id, payload) SELECT 'ingest', 'bulk',"
            " jsonb_build_object('infer', false, 'turn_ids', jsonb_agg(t.id ORDER BY t.id),"
            " 'memory_ids', jsonb_agg(m.id ORDER BY t.id))"
            " FROM conversation_context t JOIN memories m ON m.source_turn_ids[1] = t.id"
        )
    # (the worker adds the embedding column when it opens the store: counted after it ran)
    done = "SELECT coalesce(sum((payload->>'done')::int), 0) FROM memory_jobs"
    worker = _start_worker(db_url, batch_size="64")
    try:
        for _ in range(1200):
            if await _count(db_url, done) > 0:
                break
            await asyncio.sleep(0.05)
        worker.send_signal(signal.SIGTERM)
        worker.wait(120)
    finally:
        if worker.poll() is None:
            worker.kill()
    assert worker.returncode == 0
    stored = await _count(db_url, "SELECT count(*) FROM memories WHERE embedding IS NOT NULL")
    # a chunk is at most WorkerConfig.claim_turns (32) turns; a claim does one of the job's
    assert 0 < stored < 100_000 and stored % 32 == 0, "stopped at a chunk's end, not the job's"
    assert await _count(db_url, "SELECT (payload->>'done')::int FROM memory_jobs") == stored
    # stopped between chunks: the rest of the job was given back, not left leased
    assert await _count(db_url, "SELECT count(*) FROM memory_jobs WHERE lease_owner IS NULL") == 1
    filled = "SELECT count(DISTINCT source_turn_ids[1]) FROM memories WHERE embedding IS NOT NULL"
    assert await _count(db_url, filled) == stored


async def test_kill_9_mid_llm_call_loses_and_duplicates_nothing(
    settings: MemhubSettings, db_url: str
) -> None:
    # The LLM is a scripted OpenAI-compatible server (memhub.testing); the first call hangs so
    # the worker is killed while it waits for the model, holding no transaction.
    from memhub.testing import DelayedReply, ScriptedOpenAIServer

    answer = json.dumps({"operations": [{"op": "ADD", "text": "Ada likes tea.", "turns": [1]}]})
    with ScriptedOpenAIServer() as llm:
        llm.enqueue(DelayedReply(60.0, answer))
        llm.default = answer
        llm_env = {
            "MEMHUB_LLM_BASE_URL": llm.base_url,
            "MEMHUB_LLM_MODEL": "scripted-model",
            "MEMHUB_LLM_MAX_RETRIES": "0",
            "MEMHUB_CONSOLIDATION_DELAY": "0",
        }
        quiet = settings.model_copy(
            update={"worker": "off", "llm_base_url": llm.base_url, "llm_model": "scripted-model"}
        )
        async with AsyncMemory(settings=quiet) as memory:
            await memory.add("I like tea.", user_id="ada")
        first = _start_worker(db_url, extra=llm_env)
        try:
            for _ in range(1200):
                if llm.chat_requests:
                    break
                await asyncio.sleep(0.05)
            assert llm.chat_requests, "the worker must be inside the LLM call"
            first.send_signal(signal.SIGKILL)
        finally:
            first.wait(30)
        second = _start_worker(db_url, extra=llm_env)
        try:
            for _ in range(1200):
                if await _count(db_url, "SELECT count(*) FROM memory_jobs") == 0:
                    break
                await asyncio.sleep(0.05)
        finally:
            second.terminate()
            second.wait(30)
    assert await _count(db_url, "SELECT count(*) FROM memory_jobs") == 0
    assert (
        await _count(db_url, "SELECT count(*) FROM memories WHERE memory = 'Ada likes tea.'") == 1
    )
    assert await _count(db_url, "SELECT count(*) FROM memories WHERE memory_type = 'turn'") == 0
    assert await _count(db_url, "SELECT count(*) FROM memory_llm_usage") == 1
    assert await _count(db_url, "SELECT count(*) FROM memory_history WHERE event = 'ADD'") == 2


def test_standalone_worker_runs_one_batch_per_cpu_unless_configured() -> None:
    from memhub.engine.worker import standalone_concurrency

    # Unset, the in-process worker runs one batch (memory/services.py) and `memhub worker` one
    # per CPU it may run on, so the embedder keeps every core busy.
    assert MemhubSettings(database_url="memory://").worker_concurrency is None
    assert standalone_concurrency(None) == len(os.sched_getaffinity(0))
    assert standalone_concurrency(3) == 3


async def test_hand_back_ends_a_lease_whose_claim_the_worker_never_saw(
    settings: MemhubSettings,
) -> None:
    # asyncio.run() ending can cancel a claim after its statement committed: the jobs are
    # leased to this worker, but no task knows of them. Before this, an exit's drain waited
    # its whole budget for them and left them leased until the lease expired.
    from memhub.engine.worker import Worker, WorkerConfig
    from memhub.store.postgres.store import PostgresStore
    from memhub.store.records import Lane, Lease, NewJob, NewTurn, Scope

    store = await PostgresStore.open(settings)
    try:
        turn = NewTurn(user_id="lost", session_id="s", role="user", message="m")
        await store.append_turns([turn], NewJob("ingest", Scope(user_id="lost")))
        worker = Worker(store, FakeEmbedder(), WorkerConfig())
        (job,) = await store.claim_jobs(Lane(("ingest",)), 10, worker.lease)  # "lost" reply
        assert await worker.hand_back() == 1
        other = Lease("another-worker", 60.0, 3)
        (again,) = await store.claim_jobs(Lane(("ingest",)), 10, other)
        assert (again.id, again.attempts) == (job.id, 1)  # at once, the attempt refunded
    finally:
        await store.aclose()
