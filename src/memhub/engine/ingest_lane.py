"""The ingest lane: the memories of claimed ``ingest`` jobs given their vectors.

``add()``, ARKOS's ``add_turn`` and the importer write each turn's memory with the turn (its
text, type and expiry, decided there once; found by its words at once); this lane only
embeds them. A claim is worked a chunk at a time, each chunk one embedding call and one
short apply (the vectors, the jobs' progress, their follow-up consolidation jobs), so a large
import shows progress and a crash costs one chunk. A claim does about ``claim_turns`` of
work: what is left of a large job goes back to the queue with its progress saved, so the
next claim (round robin over owners) serves an owner whose add came meanwhile first.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from uuid import UUID

from memhub.embed.base import Embedder
from memhub.engine.consolidate import CONSOLIDATE_JOB
from memhub.engine.leases import JobReturns
from memhub.engine.maintenance import Maintenance
from memhub.engine.passages import embed_texts
from memhub.errors import Conflict
from memhub.store.protocol import JobBatch, Store
from memhub.store.records import FilledVector, Job, NewJob, Scope

__all__ = ["IngestConfig", "IngestLane"]

log = logging.getLogger("memhub.worker")

#: (job, index of the turn in the job, turn id): one turn of a claim's work.
_Item = tuple[Job, int, int]


@dataclass(frozen=True)
class IngestConfig:
    """Attributes:
    ingest_chunk: Turns embedded and applied per transaction, at most ``claim_turns``.
    claim_turns: Turns one claim works before handing the rest of its jobs back.
    consolidation_delay: A user's consolidation window (seconds): turns queued within it of
        the first queued one share one LLM call.
    """

    ingest_chunk: int = 256
    claim_turns: int = 32
    consolidation_delay: float = 2.0


class IngestLane:
    """Embeds and stores claimed turns; queues their consolidation when an LLM is configured."""

    def __init__(
        self,
        store: Store,
        embedder: Embedder,
        config: IngestConfig,
        returns: JobReturns,
        maintenance: Maintenance,
        *,
        holder: str,
        consolidating: bool,
        stopping: asyncio.Event,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.config = config
        self.returns = returns
        self.maintenance = maintenance
        self.holder = holder
        self.consolidating = consolidating
        self.stopping = stopping  # set: no new chunk starts, unfinished jobs go back
        self.turns_done = 0  # turns of finished jobs
        # Turns embedded and stored, counted per chunk: a long batch shows progress before
        # its jobs finish (turns_done counts them only then).
        self.turns_embedded = 0

    async def work(self, jobs: list[Job]) -> int:
        """Ingest ``jobs``; returns how many finished (the rest were given back or failed)."""
        finished: set[int] = set()
        try:
            await self._jobs(jobs, finished)
        except Conflict as exc:
            log.info("worker: ingest lost its lease or a race (%s); giving the jobs back", exc)
            await self.returns.give_back([j for j in jobs if j.id not in finished])
        except Exception as exc:  # any failure counts toward parking (payloads, SQL, embedder)
            rest = [j for j in jobs if j.id not in finished]
            if len(rest) == 1:
                await self.returns.failed_attempt(rest, exc)
            else:
                log.warning("worker: ingest batch failed (%s); retrying its jobs one by one", exc)
                for job in rest:
                    await self._one(job, finished)
        self.turns_done += sum(
            len(j.payload.turns) - j.payload.progress for j in jobs if j.id in finished
        )
        return len(finished)

    async def _one(self, job: Job, finished: set[int]) -> None:
        try:
            await self._jobs([job], finished)
        except Conflict:
            await self.returns.give_back([job])
        except Exception as exc:  # see work()
            await self.returns.failed_attempt([job], exc)

    async def _jobs(self, jobs: list[Job], finished: set[int]) -> None:
        """Embed and store the jobs' turns a chunk at a time, each chunk in its own apply."""
        items = [
            (job, index, turn_id)
            for job in jobs
            for index, turn_id in enumerate(job.payload.turns)
            if index >= job.payload.progress
        ]
        last = {job.id: len(job.payload.turns) - 1 for job in jobs}
        share = max(1, self.config.claim_turns)
        chunk = max(1, min(self.config.ingest_chunk, share))
        empty = [job for job in jobs if last[job.id] < job.payload.progress]
        for start in range(0, max(len(items), 1), chunk):
            if start and (self.stopping.is_set() or start >= share):
                await self.returns.give_back([j for j in jobs if j.id not in finished])
                return
            part = items[start : start + chunk]
            await self._chunk(part, empty if start == 0 else [], last, finished)

    async def _chunk(
        self,
        part: Sequence[_Item],
        empty: Sequence[Job],
        last: dict[int, int],
        finished: set[int],
    ) -> None:
        filled = await self._vectors(part)
        jobs = {job.id: job for job, _, _ in part} | {job.id: job for job in empty}
        complete = [job for job, index, _ in part if index == last[job.id]] + list(empty)
        async with self.store.apply_jobs(list(jobs.values()), self.holder, {}) as batch:
            await batch.fill_vectors(filled)
            for job in complete:
                await self._follow_up(batch, job)
            for job_id in {j.id for j, _, _ in part} - {j.id for j in complete}:
                await batch.progress(job_id, max(i for j, i, _ in part if j.id == job_id) + 1)
            await batch.complete([job.id for job in complete])
        self.maintenance.inserted(len(filled))
        self.turns_embedded += len(part)
        finished.update(job.id for job in complete)

    async def _vectors(self, part: Sequence[_Item]) -> list[FilledVector]:
        """The vectors of the chunk's memories, which ``add()`` wrote with their turns (text,
        type, expiry: decided there, once); nothing is held open while embedding."""
        wanted: dict[Scope, list[UUID]] = {}
        for job, index, _ in part:
            # the id add() returned for the turn at ``index`` (memory_ids pair with turn_ids);
            # a blank turn has one but no row, so nothing is read for it
            memory_ids = job.payload.memory_ids or ()
            if index < len(memory_ids):
                wanted.setdefault(job.scope, []).append(memory_ids[index])
        texts = [
            text
            for scope, ids in wanted.items()
            for text in await self.store.texts_to_embed(scope, ids)
        ]
        # One embedding call per chunk: batching is where the throughput comes from. A text
        # longer than the embedder's window goes as its passages.
        embedded = await embed_texts(self.embedder, [text.memory for text in texts])
        return [FilledVector(t.id, t.hash, e) for t, e in zip(texts, embedded, strict=True)]

    async def _follow_up(self, batch: JobBatch, job: Job) -> None:
        if not self.consolidating or not job.payload.infer:
            return
        follow_up = replace(job.payload, infer=None, done=None, memory_ids=None)
        window = job.created_at + timedelta(seconds=self.config.consolidation_delay)
        await batch.enqueue(
            NewJob(kind=CONSOLIDATE_JOB, scope=job.scope, payload=follow_up),
            window,
            join_window=True,
        )
