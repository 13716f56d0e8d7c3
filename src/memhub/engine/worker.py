"""The background worker: claims queued jobs, embeds their turns and stores the memories.

Two lanes, each keeping every owner's jobs in order: ``ingest`` embeds turns and stores them
as memories (fast, no LLM), so they are searchable at once; with an LLM configured it also
queues ``consolidate`` jobs, which turn the raw turns into facts. A failed batch is retried
job by job, so one bad job cannot hold the others back; a job that keeps failing is parked
with its error, never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memhub.embed.base import Embedder
from memhub.engine.consolidate import CONSOLIDATE_JOB, TURN_MEMORY, Consolidator
from memhub.engine.ingest import INGEST_JOB, memories_from_turns
from memhub.errors import Conflict, MemhubError, ProviderOutputError, StoreUnavailable
from memhub.messages import deserialize
from memhub.store.protocol import JobBatch, Store
from memhub.store.records import Job, Lane, NewJob, NewMemory, Turn
from memhub.telemetry import instruments, operation, queue_depth

__all__ = ["Worker", "WorkerConfig"]

log = logging.getLogger("memhub.worker")

CONSOLIDATE_LANE = Lane((CONSOLIDATE_JOB,))


def ingest_lane(consolidating: bool) -> Lane:
    """Every kind but consolidate, so a job no code handles is claimed and parked.

    Without consolidation the lane is unordered: raw turns carry their own time and duplicates
    are refused by a unique index, so concurrent batches may share a user and one user's
    backlog can use every core. With it, ingestion queues the consolidation jobs, which must
    be created in the order the turns were said: then one user's turns go one batch at a time.
    """
    return Lane((CONSOLIDATE_JOB,), exclude=True, ordered=consolidating)


@dataclass(frozen=True)
class WorkerConfig:
    """Batching and retry knobs.

    Attributes:
        batch_size: Jobs claimed at once (ingest embeds all their turns in one call).
        poll_interval: Seconds between looks at an empty queue.
        max_attempts: Failures before a job is parked.
        backoff_base: First retry delay in seconds; doubles per attempt.
        backoff_max: Longest retry delay.
        consolidation_delay: Seconds a turn waits before consolidation, so one LLM call
            covers the turns that follow it (fewer calls per turn under traffic).
        max_turns_per_call: Most turns one consolidation call sees.
    """

    batch_size: int = 64
    poll_interval: float = 0.5
    max_attempts: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    consolidation_delay: float = 2.0
    max_turns_per_call: int = 40


class Worker:
    """Turns queued jobs into memories (and, with an LLM, into facts)."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        config: WorkerConfig,
        consolidator: Consolidator | None = None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.consolidator = consolidator
        self._wake = asyncio.Event()
        self.failed = 0
        self._inserted_since_analyze = 0
        self._inserted_total = 0

    def wake(self) -> None:
        """New work was queued in this process: skip the rest of the idle wait."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Process jobs until ``stop`` is set; survives database outages."""
        while not stop.is_set():
            try:
                done = await self.run_once()
                await self._count_queue_for_metrics()
            except StoreUnavailable as exc:
                if stop.is_set():
                    break
                log.warning("worker: database unavailable, retrying: %s", exc)
                done = 0
            except Exception:
                log.exception("worker: unexpected error; continuing")
                done = 0
            if done == 0:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.config.poll_interval)

    async def _count_queue_for_metrics(self) -> None:
        # A query, so only while a metric reader collects memhub.queue.depth (rate-limited).
        instruments()  # creates the gauge once, so that a reader can ask for it
        depth = queue_depth()
        if depth.claim():
            depth.update(await self.store.job_counts())

    async def run_once(self) -> int:
        """Claim and process one batch per lane; returns how many jobs finished."""
        done = await self._lane(ingest_lane(self.consolidator is not None))
        if self.consolidator is not None:
            done += await self._lane(CONSOLIDATE_LANE)
        await self._refresh_statistics_after_growth()
        return done

    async def _refresh_statistics_after_growth(self) -> None:
        # Every 10 % of growth (at least 1,000 rows) this worker has written since it started.
        grown = self._inserted_since_analyze
        if grown >= max(1_000, self._inserted_total // 10):
            self._inserted_total += grown
            self._inserted_since_analyze = 0
            await self.store.refresh_statistics()

    async def _lane(self, lane: Lane) -> int:
        try:
            async with self.store.claim_jobs(self.config.batch_size, lane) as batch:
                if not batch.jobs:
                    return 0
                done = await self._process(batch, batch.jobs)
        except StoreUnavailable:
            raise
        except Conflict as exc:  # lost a race with another batch: nothing wrong with the jobs
            log.info("worker: batch rolled back by a concurrent change (%s); retrying", exc)
            return 0
        except (MemhubError, ValueError) as exc:
            log.warning("worker: batch failed (%s); retrying its jobs one by one", exc)
            return await self._one_by_one(lane)
        return done

    async def _one_by_one(self, lane: Lane) -> int:
        done = 0
        for _ in range(self.config.batch_size):
            job: Job | None = None
            try:
                async with self.store.claim_jobs(1, lane) as batch:
                    if not batch.jobs:
                        break
                    job = batch.jobs[0]
                    done += await self._process(batch, batch.jobs)
            except StoreUnavailable:
                raise
            except (MemhubError, ValueError) as exc:
                if job is None:
                    raise
                await self._record_failure(job, exc)
        return done

    async def _record_failure(self, job: Job, exc: Exception) -> None:
        self.failed += 1
        delay = min(self.config.backoff_max, self.config.backoff_base * 2**job.attempts)
        retry_at = datetime.now(UTC) + timedelta(seconds=delay * (0.5 + random.random()))
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ProviderOutputError) and exc.raw:
            error += f"\n--- raw model output ---\n{exc.raw[:3000]}"
        parked = await self.store.fail_jobs([job.id], error, retry_at, self.config.max_attempts)
        if parked:
            log.error("worker: job %s parked after %s attempts: %s", job.id, job.attempts + 1, exc)
        else:
            log.warning(
                "worker: job %s failed (attempt %s), retry at %s: %s",
                job.id,
                job.attempts + 1,
                retry_at.isoformat(),
                exc,
            )

    async def _process(self, batch: JobBatch, jobs: list[Job]) -> int:
        unknown = [job for job in jobs if job.kind not in (INGEST_JOB, CONSOLIDATE_JOB)]
        if unknown:
            raise ValueError(f"unknown job kind {unknown[0].kind!r}")
        if jobs[0].kind == INGEST_JOB:
            with operation("ingest", {"memhub.jobs": len(jobs)}):
                await self._ingest(batch, jobs)
            return len(jobs)
        return await self._consolidate(batch, jobs)

    async def _ingest(self, batch: JobBatch, jobs: list[Job]) -> None:
        turn_ids = [tid for job in jobs for tid in job.payload.get("turn_ids", [])]
        turns = {turn.id: turn for turn in await batch.turns(turn_ids)}
        work: list[tuple[Job, list[Turn]]] = []
        for job in jobs:
            job_turns = [turns[t] for t in job.payload.get("turn_ids", []) if t in turns]
            work.append((job, [t for t in job_turns if _text(t).strip()]))
        # One embedding call for the whole batch: batching is where the throughput comes from.
        vectors = await self.embedder.embed([_text(t) for _, job_turns in work for t in job_turns])
        offset = 0
        memories: list[NewMemory] = []
        for job, job_turns in work:
            chunk = list(vectors[offset : offset + len(job_turns)])
            offset += len(job_turns)
            consolidate = self.consolidator is not None and bool(job.payload.get("infer"))
            memory_type = TURN_MEMORY if consolidate else job.payload.get("memory_type")
            memories += memories_from_turns(job_turns, job.scope, chunk, memory_type)
            if consolidate:
                follow_up = {k: v for k, v in job.payload.items() if k != "infer"}
                delay = timedelta(seconds=self.config.consolidation_delay)
                await batch.enqueue(
                    NewJob(kind=CONSOLIDATE_JOB, scope=job.scope, payload=follow_up),
                    datetime.now(UTC) + delay,
                )
        # One insert for the whole batch: its rows go in one global order, so concurrent
        # batches cannot deadlock on each other's duplicates.
        await batch.insert_memories(memories, actor="worker")
        self._inserted_since_analyze += len(memories)
        await batch.complete([job.id for job in jobs])

    async def _consolidate(self, batch: JobBatch, jobs: list[Job]) -> int:
        assert self.consolidator is not None
        done = 0
        by_owner: dict[tuple[str | None, str | None, str | None], list[Job]] = {}
        for job in sorted(jobs, key=lambda j: j.id):
            key = (job.scope.user_id, job.scope.agent_id, job.scope.run_id)
            by_owner.setdefault(key, []).append(job)
        for owner_jobs in by_owner.values():
            for group in _call_groups(owner_jobs, self.config.max_turns_per_call):
                await self.consolidator.run(batch, group)
                done += len(group)
        return done


def _call_groups(jobs: list[Job], max_turns: int) -> list[list[Job]]:
    """Consecutive jobs sharing one LLM call: same kind of summary, within the turn budget."""
    groups: list[list[Job]] = []
    current: list[Job] = []
    turns = 0
    for job in jobs:
        n = len(job.payload.get("turn_ids", []))
        same_kind = not current or (
            current[0].payload.get("memory_type") == job.payload.get("memory_type")
        )
        if current and (turns + n > max_turns or not same_kind):
            groups.append(current)
            current, turns = [], 0
        current.append(job)
        turns += n
    if current:
        groups.append(current)
    return groups


def _text(turn: Turn) -> str:
    return deserialize(turn.message, turn.role).content
