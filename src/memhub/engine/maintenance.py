"""The worker's housekeeping between batches: erase what the retention says is gone, and keep
the planner's statistics current as the tables grow.

Two purges share one pair of knobs (how often, how many rows at a time): memories a model
retired longer ago than the retention, and memories past the expiry their ``add`` set (reads
skip those at once; the rows go here). Each worker of a deployment may run them: a purge is a
bounded ``DELETE`` that another worker's purge cannot double.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from memhub.store.protocol import Store

__all__ = ["Maintenance", "MaintenanceConfig"]

log = logging.getLogger("memhub.worker")

#: Rows written since the last ANALYZE that call for another: 10 % growth, at least this many.
ANALYZE_AFTER_ROWS = 1_000

_Purge = Callable[[], Awaitable[int]]


@dataclass(frozen=True)
class MaintenanceConfig:
    """Attributes:
    retired_retention_days: Memories a model retired are erased this many days later.
    purge_interval: Seconds between two purges of one worker (retired and expired alike).
    purge_batch: Rows one purge statement deletes at most.
    """

    retired_retention_days: float = 30.0
    purge_interval: float = 60.0
    purge_batch: int = 1_000


class Maintenance:
    """Purges and statistics, run by the worker loop after each batch (cheap when not due)."""

    def __init__(self, store: Store, config: MaintenanceConfig) -> None:
        self.store = store
        self.config = config
        self._purged_at = float("-inf")  # monotonic time of the last purge
        self._inserted_since_analyze = 0
        self._inserted_total = 0

    def inserted(self, rows: int) -> None:
        """Count rows this worker wrote (toward the next ANALYZE)."""
        self._inserted_since_analyze += rows

    async def run(self) -> None:
        """What is due: ANALYZE after growth, then both purges once per interval."""
        await self._refresh_statistics_after_growth()
        if time.monotonic() - self._purged_at >= self.config.purge_interval:
            await self.purge(force=True)

    async def purge(self, *, force: bool = False) -> int:
        """Erase retired memories past the retention and expired ones; returns how many.

        Without ``force`` only when the interval has passed since this worker's last purge.
        """
        now = time.monotonic()
        if not force and now - self._purged_at < self.config.purge_interval:
            return 0
        self._purged_at = now
        batch = self.config.purge_batch
        cut = datetime.now(UTC) - timedelta(days=self.config.retired_retention_days)
        retired = await self._all(lambda: self.store.purge_retired(cut, batch))
        if retired:
            log.info("worker: purged %d retired memories (retention %g days)", retired,
                     self.config.retired_retention_days)  # fmt: skip
        expired = await self._all(lambda: self.store.purge_expired(batch))
        if expired:
            log.info("worker: purged %d expired memories", expired)
        return retired + expired

    async def _all(self, purge: _Purge) -> int:
        # batch after batch until one comes back short: a backlog is cleared in one purge
        purged = 0
        while True:
            batch = await purge()
            purged += batch
            if batch < self.config.purge_batch:
                return purged

    async def _refresh_statistics_after_growth(self) -> None:
        grown = self._inserted_since_analyze
        if grown >= max(ANALYZE_AFTER_ROWS, self._inserted_total // 10):
            self._inserted_total += grown
            self._inserted_since_analyze = 0
            await self.store.refresh_statistics()
