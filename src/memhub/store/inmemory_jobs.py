"""The in-process store's job queue: PostgreSQL's claim, retry and parking rules, without I/O.

Synchronous: :class:`memhub.store.inmemory.InMemoryStore` calls it under its lock. A claim
marks the rows it selected (``FOR UPDATE SKIP LOCKED``) and the owners it locked (the advisory
lock of :mod:`memhub.store.pg_jobs`) with its batch number until the batch is released.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memhub.store.records import Job, Lane, NewJob, Scope

__all__ = ["JobQueue"]


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
    claimed_by: int | None = None

    @property
    def owner(self) -> str:
        # coalesce(user_id, agent_id, run_id, '') as in the SQL
        for value in (self.scope.user_id, self.scope.agent_id, self.scope.run_id):
            if value is not None:
                return value
        return ""

    def job(self) -> Job:
        return Job(
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
        self._owners: dict[tuple[str, str], int] = {}  # (lane, owner) -> batch
        self._next_id = 1

    def clear(self) -> None:
        """TRUNCATE ... RESTART IDENTITY; open batches lose their claims."""
        self._rows = {}
        self._owners = {}
        self._next_id = 1

    def reserve_id(self) -> int:
        """A job id for :meth:`add` later (BIGSERIAL hands ids out before the commit)."""
        self._next_id += 1
        return self._next_id - 1

    def add(
        self,
        new: NewJob,
        payload: dict[str, Any],
        now: datetime,
        run_after: datetime | None = None,
        job_id: int | None = None,
    ) -> int:
        row = _Row(
            job_id or self.reserve_id(),
            new.kind,
            new.scope,
            payload,
            run_after=run_after or now,
            created_at=now,
        )
        late = bool(self._rows) and row.id < next(reversed(self._rows))
        self._rows[row.id] = row
        if late:  # a reserved id committed after newer jobs: keep dict order = id order
            self._rows = dict(sorted(self._rows.items()))
        return row.id

    def claim(self, batch: int, limit: int, lane: Lane, now: datetime) -> list[Job]:
        """The jobs a new batch may take; see :func:`memhub.store.pg_jobs._claim`."""
        if limit <= 0:
            return []
        selected: list[_Row] = []
        for row in self._rows.values():
            if (
                row.status == "queued"
                and lane.admits(row.kind)
                and row.run_after <= now
                and row.claimed_by is None
            ):
                selected.append(row)
                if len(selected) == limit:
                    break
        for row in selected:
            row.claimed_by = batch  # FOR UPDATE holds every selected row, taken or not
        if not lane.ordered:
            return [row.job() for row in selected]
        first: dict[str, int] = {}
        for row in selected:
            first.setdefault(row.owner, row.id)
        mine = set()
        for owner, first_id in first.items():
            if self._owners.setdefault((lane.name, owner), batch) != batch:
                continue
            # PostgreSQL evaluates the lock before the ordering test, so the lock stays held
            # for the batch's lifetime even when the owner is not taken.
            if not self._older_queued(owner, first_id, lane):
                mine.add(owner)
        return [row.job() for row in selected if row.owner in mine]

    def _older_queued(self, owner: str, first_id: int, lane: Lane) -> bool:
        return any(
            row.status == "queued" and row.owner == owner and lane.admits(row.kind)
            for row in self._rows.values()
            if row.id < first_id
        )

    def release(self, batch: int) -> None:
        """End a batch's claim (commit or rollback): its rows and owners are free again."""
        for row in self._rows.values():
            if row.claimed_by == batch:
                row.claimed_by = None
        self._owners = {o: b for o, b in self._owners.items() if b != batch}

    def remove(self, job_ids: Iterable[int]) -> None:
        for job_id in job_ids:
            self._rows.pop(job_id, None)

    def fail(
        self, job_ids: Sequence[int], error: str, retry_at: datetime, max_attempts: int
    ) -> int:
        parked = 0
        for job_id in set(job_ids):
            row = self._rows.get(job_id)
            if row is None:
                continue
            row.attempts += 1
            row.last_error = error[:4000]
            row.run_after = retry_at
            row.status = "parked" if row.attempts >= max_attempts else "queued"
            parked += row.status == "parked"
        return parked

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
