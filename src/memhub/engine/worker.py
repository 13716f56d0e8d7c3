"""The background worker: the loop that leases queued jobs and hands them to their lane.

Two lanes: ``ingest`` embeds turns and stores them as memories (fast, no LLM; see
``engine/ingest_lane.py``), so they are searchable at once; with an LLM configured it also
queues ``consolidate`` jobs, which add the facts drawn from those turns beside them
(``engine/consolidate_lane.py``). Every job goes through three phases (claim, work with
nothing held open, apply in one short transaction), so a failure or a crash costs its own
scope a retry, nobody else. Any exception counts toward parking (``engine/leases.py``); a job
that keeps failing is parked, never dropped. Between batches the worker runs its
housekeeping (``engine/maintenance.py``).

This module keeps the loop, the claims and their heartbeat, shutdown and hand-back.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memhub._cpu import bulk, owned_by
from memhub.embed.base import Embedder
from memhub.engine.consolidate import CONSOLIDATE_JOB, Consolidator
from memhub.engine.consolidate_lane import ConsolidationLane
from memhub.engine.ingest import INGEST_JOB
from memhub.engine.ingest_lane import IngestConfig, IngestLane
from memhub.engine.leases import Backoff, JobReturns
from memhub.engine.maintenance import Maintenance, MaintenanceConfig
from memhub.errors import StoreUnavailable
from memhub.store.protocol import Store
from memhub.store.records import Job, Lane, Lease
from memhub.telemetry import instruments, operation, queue_depth

__all__ = ["CONSOLIDATE_LANE", "Worker", "WorkerConfig", "ingest_lane", "standalone_concurrency"]

log = logging.getLogger("memhub.worker")

# Consolidation of an owner waits for the turns of its window to be ingested first.
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
        retired_retention_days: Memories a model retired are erased this many days later.
        purge_interval: Seconds between a worker's purges of retired and expired memories.
        purge_batch: Rows one purge statement deletes at most.
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
    purge_interval: float = 60.0
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
        self.jobs_done = 0  # counters for `memhub worker`'s progress line
        self._abandoned: set[int] = set()  # leases cancelled work left: hand_back() ends them
        self.returns = JobReturns(
            store, self.id, config.max_attempts, Backoff(config.backoff_base, config.backoff_max)
        )
        self.maintenance = Maintenance(
            store,
            MaintenanceConfig(
                config.retired_retention_days, config.purge_interval, config.purge_batch
            ),
        )
        self.ingest = IngestLane(
            store,
            embedder,
            IngestConfig(config.ingest_chunk, config.claim_turns, config.consolidation_delay),
            self.returns,
            self.maintenance,
            holder=self.id,
            consolidating=consolidator is not None,
            stopping=self._stopping,
        )
        self.consolidation = (
            None
            if consolidator is None
            else ConsolidationLane(
                store,
                consolidator,
                self.returns,
                holder=self.id,
                max_turns_per_call=config.max_turns_per_call,
                stopping=self._stopping,
            )
        )

    @property
    def failed(self) -> int:
        """Failed attempts this worker counted."""
        return self.returns.failed

    @property
    def turns_done(self) -> int:
        """Turns of the ingest jobs this worker finished."""
        return self.ingest.turns_done

    @property
    def turns_embedded(self) -> int:
        """Turns this worker embedded and stored (counted per chunk)."""
        return self.ingest.turns_embedded

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
        if self.consolidation is not None and not self._stopping.is_set():
            done += await self._lane(CONSOLIDATE_LANE)
        if not self._stopping.is_set():
            await self.maintenance.run()
        return done

    async def run_for(self, owners: Sequence[str]) -> int:
        """Claim and process one batch per lane of ``owners``' jobs only (:attr:`Scope.owner`
        values): an import embedding its own users, never another user's backlog."""
        done = await self._lane(ingest_lane(self.consolidator is not None), owners)
        if self.consolidation is not None:
            done += await self._lane(CONSOLIDATE_LANE, owners)
        return done

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
                    error: Exception = ValueError(f"unknown job kind {job.kind!r}")
                    await self.returns.failed_attempt([job], error)
                elif job.payload_error is not None:  # read at claim: fails as any attempt
                    await self.returns.failed_attempt([job], TypeError(job.payload_error))
                else:
                    continue
                failed.add(job.id)
            known = [job for job in jobs if job.id not in failed]
            if not known:
                return 0
            if known[0].kind == CONSOLIDATE_JOB:
                assert self.consolidation is not None  # its lane is claimed only then
                return await self.consolidation.work(known)
            with operation("ingest", {"memhub.jobs": len(known)}):
                return await self.ingest.work(known)

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
