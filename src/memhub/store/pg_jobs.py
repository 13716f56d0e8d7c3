"""The durable job queue: claim with ``SKIP LOCKED``, keep each owner's jobs in order.

A claimed batch lives in one transaction that also holds the results, so a worker that dies
mid-batch simply rolls back: its jobs are queued again and nothing is half-written.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from memhub.filters import Filter
from memhub.store import pg_consolidation, pg_conversations, pg_memories
from memhub.store.database import AsyncConn, Database
from memhub.store.errors import translate_errors
from memhub.store.records import Candidate, Job, Lane, NewJob, NewMemory, Scope, Turn

__all__ = [
    "PgJobBatch",
    "claim_jobs",
    "fail_jobs",
    "job_counts",
    "list_jobs",
    "pending_jobs",
    "requeue_parked",
]


def _job(row: Sequence[Any]) -> Job:
    return Job(
        id=row[0],
        kind=row[1],
        scope=Scope(user_id=row[2], agent_id=row[3], run_id=row[4]),
        payload=row[5],
        attempts=row[6],
        created_at=row[7],
        status=row[8],
        last_error=row[9],
    )


def _owner(job: Job) -> str:
    return job.scope.user_id or job.scope.agent_id or job.scope.run_id or ""


@dataclass
class PgJobBatch:
    """Jobs claimed in the open transaction of ``conn``."""

    conn: AsyncConn
    jobs: list[Job]

    async def turns(self, ids: Sequence[int]) -> list[Turn]:
        return await pg_conversations.turns_by_ids(self.conn, ids)

    async def insert_memories(self, memories: Sequence[NewMemory], actor: str) -> list[UUID | None]:
        return await pg_memories.insert_memories(self.conn, memories, actor)

    async def complete(self, job_ids: Sequence[int]) -> None:
        await self.conn.execute("DELETE FROM memory_jobs WHERE id = ANY(%s)", (list(job_ids),))

    async def enqueue(self, job: NewJob, run_after: datetime | None) -> None:
        await pg_consolidation.enqueue_job(self.conn, job, run_after)

    async def related(
        self, scope: Scope, text: str, vector: Any, k: int, filters: Filter | None
    ) -> list[Candidate]:
        return await pg_memories.search_candidates(
            self.conn, scope, text, vector, k, filters, False
        )

    async def refine(
        self,
        scope: Scope,
        memory_id: UUID,
        text: str,
        hash_: str,
        vector: Any,
        turn_ids: Sequence[int],
    ) -> bool:
        return await pg_consolidation.refine_memory(
            self.conn, scope, memory_id, text, hash_, vector, turn_ids
        )

    async def supersede(
        self, scope: Scope, old_id: UUID, new: NewMemory, closed_at: datetime
    ) -> UUID:
        return await pg_consolidation.supersede_memory(self.conn, scope, old_id, new, closed_at)

    async def forget(self, scope: Scope, memory_id: UUID, turn_ids: Sequence[int]) -> None:
        await pg_consolidation.forget_memory(self.conn, scope, memory_id, turn_ids)

    async def retire_turn_memories(self, scope: Scope, turn_ids: Sequence[int]) -> int:
        return await pg_consolidation.retire_turn_memories(self.conn, scope, turn_ids)

    async def record_usage(
        self,
        scope: Scope,
        model: str,
        usage: dict[str, int],
        turns: int,
        jobs: int,
        operations: dict[str, int],
    ) -> None:
        await pg_consolidation.record_usage(self.conn, scope, model, usage, turns, jobs, operations)


async def _claim(conn: AsyncConn, limit: int, lane: Lane) -> list[Job]:
    cur = await conn.execute(
        "SELECT id, kind, user_id, agent_id, run_id, payload, attempts, created_at, status,"
        " last_error FROM memory_jobs WHERE status = 'queued' AND run_after <= now()"
        " AND (kind = ANY(%s)) <> %s ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED",
        (list(lane.kinds), lane.exclude, limit),
    )
    jobs = [_job(row) for row in await cur.fetchall()]
    if not jobs or not lane.ordered:
        return jobs
    owners = sorted({_owner(job) for job in jobs})
    # An owner is ours if we hold its lock and no older job of it is queued outside our claim
    # (held by another worker, or waiting for a retry): that keeps each owner's jobs in order.
    # Each lane (set of kinds) is ordered on its own, so a slow LLM step never delays the
    # step that makes turns searchable.
    first = {owner: min(j.id for j in jobs if _owner(j) == owner) for owner in owners}
    cur = await conn.execute(
        "SELECT o.owner FROM unnest(%s::text[], %s::bigint[]) AS o(owner, first_id)"
        " WHERE pg_try_advisory_xact_lock("
        "   hashtextextended('memhub-owner:' || %s || ':' || o.owner, 0))"
        " AND NOT EXISTS (SELECT 1 FROM memory_jobs j WHERE j.status = 'queued'"
        "   AND coalesce(j.user_id, j.agent_id, j.run_id, '') = o.owner AND j.id < o.first_id"
        "   AND (j.kind = ANY(%s)) <> %s)",
        (owners, [first[o] for o in owners], lane.name, list(lane.kinds), lane.exclude),
    )
    mine = {str(row[0]) for row in await cur.fetchall()}
    return [job for job in jobs if _owner(job) in mine]


@asynccontextmanager
async def claim_jobs(database: Database, limit: int, lane: Lane) -> AsyncIterator[PgJobBatch]:
    """Claim up to ``limit`` jobs of ``lane``; leaving normally commits the batch's work."""
    with translate_errors("claiming background jobs"):
        async with database.connection() as conn, conn.transaction():
            yield PgJobBatch(conn=conn, jobs=await _claim(conn, limit, lane))


async def fail_jobs(
    conn: AsyncConn, job_ids: Sequence[int], error: str, retry_at: datetime, max_attempts: int
) -> int:
    cur = await conn.execute(
        "UPDATE memory_jobs SET attempts = attempts + 1, last_error = %s, run_after = %s,"
        " status = CASE WHEN attempts + 1 >= %s THEN 'parked' ELSE 'queued' END"
        " WHERE id = ANY(%s) RETURNING status",
        (error[:4000], retry_at, max_attempts, list(job_ids)),
    )
    return sum(1 for (status,) in await cur.fetchall() if status == "parked")


async def pending_jobs(conn: AsyncConn, scope: Scope | None) -> int:
    scope = scope or Scope()
    cur = await conn.execute(
        "SELECT count(*) FROM memory_jobs WHERE status = 'queued'"
        " AND (%(u)s::text IS NULL OR user_id = %(u)s)"
        " AND (%(a)s::text IS NULL OR agent_id = %(a)s)"
        " AND (%(r)s::text IS NULL OR run_id = %(r)s)",
        {"u": scope.user_id, "a": scope.agent_id, "r": scope.run_id},
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def job_counts(conn: AsyncConn) -> dict[str, int]:
    """Background jobs per status (``queued``, ``parked``)."""
    cur = await conn.execute("SELECT status, count(*) FROM memory_jobs GROUP BY status")
    counts = {"queued": 0, "parked": 0}
    counts.update({str(status): int(n) for status, n in await cur.fetchall()})
    return counts


async def list_jobs(conn: AsyncConn, status: str, limit: int) -> list[Job]:
    cur = await conn.execute(
        "SELECT id, kind, user_id, agent_id, run_id, payload, attempts, created_at, status,"
        " last_error FROM memory_jobs WHERE status = %s ORDER BY id LIMIT %s",
        (status, limit),
    )
    return [_job(row) for row in await cur.fetchall()]


async def requeue_parked(conn: AsyncConn, job_ids: Sequence[int] | None) -> int:
    cur = await conn.execute(
        "UPDATE memory_jobs SET status = 'queued', attempts = 0, run_after = now()"
        " WHERE status = 'parked' AND (%s::bigint[] IS NULL OR id = ANY(%s))",
        (None if job_ids is None else list(job_ids), None if job_ids is None else list(job_ids)),
    )
    return cur.rowcount
