"""The durable job queue as leases: claim and commit at once, apply per scope, reclaim on expiry.

A claim is one short transaction: it leases jobs to a worker (owner, expiry) and counts the
attempt, so a crash or any exception counts toward parking. The work then runs with no
transaction open; its results are applied by :func:`memhub.store.postgres.apply.apply_jobs` in one
short transaction that first takes the scope's lock and checks the lease and the facts it read.

Every statement on ``memory_jobs`` is here, those that run in another concern's transaction
too: a turn write queues its job in the same statement as its turns (:data:`TURNS_JOB_STEP`),
an import batch with its rows (:func:`insert_jobs`), an apply finishes, advances and follows
up its jobs (:func:`complete_jobs`, :func:`record_progress`, :func:`enqueue`). Only erasing a
scope, ``reset`` and a named space's table list name the table beside the others.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from psycopg import AsyncCursor
from psycopg.types.json import Jsonb

from memhub.store.postgres.database import AsyncConn, Database
from memhub.store.postgres.errors import translate_errors
from memhub.store.records import (
    JOB_DONE,
    JOB_TURN_IDS,
    Job,
    Lane,
    Lease,
    NewJob,
    Scope,
    round_robin,
)

__all__ = [
    "TURNS_JOB_STEP",
    "claim_jobs",
    "complete_jobs",
    "enqueue",
    "extend_leases",
    "held_leases",
    "insert_jobs",
    "job_counts",
    "list_jobs",
    "lock_scopes",
    "pending_jobs",
    "pending_turn_jobs",
    "queue_by_kind",
    "queued_jobs_among",
    "queued_jobs_with_prefix",
    "record_progress",
    "release_jobs",
    "requeue_parked",
    "take_heads",
    "turns_job_values",
]


def _job(row: Sequence[Any]) -> Job:
    return Job.stored(
        id=row[0],
        kind=row[1],
        scope=Scope(user_id=row[2], agent_id=row[3], run_id=row[4]),
        payload=row[5],
        attempts=row[6],
        created_at=row[7],
        status=row[8],
        last_error=row[9],
    )


def scope_lock_keys(scopes: Sequence[Scope]) -> list[str]:
    """One lock key per id a scope sets; erasing a scope and applying into it share a key."""
    keys = {f"{name}:{value}" for scope in scopes for name, value in scope.as_dict().items()}
    return sorted(keys)  # one global order: two lockers of overlapping sets cannot deadlock


async def lock_scopes(conn: AsyncConn, scopes: Sequence[Scope]) -> None:
    """Take the scopes' locks until the transaction ends (``delete_all`` and apply use them).

    One statement for all of them (a batch of 64 users took 64 round trips): the function scan
    yields the sorted keys in array order, so the locks are taken in that order.
    """
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended('memhub-scope:' || k, 0))"
        " FROM unnest(%s::text[]) WITH ORDINALITY AS s(k, n) ORDER BY n",
        (scope_lock_keys(scopes),),
    )


_OWNERS = (
    "WITH RECURSIVE o(owner, n) AS ("
    " (SELECT coalesce(user_id, agent_id, run_id, ''), 1 FROM memory_jobs"
    "  WHERE status = 'queued' {first} ORDER BY 1 LIMIT 1)"
    " UNION ALL"
    " SELECT (SELECT coalesce(user_id, agent_id, run_id, '') FROM memory_jobs"
    "   WHERE status = 'queued' AND coalesce(user_id, agent_id, run_id, '') > o.owner"
    "   ORDER BY 1 LIMIT 1), o.n + 1"
    " FROM o WHERE o.owner IS NOT NULL AND o.n < %(limit)s"
    ") SELECT owner FROM o WHERE owner IS NOT NULL"
)
_OWNERS_FROM_START = _OWNERS.replace("{first}", "")
_OWNERS_AFTER = _OWNERS.replace(
    "{first}", "AND coalesce(user_id, agent_id, run_id, '') > %(after)s"
)


# -- claim ---------------------------------------------------------------------------------------
async def _park_exhausted(conn: AsyncConn, lease: Lease) -> None:
    # A lease that expired after the last allowed attempt: the worker died or hung every time.
    await conn.execute(
        "UPDATE memory_jobs SET status = 'parked', lease_owner = NULL, lease_until = NULL,"
        " last_error = coalesce(last_error || E'\\n', '') || 'lease expired after attempt '"
        " || attempts || ' (worker ' || lease_owner || ' died or hung)'"
        " WHERE lease_owner IS NOT NULL AND lease_until < now() AND attempts >= %s",
        (lease.max_attempts,),
    )


async def _owners(conn: AsyncConn, after: str | None, limit: int) -> list[str]:
    """Up to ``limit`` distinct owners with queued jobs, in order, starting after ``after``.

    A loose index scan on ``memory_jobs_owner``: one probe per owner, whatever their backlogs,
    so a user with 100k queued jobs costs the same as one with a single job.
    """
    cur = await conn.execute(
        _OWNERS_AFTER if after is not None else _OWNERS_FROM_START,
        {"after": after, "limit": limit},
    )
    return [str(row[0]) for row in await cur.fetchall()]


async def _lane_heads(
    conn: AsyncConn, owners: Sequence[str], lane: Lane, per_owner: int
) -> list[tuple[Job, bool, bool, datetime]]:
    """Each owner's first ``per_owner`` queued jobs of the lane: (job, ready, leased, run_after).

    An unordered lane skips jobs that are not ready; an ordered one sees its queue's head.
    """
    cur = await conn.execute(
        "SELECT j.* FROM unnest(%(owners)s::text[]) AS o(owner) CROSS JOIN LATERAL ("
        " SELECT id, kind, user_id, agent_id, run_id, payload, attempts, created_at, status,"
        "  last_error, run_after <= now(),"
        "  lease_owner IS NOT NULL AND lease_until >= now(), run_after"
        " FROM memory_jobs WHERE status = 'queued'"
        "  AND coalesce(user_id, agent_id, run_id, '') = o.owner"
        "  AND (kind = ANY(%(kinds)s)) <> %(exclude)s"
        "  AND (%(ordered)s OR (run_after <= now()"
        "   AND (lease_owner IS NULL OR lease_until < now())))"
        " ORDER BY id LIMIT %(n)s) j",
        {
            "owners": list(owners),
            "kinds": list(lane.kinds),
            "exclude": lane.exclude,
            "ordered": lane.ordered,
            "n": per_owner,
        },
    )
    return [(_job(row), bool(row[10]), bool(row[11]), row[12]) for row in await cur.fetchall()]


async def _held_back(conn: AsyncConn, windows: Mapping[str, datetime], lane: Lane) -> set[str]:
    """Owners with queued jobs of other lanes created before their window closed."""
    if not windows:
        return set()
    cur = await conn.execute(
        "SELECT DISTINCT w.owner FROM unnest(%s::text[], %s::timestamptz[]) AS w(owner, closes)"
        " JOIN memory_jobs j ON j.status = 'queued' AND coalesce(j.user_id, j.agent_id,"
        " j.run_id, '') = w.owner AND (j.kind = ANY(%s)) = %s AND j.created_at <= w.closes",
        (list(windows), list(windows.values()), list(lane.kinds), lane.exclude),
    )
    return {str(row[0]) for row in await cur.fetchall()}


def take_heads(
    heads: Sequence[tuple[Job, bool, bool, datetime]], ordered: bool
) -> tuple[dict[str, list[Job]], dict[str, datetime]]:
    """The jobs a claim may take per owner, and when each owner's first taken job became ready.

    Ordered lanes take each owner's queue head up to the first job that is leased (someone
    works on the owner) or not yet ready (a retry backoff or an open consolidation window).
    """
    taken: dict[str, list[Job]] = {}
    ready_at: dict[str, datetime] = {}
    blocked: set[str] = set()
    for job, ready, leased, run_after in heads:
        owner = job.owner
        if owner in blocked:
            continue
        if not ready or leased:
            if ordered:
                blocked.add(owner)
            continue
        taken.setdefault(owner, []).append(job)
        ready_at.setdefault(owner, run_after)
    return taken, ready_at


async def _lease(conn: AsyncConn, jobs: Sequence[Job], lease: Lease) -> list[Job]:
    # The WHERE is evaluated again on rows a concurrent claim changed meanwhile: a job leased
    # by someone else since our read is skipped, never taken twice.
    cur = await conn.execute(
        "UPDATE memory_jobs SET lease_owner = %s, lease_until = now() + %s * interval '1 second',"
        " attempts = attempts + 1 WHERE id = ANY(%s) AND status = 'queued'"
        " AND (lease_owner IS NULL OR lease_until < now()) RETURNING id",
        (lease.owner, lease.seconds, [job.id for job in jobs]),
    )
    leased = {int(row[0]) for row in await cur.fetchall()}
    return [replace(j, attempts=j.attempts + 1) for j in jobs if j.id in leased]


async def _lock_owners(conn: AsyncConn, owners: Sequence[str], lane: Lane) -> list[str]:
    cur = await conn.execute(
        "SELECT o FROM unnest(%s::text[]) AS o WHERE pg_try_advisory_xact_lock("
        " hashtextextended('memhub-claim:' || %s || ':' || o, 0))",
        (sorted(owners), lane.name),
    )
    return [str(row[0]) for row in await cur.fetchall()]


async def _next_owners(
    conn: AsyncConn, after: str | None, limit: int, only: Sequence[str] | None
) -> list[str]:
    """The owners a claim visits: round robin from ``after``, or those of ``only`` that have
    queued jobs (one index probe each on ``memory_jobs_owner``)."""
    if only is not None:
        cur = await conn.execute(
            "SELECT o FROM unnest(%s::text[]) AS o WHERE EXISTS (SELECT 1 FROM memory_jobs"
            " WHERE status = 'queued' AND coalesce(user_id, agent_id, run_id, '') = o)"
            " ORDER BY o LIMIT %s",
            (sorted(set(only)), limit),
        )
        return [str(row[0]) for row in await cur.fetchall()]
    owners = await _owners(conn, after, limit)
    if len(owners) < limit and after is not None:  # wrap around to the start
        owners += [o for o in await _owners(conn, None, limit) if o not in owners]
    return owners[:limit]


async def claim_jobs(
    database: Database,
    lane: Lane,
    limit: int,
    lease: Lease,
    after: str | None,
    *,
    turns: int | None = None,
    only: Sequence[str] | None = None,
) -> tuple[list[Job], str | None]:
    """Lease up to ``limit`` ready jobs of ``lane``, fairly across owners; commits at once.

    Owners are visited round robin from ``after`` (the last owner the previous claim served),
    each getting an equal share of ``limit`` (and of ``turns``, see :func:`round_robin`).
    ``only`` restricts the claim to those owners (an exit finishing its own work). Returns
    the jobs and the new cursor.
    """
    with translate_errors("claiming background jobs"):
        async with database.connection() as conn, conn.transaction():
            await _park_exhausted(conn, lease)
            owners = await _next_owners(conn, after, limit, only)
            if not owners:
                return [], None
            cursor = owners[-1]
            if lane.ordered:
                # One claimer per owner at a time; the read below then sees its leases.
                owners = await _lock_owners(conn, owners, lane)
            jobs = await _fair_share(conn, owners, lane, limit, turns)
            return (await _lease(conn, jobs, lease) if jobs else []), cursor


async def _fair_share(
    conn: AsyncConn, owners: Sequence[str], lane: Lane, limit: int, turns: int | None
) -> list[Job]:
    """The jobs :func:`round_robin` picks from the owners' takeable queue heads.

    Read first ``limit / len(owners)`` heads per owner: with a backlog spread over many owners
    that is all a claim takes, where reading ``limit`` each read (and decoded the payloads of)
    up to ``limit`` squared rows. Only when that falls short while an owner may have more (it
    gave its whole share) are ``limit`` heads per owner read, so the pick is the same.
    """
    if not owners:
        return []
    per_owner = -(-limit // len(owners))
    while True:
        heads = await _lane_heads(conn, owners, lane, per_owner)
        taken, ready_at = take_heads(heads, lane.ordered)
        if lane.after_other_lanes:
            for owner in await _held_back(conn, ready_at, lane):
                taken.pop(owner, None)
        jobs = round_robin([taken.get(owner, []) for owner in owners], limit, turns)
        # An owner gave fewer than its share only when it has no more takeable jobs (an
        # ordered lane stops at its first leased or waiting job), so reading deeper cannot
        # change a full pick: every job it adds comes after the last one picked.
        more = any(len(queue) == per_owner for queue in taken.values())
        full = turns is not None and sum(job.work for job in jobs) >= turns
        if len(jobs) == limit or full or per_owner >= limit or not more:
            return jobs
        per_owner = limit


async def release_jobs(
    conn: AsyncConn,
    job_ids: Sequence[int],
    owner: str,
    error: str | None,
    retry_at: datetime,
    max_attempts: int,
) -> int:
    """End ``owner``'s lease: failed (``error``; parked at ``max_attempts``) or given back.

    A job given back (``error`` None) has its attempt refunded: it did not fail.
    """
    cur = await conn.execute(
        "UPDATE memory_jobs SET lease_owner = NULL, lease_until = NULL, run_after = %(at)s,"
        " last_error = coalesce(%(error)s, last_error),"
        " attempts = CASE WHEN %(error)s::text IS NULL THEN greatest(attempts - 1, 0)"
        "  ELSE attempts END,"
        " status = CASE WHEN %(error)s::text IS NOT NULL AND attempts >= %(max)s THEN 'parked'"
        "  ELSE 'queued' END"
        " WHERE id = ANY(%(ids)s) AND lease_owner = %(owner)s RETURNING status",
        {
            "at": retry_at,
            "error": None if error is None else error[:4000],
            "max": max_attempts,
            "ids": list(job_ids),
            "owner": owner,
        },
    )
    return sum(1 for (status,) in await cur.fetchall() if status == "parked")


async def extend_leases(conn: AsyncConn, job_ids: Sequence[int], owner: str, seconds: float) -> int:
    """Keep ``owner``'s leases alive ``seconds`` more; returns how many it still holds."""
    cur = await conn.execute(
        "UPDATE memory_jobs SET lease_until = now() + %s * interval '1 second'"
        " WHERE id = ANY(%s) AND lease_owner = %s",
        (seconds, list(job_ids), owner),
    )
    return cur.rowcount


async def leased_job_ids(conn: AsyncConn, owner: str) -> list[int]:
    """The jobs ``owner`` leases (a stopped worker's: a few rows, read once at its exit)."""
    cur = await conn.execute(
        "SELECT id FROM memory_jobs WHERE lease_owner = %s ORDER BY id", (owner,)
    )
    return [int(row[0]) for row in await cur.fetchall()]


# -- writes that share another concern's transaction -------------------------------------------
#: The job of a turn write, queued in the same statement as its turns
#: (``conversations.append_turns``): a step of that statement's ``WITH``, reading its ``new``
#: rows and the ``turns`` they became; the job's turn ids are the turns kept long-term.
TURNS_JOB_STEP = (
    ", job AS ("
    " INSERT INTO memory_jobs (kind, user_id, agent_id, run_id, payload)"
    " SELECT %(kind)s, %(job_user_id)s, %(job_agent_id)s, %(job_run_id)s,"
    "  %(payload)s::jsonb || jsonb_build_object(%(turn_ids_key)s::text,"
    "  coalesce(jsonb_agg(t.id ORDER BY t.id) FILTER (WHERE new.long_term), '[]'::jsonb))"
    " FROM turns t JOIN new USING (ord))"
)


def _payload(job: NewJob) -> Jsonb:
    """``job``'s payload as the ``memory_jobs.payload`` column binds it."""
    return Jsonb(job.payload.to_json())


def turns_job_values(job: NewJob) -> dict[str, Any]:
    """The values :data:`TURNS_JOB_STEP` binds."""
    return {
        "kind": job.kind,
        "job_user_id": job.scope.user_id,
        "job_agent_id": job.scope.agent_id,
        "job_run_id": job.scope.run_id,
        "payload": _payload(job),
        "turn_ids_key": JOB_TURN_IDS,
    }


async def insert_jobs(cur: AsyncCursor[Any], jobs: Sequence[NewJob]) -> list[int]:
    """Queue ``jobs`` in the cursor's transaction (an import batch's); returns their ids."""
    if not jobs:
        return []
    await cur.executemany(
        "INSERT INTO memory_jobs (kind, user_id, agent_id, run_id, payload)"
        " VALUES (%s, %s, %s, %s, %s) RETURNING id",
        [
            (
                j.kind,
                *(j.scope.user_id, j.scope.agent_id, j.scope.run_id),
                _payload(j),
            )
            for j in jobs
        ],
        returning=True,
    )
    job_ids: list[int] = []
    while True:
        job_ids += [int(row[0]) for row in await cur.fetchall()]
        if not cur.nextset():
            break
    return job_ids


async def held_leases(conn: AsyncConn, job_ids: Sequence[int], owner: str) -> set[int]:
    """Those of ``job_ids`` ``owner`` still leases, locked until the transaction ends (an apply
    checks its lease before it writes)."""
    cur = await conn.execute(
        "SELECT id FROM memory_jobs WHERE id = ANY(%s) AND lease_owner = %s FOR UPDATE",
        (list(job_ids), owner),
    )
    return {int(row[0]) for row in await cur.fetchall()}


async def complete_jobs(conn: AsyncConn, job_ids: Sequence[int]) -> None:
    """Remove finished jobs from the queue."""
    await conn.execute("DELETE FROM memory_jobs WHERE id = ANY(%s)", (list(job_ids),))


async def record_progress(conn: AsyncConn, job_id: int, done: int) -> None:
    """Record that the first ``done`` turns of a job are stored (large jobs go in parts)."""
    await conn.execute(
        "UPDATE memory_jobs SET payload = jsonb_set(payload, %s::text[], to_jsonb(%s::int)),"
        " lease_until = greatest(lease_until, now() + interval '30 seconds') WHERE id = %s",
        ([JOB_DONE], done, job_id),
    )


async def enqueue(
    conn: AsyncConn, job: NewJob, run_after: datetime | None, join_window: bool
) -> None:
    """Queue a follow-up job in the current transaction.

    With ``join_window`` it runs with the owner's earliest queued, unleased job of its kind
    (when there is one) instead of at ``run_after``: turns that arrive while a consolidation
    window is open share its call.
    """
    await conn.execute(
        "INSERT INTO memory_jobs (kind, user_id, agent_id, run_id, payload, run_after)"
        " VALUES (%(kind)s, %(u)s, %(a)s, %(r)s, %(payload)s, coalesce("
        "  (SELECT min(run_after) FROM memory_jobs WHERE %(join)s AND status = 'queued'"
        "   AND coalesce(user_id, agent_id, run_id, '') = %(owner)s AND kind = %(kind)s"
        "   AND lease_owner IS NULL),"
        "  %(at)s, now()))",
        {
            "kind": job.kind,
            "u": job.scope.user_id,
            "a": job.scope.agent_id,
            "r": job.scope.run_id,
            "payload": _payload(job),
            "join": join_window,
            "owner": job.scope.owner,
            "at": run_after,
        },
    )


# -- reading the queue ---------------------------------------------------------------------------
async def queued_jobs_among(
    conn: AsyncConn, job_ids: Sequence[int] | None, owners: Sequence[str] | None
) -> int:
    """Queued jobs among ``job_ids`` (by primary key) or of ``owners`` (on their index)."""
    cur = await conn.execute(
        "SELECT count(*) FROM memory_jobs WHERE status = 'queued'"
        " AND (%(ids)s::bigint[] IS NULL OR id = ANY(%(ids)s))"
        " AND (%(owners)s::text[] IS NULL"
        "  OR coalesce(user_id, agent_id, run_id, '') = ANY(%(owners)s))",
        {
            "ids": None if job_ids is None else list(job_ids),
            "owners": None if owners is None else list(owners),
        },
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


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


async def pending_turn_jobs(
    conn: AsyncConn, scope: Scope, turn_ids: Sequence[int], kinds: Sequence[str] | None
) -> int:
    """Queued jobs of ``scope``'s owner about any of ``turn_ids`` (of ``kinds``, or any)."""
    owner = scope.owner
    cur = await conn.execute(
        "SELECT count(*) FROM memory_jobs WHERE status = 'queued'"
        " AND coalesce(user_id, agent_id, run_id, '') = %s"
        " AND (%s::text[] IS NULL OR kind = ANY(%s)) AND EXISTS ("
        "  SELECT 1 FROM unnest(%s::bigint[]) AS t(id)"
        "  WHERE payload -> %s::text @> to_jsonb(ARRAY[t.id]))",
        (owner, kinds and list(kinds), kinds and list(kinds), list(turn_ids), JOB_TURN_IDS),
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


async def job_counts(conn: AsyncConn) -> dict[str, int]:
    """Background jobs per status (``queued``, ``parked``)."""
    cur = await conn.execute("SELECT status, count(*) FROM memory_jobs GROUP BY status")
    counts = {"queued": 0, "parked": 0}
    counts.update({str(status): int(n) for status, n in await cur.fetchall()})
    return counts


async def queue_by_kind(conn: AsyncConn) -> dict[str, dict[str, int]]:
    """``{kind: {"queued", "running", "parked", "oldest_queued_seconds"}}``.

    ``running`` counts queued jobs under an unexpired lease (a worker has them);
    ``oldest_queued_seconds`` is how long the oldest queued job has waited (0 when none).
    """
    cur = await conn.execute(
        "SELECT kind, count(*) FILTER (WHERE status = 'queued'),"
        " count(*) FILTER (WHERE status = 'queued' AND lease_until > now()),"
        " count(*) FILTER (WHERE status = 'parked'),"
        " coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE status = 'queued')),"
        "  0)::bigint"
        " FROM memory_jobs GROUP BY kind ORDER BY kind"
    )
    return {
        str(kind): {
            "queued": int(queued),
            "running": int(running),
            "parked": int(parked),
            "oldest_queued_seconds": int(oldest),
        }
        for kind, queued, running, parked, oldest in await cur.fetchall()
    }


async def queued_jobs_with_prefix(conn: AsyncConn, prefix: str, cap: int) -> int:
    """Queued jobs whose owner id starts with ``prefix``, counted up to ``cap + 1`` at most.

    The inner LIMIT bounds the work to the cap, however long the tenant's backlog is.
    """
    cur = await conn.execute(
        "SELECT count(*) FROM (SELECT 1 FROM memory_jobs WHERE status = 'queued'"
        " AND starts_with(coalesce(user_id, agent_id, run_id, ''), %(prefix)s)"
        " LIMIT %(cap)s) AS backlog",
        {"prefix": prefix, "cap": cap + 1},
    )
    row = await cur.fetchone()
    return int(row[0]) if row else 0


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
