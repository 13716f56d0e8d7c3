"""The worker's parts that decide something on their own: the backoff policy, how an owner's
consolidation jobs are grouped into calls, and when housekeeping runs.

Pure functions and a recording store double: nothing here needs a database (the lanes run
against both real back ends in tests/engine/test_worker.py and the queue tests)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from memhub.engine.consolidate_lane import call_groups
from memhub.engine.leases import Backoff
from memhub.engine.maintenance import ANALYZE_AFTER_ROWS, Maintenance, MaintenanceConfig
from memhub.store.records import Job, JobPayload, Scope


def test_backoff_doubles_per_attempt_up_to_its_most_and_spreads_by_jitter() -> None:
    policy = Backoff(base=1.0, most=300.0)
    assert [policy.delay(n, 0.5) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 8.0]
    assert policy.delay(20, 0.5) == 300.0  # capped
    assert (policy.delay(3, 0.0), policy.delay(3, 0.999)) == (2.0, pytest.approx(5.996))
    assert policy.delay(0, 0.5) == 1.0  # an attempt not yet counted waits the base


def _job(job_id: int, turns: int, memory_type: str | None = None) -> Job:
    payload = JobPayload(turn_ids=tuple(range(turns)), memory_type=memory_type)
    return Job(
        id=job_id,
        kind="consolidate",
        scope=Scope(user_id="ana"),
        payload=payload,
        attempts=1,
        created_at=datetime.now(UTC),
    )


def test_call_groups_keep_order_and_the_turn_budget_and_split_on_kind() -> None:
    jobs = [_job(1, 3), _job(2, 3), _job(3, 3), _job(4, 1, "procedural"), _job(5, 1)]
    groups = call_groups(jobs, max_turns=6)
    assert [[j.id for j in g] for g in groups] == [[1, 2], [3], [4], [5]]
    # a job larger than the budget is a call of its own, never split or dropped
    assert [[j.id for j in g] for g in call_groups([_job(1, 9), _job(2, 1)], 6)] == [[1], [2]]


@dataclass
class _RecordingStore:
    """Stands in for the store: records the maintenance calls (their SQL is tested in the
    store contract suites, tests/store/test_retire_contract.py and test_expiration.py)."""

    calls: list[str] = field(default_factory=list)
    retired_rows: list[int] = field(default_factory=list)

    async def purge_retired(self, cut: datetime, limit: int) -> int:
        self.calls.append("retired")
        return self.retired_rows.pop(0) if self.retired_rows else 0

    async def purge_expired(self, limit: int) -> int:
        self.calls.append("expired")
        return 0

    async def refresh_statistics(self) -> None:
        self.calls.append("analyze")


async def test_maintenance_purges_both_per_interval_and_a_backlog_in_full_batches() -> None:
    store = _RecordingStore(retired_rows=[2, 2, 1])
    chores = Maintenance(store, MaintenanceConfig(purge_interval=86_400, purge_batch=2))  # type: ignore[arg-type]
    await chores.run()
    assert store.calls == ["retired", "retired", "retired", "expired"]  # until a short batch
    await chores.run()  # not due again within the interval
    assert store.calls == ["retired", "retired", "retired", "expired"]


async def test_maintenance_analyzes_after_growth_only() -> None:
    store = _RecordingStore()
    chores: Any = Maintenance(store, MaintenanceConfig(purge_interval=86_400))  # type: ignore[arg-type]
    await chores.run()
    store.calls.clear()
    chores.inserted(ANALYZE_AFTER_ROWS - 1)
    await chores.run()
    assert store.calls == []
    chores.inserted(1)
    await chores.run()
    assert store.calls == ["analyze"]
