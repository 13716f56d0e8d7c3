"""The in-process store's job queue: a plain, single-process reference of the lease rules.

Synchronous: :class:`memhub.store.inmemory.store.InMemoryStore` calls it under its lock, so a claim
is atomic by construction; it needs none of PostgreSQL's row or advisory locks. The rules are
those of :mod:`memhub.store.postgres.jobs`: leases with an expiry, attempts counted at claim time,
owners served round robin, ordered lanes handing out an owner's jobs one lease at a time.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

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

__all__ = ["JobQueue", "ScopeLocks"]


@dataclass
class _Row:
    id: int
    kind: str
    scope: Scope
    payload: dict[str, Any]
    run_after: datetime
    created_at: datetime
    status: str = "queued"
    attempts: int = 0
    last_error: str | None = None
    lease_owner: str | None = None
    lease_until: datetime | None = None

    def leased(self, now: datetime) -> bool:
        return self.lease_until is not None and self.lease_until >= now

    @property
    def owner(self) -> str:
        return self.scope.owner

    def job(self) -> Job:
        return Job.stored(
            id=self.id,
            kind=self.kind,
            scope=self.scope,
            payload=copy.deepcopy(self.payload),
            attempts=self.attempts,
            created_at=self.created_at,
            status=self.status,
            last_error=self.last_error,
        )


def _narrows(scope: Scope, row: _Row) -> bool:
    return all(getattr(row.scope, key) == value for key, value in scope.as_dict().items())


class JobQueue:
    """``memory_jobs``: jobs by id (ids only grow, so dict order is id order)."""

    def __init__(self) -> None:
        self._rows: dict[int, _Row] = {}
        self._next_id = 1

    def clear(self) -> None:
        """TRUNCATE ... RESTART IDENTITY; leases held on the old rows are lost."""
        self._rows = {}
        self._next_id = 1

    def add(
        self,
        new: NewJob,
        payload: dict[str, Any],
        now: datetime,
        run_after: datetime | None = None,
        join_window: bool = False,
    ) -> int:
        if join_window:
            open_windows = [
                row.run_after
                for row in self._rows.values()
                if row.status == "queued"
                and row.kind == new.kind
                and row.owner == new.scope.owner
                and row.lease_owner is None
            ]
            run_after = min(open_windows, default=run_after)
        row = _Row(self._next_id, new.kind, new.scope, payload, run_after or now, now)
        self._next_id += 1
        self._rows[row.id] = row
        return row.id

    def get(self, job_id: int) -> _Row | None:
        return self._rows.get(job_id)

    # -- claim -----------------------------------------------------------------------------------
    def claim(
        self,
        lane: Lane,
        limit: int,
        lease: Lease,
        now: datetime,
        after: str | None,
        *,
        turns: int | None = None,
        only: Sequence[str] | None = None,
    ) -> tuple[list[Job], str | None]:
        """Lease up to ``limit`` ready jobs of ``lane``; see :func:`postgres.jobs.claim_jobs`."""
        self._park_exhausted(lease, now)
        queued = sorted({row.owner for row in self._rows.values() if row.status == "queued"})
        if only is not None:
            queued = [o for o in queued if o in set(only)]
        owners = [o for o in queued if after is None or o > after][:limit]
        if len(owners) < limit:
            owners += [o for o in queued if o not in owners][: limit - len(owners)]
        if not owners or limit <= 0:
            return [], None
        queues: list[list[_Row]] = []
        for owner in owners:
            rows = self._takeable(owner, lane, limit, now)
            if rows and lane.after_other_lanes and self._held_back(owner, lane, rows[0]):
                continue
            queues.append(rows)
        # round robin: each owner's first job, then each one's second, ... (up to ``turns``)
        jobs = {row.id: row for rows in queues for row in rows}
        picked = round_robin([[row.job() for row in rows] for rows in queues], limit, turns)
        taken = [jobs[job.id] for job in picked]
        for row in taken:
            row.lease_owner = lease.owner
            row.lease_until = now + timedelta(seconds=lease.seconds)
            row.attempts += 1
        return [row.job() for row in taken], owners[-1]

    def _park_exhausted(self, lease: Lease, now: datetime) -> None:
        for row in self._rows.values():
            expired = row.lease_owner is not None and not row.leased(now)
            if row.status == "queued" and expired and row.attempts >= lease.max_attempts:
                note = f"lease expired after attempt {row.attempts} (worker {row.lease_owner})"
                row.last_error = f"{row.last_error}\n{note}" if row.last_error else note
                row.status, row.lease_owner, row.lease_until = "parked", None, None

    def _takeable(self, owner: str, lane: Lane, per_owner: int, now: datetime) -> list[_Row]:
        rows = [
            row
            for row in self._rows.values()
            if row.status == "queued" and row.owner == owner and lane.admits(row.kind)
        ]
        taken: list[_Row] = []
        for row in rows:
            if len(taken) == per_owner:
                break
            if row.run_after > now or row.leased(now):
                if lane.ordered:
                    break  # an ordered lane never skips ahead of an owner's older job
                continue
            taken.append(row)
        return taken

    def _held_back(self, owner: str, lane: Lane, first: _Row) -> bool:
        return any(
            row.status == "queued"
            and row.owner == owner
            and not lane.admits(row.kind)
            and row.created_at <= first.run_after
            for row in self._rows.values()
        )

    # -- leases ----------------------------------------------------------------------------------
    def holds(self, job_ids: Iterable[int], owner: str) -> list[int]:
        """The ids of ``job_ids`` whose lease ``owner`` no longer holds."""
        lost = []
        for job_id in job_ids:
            row = self._rows.get(job_id)
            if row is None or row.lease_owner != owner:
                lost.append(job_id)
        return lost

    def remove(self, job_ids: Iterable[int]) -> None:
        for job_id in job_ids:
            self._rows.pop(job_id, None)

    def release(
        self,
        job_ids: Sequence[int],
        owner: str,
        error: str | None,
        retry_at: datetime,
        max_attempts: int,
    ) -> int:
        parked = 0
        for job_id in set(job_ids):
            row = self._rows.get(job_id)
            if row is None or row.lease_owner != owner:
                continue
            row.lease_owner = row.lease_until = None
            row.run_after = retry_at
            if error is None:
                row.attempts = max(row.attempts - 1, 0)
                continue
            row.last_error = error[:4000]
            if row.attempts >= max_attempts:
                row.status = "parked"
                parked += 1
        return parked

    def leased_by(self, owner: str) -> list[int]:
        return sorted(row.id for row in self._rows.values() if row.lease_owner == owner)

    def extend(self, job_ids: Sequence[int], owner: str, until: datetime) -> int:
        held = 0
        for job_id in set(job_ids):
            row = self._rows.get(job_id)
            if row is not None and row.lease_owner == owner:
                row.lease_until = until
                held += 1
        return held

    def set_progress(self, job_id: int, done: int, until: datetime) -> None:
        row = self._rows.get(job_id)
        if row is not None:
            row.payload[JOB_DONE] = done
            row.lease_until = max(row.lease_until or until, until)

    def pending_for_turns(
        self, scope: Scope, turn_ids: Sequence[int], kinds: Sequence[str] | None
    ) -> int:
        wanted = set(turn_ids)
        return sum(
            1
            for row in self._rows.values()
            if row.status == "queued"
            and row.owner == scope.owner
            and (kinds is None or row.kind in kinds)
            and wanted.intersection(row.payload.get(JOB_TURN_IDS, []))
        )

    def pending(self, scope: Scope | None) -> int:
        narrow = scope or Scope()
        return sum(
            1 for row in self._rows.values() if row.status == "queued" and _narrows(narrow, row)
        )

    def counts(self) -> dict[str, int]:
        counts = {"queued": 0, "parked": 0}
        for row in self._rows.values():
            counts[row.status] += 1
        return counts

    def listed(self, status: str, limit: int) -> list[Job]:
        rows = [row for row in self._rows.values() if row.status == status]
        return [row.job() for row in rows[: max(limit, 0)]]

    def requeue(self, job_ids: Sequence[int] | None, now: datetime) -> int:
        wanted = None if job_ids is None else set(job_ids)
        count = 0
        for row in self._rows.values():
            if row.status == "parked" and (wanted is None or row.id in wanted):
                row.status, row.attempts, row.run_after = "queued", 0, now
                count += 1
        return count

    def delete_scope(self, scope: Scope) -> None:
        self._rows = {i: row for i, row in self._rows.items() if not _narrows(scope, row)}


class ScopeLocks:
    """Per-scope locks (PostgreSQL's advisory locks of :func:`postgres.jobs.lock_scopes`)."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    @asynccontextmanager
    async def hold(self, scopes: Sequence[Scope]) -> AsyncIterator[None]:
        """Hold every lock the scopes name, taken in one global order."""
        keys = sorted({f"{k}:{v}" for scope in scopes for k, v in scope.as_dict().items()})
        taken: list[asyncio.Lock] = []
        try:
            for key in keys:
                lock = self._locks.setdefault(key, asyncio.Lock())
                await lock.acquire()
                taken.append(lock)
            yield
        finally:
            for lock in reversed(taken):
                lock.release()
