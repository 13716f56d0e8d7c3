"""What a worker does with the jobs it holds when they do not finish: hand them back, or count
a failed attempt and back off (parking the job once its attempts are spent).

Both lanes (``engine/ingest_lane.py``, ``engine/consolidate_lane.py``) return jobs through
one :class:`JobReturns`, so a failure is counted, logged and delayed the same way wherever it
happens. The delay is a pure :class:`Backoff` policy: no clock or randomness of its own.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memhub.errors import ProviderOutputError
from memhub.store.protocol import Store
from memhub.store.records import Job

__all__ = ["Backoff", "JobReturns"]

log = logging.getLogger("memhub.worker")

#: How much of a failed model call's raw output the parked job keeps, for a person to read.
RAW_OUTPUT_KEPT = 3000


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff with jitter: ``base`` seconds after the first failed attempt,
    doubling per attempt up to ``most``, each delay spread over half to one and a half of it
    (so jobs that failed together do not all come back at once)."""

    base: float
    most: float

    def delay(self, attempts: int, jitter: float) -> float:
        """Seconds before the next attempt after ``attempts`` failed ones; ``jitter`` in [0, 1)."""
        doubled: float = self.base * 2.0 ** max(attempts - 1, 0)
        return min(self.most, doubled) * (0.5 + jitter)


class JobReturns:
    """Gives leased jobs back to the queue: as a failed attempt, or with the attempt refunded."""

    def __init__(self, store: Store, holder: str, max_attempts: int, backoff: Backoff) -> None:
        self.store = store
        self.holder = holder  # the worker id the leases are held under
        self.max_attempts = max_attempts
        self.backoff = backoff
        self.failed = 0  # failed attempts counted by this worker

    async def failed_attempt(self, jobs: Sequence[Job], exc: BaseException) -> datetime:
        """Count a failed attempt for ``jobs`` (already counted at claim): back off or park.

        Returns when the jobs may be tried again (for the same owner's later jobs to wait too).
        """
        self.failed += len(jobs)
        attempts = max(job.attempts for job in jobs)
        retry_at = datetime.now(UTC) + timedelta(
            seconds=self.backoff.delay(attempts, random.random())
        )
        error = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, ProviderOutputError) and exc.raw:
            error += f"\n--- raw model output ---\n{exc.raw[:RAW_OUTPUT_KEPT]}"
        ids = [job.id for job in jobs]
        parked = await self.store.release_jobs(ids, self.holder, error, retry_at, self.max_attempts)
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

    async def give_back(self, jobs: Sequence[Job], at: datetime | None = None) -> None:
        """Release leases without counting the attempt (a lost race, or stopping)."""
        if jobs:
            when = at or datetime.now(UTC)
            await self.store.release_jobs([job.id for job in jobs], self.holder, None, when, 0)
