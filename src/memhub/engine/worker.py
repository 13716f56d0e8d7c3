"""The background worker: leases queued jobs, does their work unlocked, applies it per scope.

Two lanes: ``ingest`` embeds turns and stores them as memories (fast, no LLM), so they are
searchable at once; with an LLM configured it also queues ``consolidate`` jobs, which add the
facts drawn from those turns beside them. Every job goes through three phases (claim, work
with nothing held open, apply in one short transaction), so a failure or a crash costs its
own scope a retry, nobody else. Any exception counts toward parking; a job that keeps failing
is parked, never dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import random
import socket
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from memhub._cpu import bulk, owned_by
from memhub.embed.base import Embedder
from memhub.engine.consolidate import CONSOLIDATE_JOB, Consolidator, fact_scope
from memhub.engine.ingest import INGEST_JOB, assigned_memory_ids, memories_from_turns
from memhub.engine.job_payload import call_groups
from memhub.engine.passages import embed_texts
from memhub.engine.text import turn_text
from memhub.errors import Conflict, ProviderOutputError, StoreUnavailable
from memhub.store.protocol import JobBatch, Store
from memhub.store.records import Job, Lane, Lease, NewJob, NewMemory
from memhub.telemetry import instruments, operation, queue_depth

__all__ = ["CONSOLIDATE_LANE", "Worker", "WorkerConfig", "ingest_lane", "standalone_concurrency"]

log = logging.getLogger("memhub.worker")

# Consolidation of an owner waits for the turns of its window to be ingested first.
PURGE_INTERVAL = 60.0  # seconds between purges of expired memories, per worker
PURGE_BATCH = 1_000  # expired memories one purge deletes at most
CONSOLIDATE_LANE = Lane((CONSOLIDATE_JOB,), after_other_lanes=True)
WORKER_OWNER = "(worker)"  # whose CPU work the worker's is (memhub._cpu.owned_by)


def standalone_concurrency(configured: int | None) -> int:
    """Batches in flight in a ``memhub worker`` process: as configured, else one per CPU.

    A batch embeds on one core (the default embedder runs one thread per inference), and a
    standalone worker has the machine to itself: with one batch per core the embedder keeps
    every core busy while another batch waits on the database.
    """
    return configured or len(os.sched_getaffinity(0)) or 1


def ingest_lane(consolidating: bool) -> Lane:
    """Every kind but consolidate, so a job no code handles is claimed and parked.

    Without consolidation the lane is unordered: raw turns carry their own time and duplicates
    are refused by a unique index, so concurrent batches may share a user and one user's
    backlog can use every core. With it, ingestion queues the consolidation jobs, which must
    be created in the order the turns were said: then one user's turns go one lease at a time.
    """
    return Lane((CONSOLIDATE_JOB,), exclude=True, ordered=consolidating)


@dataclass(frozen=True)
class WorkerConfig:
    """Batching, lease and retry knobs.

    Attributes:
        batch_size: Jobs claimed at once (ingest embeds their turns in chunks).
        poll_interval: Seconds between looks at an empty queue.
        max_attempts: Claims before a failing job is parked.
        backoff_base: First retry delay in seconds; doubles per attempt.
        backoff_max: Longest retry delay.
        consolidation_delay: A user's consolidation window: turns queued within this many
            seconds of the first queued one share one LLM call.
        max_turns_per_call: Most turns one consolidation call sees.
        lease_seconds: How long a claim lasts without a heartbeat; a dead worker's jobs are
            claimed again after it.
        shutdown_grace: Seconds in-flight work gets to finish once stopping; what is still
            running then is cancelled and its leases left to expire.
        ingest_chunk: Turns embedded and applied per transaction (large imports go in parts),
            at most ``claim_turns``.
        claim_turns: An ingest claim stops taking jobs once they carry this many turns, and
            gives back what is left of a larger job after that many (its progress saved):
            what another owner's add queued meanwhile waits for per busy batch loop.
        retired_retention_days: Memories a model retired are erased this many days later
            (checked every ``purge_interval`` seconds, ``purge_batch`` at a time).
    """

    batch_size: int = 64
    poll_interval: float = 0.5
    max_attempts: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 300.0
    consolidation_delay: float = 2.0
    max_turns_per_call: int = 40
    lease_seconds: float = 60.0
    shutdown_grace: float = 10.0
    ingest_chunk: int = 256
    claim_turns: int = 32
    retired_retention_days: float = 30.0
    purge_interval: float = 3600.0
    purge_batch: int = 1000


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
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.lease = Lease(self.id, config.lease_seconds, config.max_attempts)
        self._wake = asyncio.Event()
        self._stopping = asyncio.Event()
        self.failed = 0
        self.jobs_done = 0  # counters for `memhub worker`'s progress line
        self.turns_done = 0
        # Turns embedded and stored, counted per chunk: a long batch shows progress before
        # its jobs finish (turns_done counts them only then).
        self.turns_embedded = 0
        self._inserted_since_analyze = 0
        self._inserted_total = 0
        self._purged_at = float("-inf")
        self._next_purge = 0.0  # monotonic time of the next purge of expired memories
        self._abandoned: set[int] = set()  # leases cancelled work left: hand_back() ends them

    def wake(self) -> None:
        """New work was queued in this process: skip the rest of the idle wait."""
        self._wake.set()

    async def run(self, stop: asyncio.Event) -> None:
        """Process jobs until ``stop`` is set, then give in-flight work a bounded grace.

        Its embedding is bulk work: in a server's process a query's embedding goes first.
        """
        with bulk(), owned_by(WORKER_OWNER):
            await self._run(stop)

    async def _run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            step = asyncio.ensure_future(self._guarded_once())
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({step, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if not step.done():
                await self._finish_within_grace(step)
                return
            if step.result() == 0:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._idle(stop), self.config.poll_interval)

    async def _idle(self, stop: asyncio.Event) -> None:
        waits = [asyncio.ensure_future(self._wake.wait()), asyncio.ensure_future(stop.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def _finish_within_grace(self, step: asyncio.Future[int]) -> None:
        self._stopping.set()  # no new chunk or call starts; unfinished jobs are given back
        try:
            await asyncio.wait_for(step, self.config.shutdown_grace)
        except TimeoutError:
            log.warning(
                "worker: in-flight work cancelled after %.0f s; its jobs are handed back",
                self.config.shutdown_grace,
            )
        except Exception:
            log.exception("worker: in-flight work failed while stopping")

    async def _guarded_once(self) -> int:
        try:
            done = await self.run_once()
            self.jobs_done += done
            await self._count_queue_for_metrics()
            return done
        except StoreUnavailable as exc:
            log.warning("worker: database unavailable, retrying: %s", exc)
        except Exception:  # the loop's edge: whatever happened, keep serving
            log.exception("worker: unexpected error; continuing")
        return 0

    async def _count_queue_for_metrics(self) -> None:
        # A query, so only while a metric reader collects memhub.queue.depth (rate-limited).
        instruments()  # creates the gauge once, so that a reader can ask for it
        depth = queue_depth()
        if depth.claim():
            depth.update(await self.store.job_counts())

    async def run_once(self) -> int:
        """Claim and process one batch per lane; returns how many jobs finished."""
        done = await self._lane(ingest_lane(self.consolidator is not None))
        if self.consolidator is not None and not self._stopping.is_set():
            done += await self._lane(CONSOLIDATE_LANE)
        await self._refresh_statistics_after_growth()
        await self.purge_retired()
        await self._purge_expired()
        return done

    async def run_for(self, owners: Sequence[str]) -> int:
        """Claim and process one batch per lane of ``owners``' jobs only (:attr:`Scope.owner`
        values): an import embedding its own users, never another user's backlog."""
        done = await self._lane(ingest_lane(self.consolidator is not None), owners)
        if self.consolidator is not None:
            done += await self._lane(CONSOLIDATE_LANE, owners)
        return done

    async def purge_retired(self, *, force: bool = False) -> int:
        """Erase memories retired longer ago than the retention, once per purge interval."""
        now = time.monotonic()
        if not force and now - self._purged_at < self.config.purge_interval:
            return 0
        self._purged_at = now
        cut = datetime.now(UTC) - timedelta(days=self.config.retired_retention_days)
        purged = 0
        while True:
            batch = await self.store.purge_retired(cut, self.config.purge_batch)
            purged += batch
            if batch < self.config.purge_batch:
                break
        if purged:
            log.info("worker: purged %d retired memories (retention %g days)", purged,
                     self.config.retired_retention_days)  # fmt: skip
        return purged

    async def _purge_expired(self) -> None:
        # add(expiration_date=...): reads skip an expired memory at once; the rows go here,
        # a bounded batch a minute (each worker of a deployment may do it).
        if time.monotonic() < self._next_purge or self._stopping.is_set():
            return
        self._next_purge = time.monotonic() + PURGE_INTERVAL
        purged = await self.store.purge_expired(PURGE_BATCH)
        if purged:
            log.info("worker: purged %s expired memories", purged)

    async def _refresh_statistics_after_growth(self) -> None:
        # Every 10 % of growth (at least 1,000 rows) this worker has written since it started.
        grown = self._inserted_since_analyze
        if grown >= max(1_000, self._inserted_total // 10):
            self._inserted_total += grown
            self._inserted_since_analyze = 0
            await self.store.refresh_statistics()

    async def _lane(self, lane: Lane, owners: Sequence[str] | None = None) -> int:
        if self._stopping.is_set():
            return 0
        # An ingest claim carries a few dozen turns: a job queued meanwhile (another owner's
        # add) waits for that much, not for a batch of 64 jobs (of up to 256 turns each).
        turns = None if lane is CONSOLIDATE_LANE else max(1, self.config.claim_turns)
        jobs = await self.store.claim_jobs(
            lane, self.config.batch_size, self.lease, turns=turns, owners=owners
        )
        if not jobs:
            return 0
        try:
            return await self._work(jobs)
        except asyncio.CancelledError:
            # Stopped mid-work (a shutdown's deadline, asyncio.run() ending): whatever of
            # these is not finished is still leased to this worker until hand_back().
            self._abandoned.update(job.id for job in jobs)
            raise

    async def _work(self, jobs: list[Job]) -> int:
        async with self._heartbeat(jobs):
            failed: set[int] = set()
            for job in jobs:
                if job.kind not in (INGEST_JOB, CONSOLIDATE_JOB):
                    await self._failed([job], ValueError(f"unknown job kind {job.kind!r}"))
                elif job.payload_error is not None:  # read at claim: fails as any attempt
                    await self._failed([job], TypeError(job.payload_error))
                else:
                    continue
                failed.add(job.id)
            known = [job for job in jobs if job.id not in failed]
            if not known:
                return 0
            if known[0].kind == CONSOLIDATE_JOB:
                return await self._consolidate(known)
            with operation("ingest", {"memhub.jobs": len(known)}):
                return await self._ingest(known)

    @contextlib.asynccontextmanager
    async def _heartbeat(self, jobs: Sequence[Job]) -> AsyncIterator[None]:
        """Keep the claim's leases alive while its work runs (an LLM call may be slow)."""

        async def beat() -> None:
            while True:
                await asyncio.sleep(self.config.lease_seconds / 3)
                with contextlib.suppress(StoreUnavailable):
                    await self.store.extend_leases(
                        [job.id for job in jobs], self.id, self.config.lease_seconds
                    )

        task = asyncio.ensure_future(beat())
        try:
            yield
        finally:
            # Not awaited: awaiting it here could swallow a cancellation aimed at this task.
            task.cancel()

    async def drain_ingest(
        self, pending: Callable[[], Awaitable[int]], end: float, owners: Sequence[str]
    ) -> None:
        """Run the ingest lane of ``owners`` (:attr:`Scope.owner` values) here until
        ``pending()`` is 0 or the loop's clock reaches ``end``.

        For an exit: the worker loops are stopped first. Only those owners' jobs are claimed
        (what the process queued, not other users' backlogs). Consolidation is left queued
        (an LLM call is slow); work the deadline interrupts is left for :meth:`hand_back`.
        """
        loop = asyncio.get_running_loop()
        self._stopping.clear()
        try:
            while loop.time() < end and await pending():
                lane = self._lane(ingest_lane(self.consolidator is not None), owners)
                try:
                    done = await asyncio.wait_for(lane, max(end - loop.time(), 0.0))
                except TimeoutError:
                    return
                if not done:  # leased by another worker, or backing off
                    await asyncio.sleep(min(0.05, max(end - loop.time(), 0.0)))
        finally:
            self._stopping.set()

    async def hand_back(self) -> int:
        """End every lease this worker holds, attempts refunded: the next worker (in any
        process) takes those jobs at once instead of after the lease expires.

        Only once its loops have stopped. The store is asked too, not only the jobs cancelled
        work reported: a claim cancelled after its statement committed (asyncio.run() ending
        mid-claim) leaves leases that no task knows of.
        """
        leased = await self.store.leased_job_ids(self.id)
        ids, self._abandoned = sorted(self._abandoned | set(leased)), set()
        if ids:
            await self.store.release_jobs(
                ids, self.id, None, datetime.now(UTC), self.config.max_attempts
            )
        return len(ids)

    # -- failures ----------------------------------------------------------------------------
    def _retry_at(self, attempts: int) -> datetime:
        delay = min(self.config.backoff_max, self.config.backoff_base * 2 ** max(attempts - 1, 0))
        return datetime.now(UTC) + timedelta(seconds=delay * (0.5 + random.random()))

    async def _failed(self, jobs: Sequence[Job], exc: BaseException) -> datetime:
        """Count a failed attempt for ``jobs`` (already counted at claim): back off or park."""
        self.failed += len(jobs)
        retry_at = self._retry_at(max(job.attempts for job in jobs))
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ProviderOutputError) and exc.raw:
            error += f"\n--- raw model output ---\n{exc.raw[:3000]}"
        ids = [job.id for job in jobs]
        parked = await self.store.release_jobs(
            ids, self.id, error, retry_at, self.config.max_attempts
        )
        if parked:
            log.error("worker: jobs %s parked after %s attempts: %s", ids, jobs[0].attempts, exc)
        else:
            log.warning(
                "worker: jobs %s failed (attempt %s), retry at %s: %s",
                ids,
                jobs[0].attempts,
                retry_at.isoformat(),
                exc,
            )
        return retry_at

    async def _give_back(self, jobs: Sequence[Job], at: datetime | None = None) -> None:
        """Release leases without counting the attempt (a lost race, or stopping)."""
        if jobs:
            when = at or datetime.now(UTC)
            await self.store.release_jobs([job.id for job in jobs], self.id, None, when, 0)

    # -- ingest ------------------------------------------------------------------------------
    async def _ingest(self, jobs: list[Job]) -> int:
        finished: set[int] = set()
        try:
            await self._ingest_jobs(jobs, finished)
        except Conflict as exc:
            log.info("worker: ingest lost its lease or a race (%s); giving the jobs back", exc)
            await self._give_back([j for j in jobs if j.id not in finished])
        except Exception as exc:  # any failure counts toward parking (payloads, SQL, embedder)
            rest = [j for j in jobs if j.id not in finished]
            if len(rest) == 1:
                await self._failed(rest, exc)
            else:
                log.warning("worker: ingest batch failed (%s); retrying its jobs one by one", exc)
                for job in rest:
                    await self._ingest_one(job, finished)
        self.turns_done += sum(
            len(j.payload.turns) - j.payload.progress for j in jobs if j.id in finished
        )
        return len(finished)

    async def _ingest_one(self, job: Job, finished: set[int]) -> None:
        try:
            await self._ingest_jobs([job], finished)
        except Conflict:
            await self._give_back([job])
        except Exception as exc:  # see _ingest
            await self._failed([job], exc)

    async def _ingest_jobs(self, jobs: list[Job], finished: set[int]) -> None:
        """Embed and store the jobs' turns a chunk at a time, each chunk in its own apply.

        A claim does about ``claim_turns`` of work: what is left of a large job then goes
        back to the queue with its progress saved, so the next claim (round robin) serves an
        owner whose add came meanwhile before the rest of a 256-turn import job.
        """
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
            if start and (self._stopping.is_set() or start >= share):
                await self._give_back([j for j in jobs if j.id not in finished])
                return
            part = items[start : start + chunk]
            await self._ingest_chunk(part, empty if start == 0 else [], last, finished)

    async def _ingest_chunk(
        self,
        part: Sequence[tuple[Job, int, int]],
        empty: Sequence[Job],
        last: dict[int, int],
        finished: set[int],
    ) -> None:
        turns = {t.id: t for t in await self.store.turns_by_ids([tid for _, _, tid in part])}
        said = [(job, turns[tid]) for job, _, tid in part if tid in turns]
        said = [(job, turn) for job, turn in said if turn_text(turn).strip()]
        # One embedding call per chunk: batching is where the throughput comes from. A turn
        # longer than the embedder's window goes as its passages.
        embedded = await embed_texts(self.embedder, [turn_text(turn) for _, turn in said])
        memories: list[NewMemory] = []
        for (job, turn), vectors in zip(said, embedded, strict=True):
            ids = assigned_memory_ids(job.payload)  # the ids add() already returned
            # each turn's episode carries the caller's memory_type, with or without an LLM
            (made,) = memories_from_turns(
                [turn], job.scope, [vectors.vector], job.payload.memory_type, ids
            )
            expires = job.payload.expires_at or made.expires_at
            memories.append(replace(made, expires_at=expires, passages=vectors.passages))
        jobs = {job.id: job for job, _, _ in part} | {job.id: job for job in empty}
        complete = [job for job, index, _ in part if index == last[job.id]] + list(empty)
        async with self.store.apply_jobs(list(jobs.values()), self.id, {}) as batch:
            # One insert per chunk: its rows go in one global order, so concurrent batches
            # cannot deadlock on each other's duplicates.
            await batch.insert_memories(memories, actor="worker")
            for job in complete:
                await self._follow_up(batch, job)
            for job_id in {j.id for j, _, _ in part} - {j.id for j in complete}:
                await batch.progress(job_id, max(i for j, i, _ in part if j.id == job_id) + 1)
            await batch.complete([job.id for job in complete])
        self._inserted_since_analyze += len(memories)
        self.turns_embedded += len(part)
        finished.update(job.id for job in complete)

    async def _follow_up(self, batch: JobBatch, job: Job) -> None:
        if self.consolidator is None or not job.payload.infer:
            return
        follow_up = replace(job.payload, infer=None, done=None, memory_ids=None)
        window = job.created_at + timedelta(seconds=self.config.consolidation_delay)
        await batch.enqueue(
            NewJob(kind=CONSOLIDATE_JOB, scope=job.scope, payload=follow_up),
            window,
            join_window=True,
        )

    # -- consolidate -------------------------------------------------------------------------
    async def _consolidate(self, jobs: list[Job]) -> int:
        assert self.consolidator is not None
        by_owner: dict[tuple[str | None, ...], list[Job]] = {}
        for job in sorted(jobs, key=lambda j: j.id):
            scope = fact_scope(job.scope)
            by_owner.setdefault((scope.user_id, scope.agent_id, scope.run_id), []).append(job)
        done = 0
        for owner_jobs in by_owner.values():
            done += await self._consolidate_owner(owner_jobs)
        return done

    async def _consolidate_owner(self, jobs: list[Job]) -> int:
        """One owner's calls in order; a failure backs off this owner's remaining calls only."""
        assert self.consolidator is not None
        groups = call_groups(jobs, self.config.max_turns_per_call)
        done = 0
        for n, group in enumerate(groups):
            later = [job for g in groups[n + 1 :] for job in g]
            if self._stopping.is_set():
                await self._give_back(group + later)
                break
            try:
                plan = await self.consolidator.prepare(self.store, group)
                async with self.store.apply_jobs(group, self.id, plan.read_set) as batch:
                    await self.consolidator.apply(batch, plan)
            except Conflict as exc:
                log.info("worker: consolidation lost a race (%s); giving the jobs back", exc)
                await self._give_back(group + later)
                break
            except Exception as exc:  # any failure counts toward parking this group
                retry_at = await self._failed(group, exc)
                await self._give_back(later, retry_at)  # keep the owner's order
                break
            done += len(group)
        return done
