"""The background worker: claims queued jobs, embeds their turns and stores the memories.

Runs in-process as an asyncio task (the default) or alone as ``memhub worker``; any number of
workers may share one database. A failed batch is retried job by job, so one bad job cannot
hold the others back; a job that keeps failing is parked with its error, never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memhub.embed.base import Embedder
from memhub.engine.ingest import INGEST_JOB, memories_from_turns
from memhub.errors import MemhubError, StoreUnavailable
from memhub.messages import deserialize
from memhub.store.protocol import JobBatch, Store
from memhub.store.records import Job, Turn

__all__ = ["Worker", "WorkerConfig"]

log = logging.getLogger("memhub.worker")


@dataclass(frozen=True)
class WorkerConfig:
    """Batching and retry knobs."""

    batch_size: int = 64
    poll_interval: float = 0.5
    max_attempts: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 300.0


class Worker:
    """Turns queued jobs into memories."""

    def __init__(self, store: Store, embedder: Embedder, config: WorkerConfig) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self._wake = asyncio.Event()
        self.processed = 0
        self.failed = 0

    def wake(self) -> None:
        """New work was queued in this process: skip the rest of the idle wait."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Process jobs until ``stop`` is set; survives database outages."""
        while not stop.is_set():
            try:
                done = await self.run_once()
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

    async def run_once(self) -> int:
        """Claim and process one batch; returns how many jobs finished."""
        try:
            async with self.store.claim_jobs(self.config.batch_size) as batch:
                if not batch.jobs:
                    return 0
                await self._process(batch, batch.jobs)
                done = len(batch.jobs)
        except (MemhubError, ValueError) as exc:
            if isinstance(exc, StoreUnavailable):
                raise
            log.warning("worker: batch failed (%s); retrying its jobs one by one", exc)
            return await self._one_by_one()
        self.processed += done
        return done

    async def _one_by_one(self) -> int:
        done = 0
        for _ in range(self.config.batch_size):
            try:
                async with self.store.claim_jobs(1) as batch:
                    if not batch.jobs:
                        break
                    job = batch.jobs[0]
                    await self._process(batch, batch.jobs)
                    done += 1
            except StoreUnavailable:
                raise
            except (MemhubError, ValueError) as exc:
                await self._record_failure(job, exc)
        self.processed += done
        return done

    async def _record_failure(self, job: Job, exc: Exception) -> None:
        self.failed += 1
        delay = min(self.config.backoff_max, self.config.backoff_base * 2**job.attempts)
        retry_at = datetime.now(UTC) + timedelta(seconds=delay * (0.5 + random.random()))
        parked = await self.store.fail_jobs(
            [job.id], f"{type(exc).__name__}: {exc}", retry_at, self.config.max_attempts
        )
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

    async def _process(self, batch: JobBatch, jobs: list[Job]) -> None:
        ingest = [job for job in jobs if job.kind == INGEST_JOB]
        unknown = [job for job in jobs if job.kind != INGEST_JOB]
        if unknown:
            raise ValueError(f"unknown job kind {unknown[0].kind!r}")
        turn_ids = [tid for job in ingest for tid in job.payload.get("turn_ids", [])]
        turns = {turn.id: turn for turn in await batch.turns(turn_ids)}
        work: list[tuple[Job, list[Turn]]] = []
        for job in ingest:
            job_turns = [turns[t] for t in job.payload.get("turn_ids", []) if t in turns]
            work.append((job, [t for t in job_turns if _text(t).strip()]))
        # One embedding call for the whole batch: batching is where the throughput comes from.
        texts = [_text(t) for _, job_turns in work for t in job_turns]
        vectors = await self.embedder.embed(texts)
        offset = 0
        for job, job_turns in work:
            chunk = vectors[offset : offset + len(job_turns)]
            offset += len(job_turns)
            memories = memories_from_turns(job_turns, job.scope, list(chunk), job.payload)
            await batch.insert_memories(memories, actor="worker")
        await batch.complete([job.id for job in jobs])


def _text(turn: Turn) -> str:
    return deserialize(turn.message, turn.role).content
