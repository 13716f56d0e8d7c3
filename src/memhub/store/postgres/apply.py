"""The apply phase of leased jobs: one short transaction, checked, under the scopes' locks.

:func:`apply_jobs` takes the scope locks ``delete_all`` takes, checks the leases are still the
worker's and the facts its work read are unchanged, then hands out a :class:`PgJobBatch`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from memhub.errors import Conflict
from memhub.store.postgres.consolidation import PgConsolidationWrites, batch_step
from memhub.store.postgres.database import AsyncConn, Database
from memhub.store.postgres.errors import translate_errors
from memhub.store.postgres.jobs import (
    complete_jobs,
    enqueue,
    held_leases,
    lock_scopes,
    record_progress,
)
from memhub.store.postgres.memories import fill_vectors
from memhub.store.records import FilledVector, Job, NewJob

__all__ = ["PgJobBatch", "apply_jobs"]


@dataclass
class PgJobBatch(PgConsolidationWrites):
    """The apply phase of leased jobs: their results, written in one transaction of ``conn``."""

    jobs: list[Job]

    @batch_step
    async def fill_vectors(self, filled: Sequence[FilledVector]) -> int:
        """Vectors and passages for memories written without a vector; returns how many."""
        return await fill_vectors(self.conn, filled)

    @batch_step
    async def complete(self, job_ids: Sequence[int]) -> None:
        """Remove finished jobs from the queue."""
        await complete_jobs(self.conn, job_ids)

    @batch_step
    async def progress(self, job_id: int, done: int) -> None:
        """Record that the first ``done`` turns of a job are stored (large jobs go in parts)."""
        await record_progress(self.conn, job_id, done)

    @batch_step
    async def enqueue(self, job: NewJob, run_after: datetime | None, join_window: bool) -> None:
        """Queue a follow-up job in the current transaction (:func:`jobs.enqueue`)."""
        await enqueue(self.conn, job, run_after, join_window)


async def _check_lease(conn: AsyncConn, jobs: Sequence[Job], owner: str) -> None:
    held = await held_leases(conn, [job.id for job in jobs], owner)
    lost = sorted({job.id for job in jobs} - held)
    if lost:
        raise Conflict(f"lease of jobs {lost} lost (erased, or reclaimed after expiry)")


async def _check_read_set(conn: AsyncConn, read_set: Mapping[UUID, str]) -> None:
    if not read_set:
        return
    cur = await conn.execute(
        "SELECT id, hash FROM memories WHERE id = ANY(%s) AND valid_to IS NULL FOR UPDATE",
        (list(read_set),),
    )
    now = {row[0]: str(row[1]) for row in await cur.fetchall()}
    changed = [str(k) for k, v in read_set.items() if now.get(k) != v]
    if changed:
        raise Conflict(f"facts {changed} changed since they were read")


@asynccontextmanager
async def apply_jobs(
    database: Database, jobs: Sequence[Job], owner: str, read_set: Mapping[UUID, str]
) -> AsyncIterator[PgJobBatch]:
    """One transaction for the results of leased ``jobs``; leaving normally commits.

    It takes the jobs' scope locks (which ``delete_all`` also takes), then raises
    :class:`Conflict` if the lease is no longer ``owner``'s or a fact of ``read_set`` (id ->
    hash of a current fact) changed since the work read it.
    """
    with translate_errors("applying background jobs"):
        async with database.connection() as conn, conn.transaction():
            await lock_scopes(conn, [job.scope for job in jobs])
            await _check_lease(conn, jobs, owner)
            await _check_read_set(conn, read_set)
            batch = PgJobBatch(conn=conn, jobs=list(jobs))
            try:
                yield batch
            finally:
                batch.closed = True
