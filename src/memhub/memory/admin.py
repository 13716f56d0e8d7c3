"""``AsyncAdmin``: tenants, API keys, users and the job queue, for the server, MCP and CLI.

It runs on the services of the :class:`AsyncMemory` it is given (one pool per process), over
the store's protocol only: keys through :class:`KeyStore` (every back end), the operator
views through :class:`OpsStore`, which only PostgreSQL's store has.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from memhub.engine.worker import CONSOLIDATE_LANE, ingest_lane
from memhub.errors import ConfigurationError, UsageError
from memhub.memory.async_memory import AsyncMemory
from memhub.memory.core import services_of
from memhub.memory.cursors import decode_cursor, encode_cursor
from memhub.store.api_keys import ApiKey, hash_key, keys_equal
from memhub.store.protocol import OpsStore, Store
from memhub.store.records import DailyUsage, Job, ScopeRow, UserRow

__all__ = [
    "ApiKey",
    "AsyncAdmin",
    "DailyUsage",
    "JobStats",
    "ScopeRow",
    "UserPage",
    "UserRow",
    "hash_key",
    "keys_equal",
]

TENANT = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
"""A tenant's name: it prefixes its ids (``"<tenant>:<id>"``), so it holds no ``:``."""


@dataclass(frozen=True)
class UserPage:
    """One page of users, by id; ``next_cursor`` is set when more may follow."""

    results: list[UserRow]
    next_cursor: str | None


@dataclass(frozen=True)
class JobStats:
    """The background queue and what its LLM calls cost.

    Attributes:
        by_kind: ``{kind: {"queued", "running", "parked", "oldest_queued_seconds"}}``.
        by_lane: The same per worker lane (``ingest``, ``consolidate``), with the lane's
            ``kinds``; a lane's oldest wait is its kinds' longest.
    """

    queued: int
    parked: int
    llm: dict[str, float]
    by_kind: dict[str, dict[str, int]]
    by_lane: dict[str, dict[str, Any]]
    llm_per_day: list[DailyUsage]


# The worker's two lanes: ingestion (every kind but consolidate) and consolidation.
_LANES = {"ingest": ingest_lane(consolidating=True), "consolidate": CONSOLIDATE_LANE}


def _by_lane(by_kind: dict[str, dict[str, int]]) -> dict[str, dict[str, Any]]:
    """Per-kind counts summed per worker lane (the oldest wait is the lane's maximum)."""
    lanes: dict[str, dict[str, Any]] = {
        name: {"kinds": [], "queued": 0, "running": 0, "parked": 0, "oldest_queued_seconds": 0}
        for name in _LANES
    }
    for kind, counts in by_kind.items():
        lane = next(name for name, test in _LANES.items() if test.admits(kind))
        totals = lanes[lane]
        totals["kinds"].append(kind)
        for field in ("queued", "running", "parked"):
            totals[field] += counts[field]
        totals["oldest_queued_seconds"] = max(
            totals["oldest_queued_seconds"], counts["oldest_queued_seconds"]
        )
    return lanes


def _check_tenant(tenant: str | None) -> None:
    if tenant is not None and not TENANT.match(tenant):
        raise UsageError(
            f"tenant {tenant!r}: lowercase letters, digits, '-' and '_' (at most 63, no ':')"
        )


class AsyncAdmin:
    """Operator calls beside the memory API, on the same services and connection pool.

    Args:
        memory: The facade whose services (and pool) to share; its owner closes it.
    """

    def __init__(self, memory: AsyncMemory) -> None:
        self.memory = memory

    async def _store(self) -> Store:
        return (await services_of(self.memory)).store

    async def _ops(self, action: str) -> OpsStore:
        # The operator views are OpsStore's; a back end without them (memory://) refuses here.
        store = await self._store()
        if not isinstance(store, OpsStore):
            raise ConfigurationError(f"{action} needs PostgreSQL (not the memory:// store)")
        return store

    # -- tenants and keys -------------------------------------------------------------------
    async def create_key(
        self, name: str, *, tenant: str | None = None, is_admin: bool = False
    ) -> tuple[ApiKey, str]:
        """Create a key: a tenant key (``tenant``) or an admin key (``is_admin``), not both.

        Returns:
            The stored key and its secret, which is never stored nor shown again.
        """
        if is_admin == (tenant is not None):
            raise UsageError("a key is either a tenant key (tenant) or an admin key (is_admin)")
        if not name or len(name) > 200:
            raise UsageError("a key's name is 1 to 200 characters")
        _check_tenant(tenant)
        return await (await self._store()).create_key(name, tenant, is_admin)

    async def list_keys(
        self, *, tenant: str | None = None, include_revoked: bool = False
    ) -> list[ApiKey]:
        """Keys without their secrets, oldest first: every key, or only ``tenant``'s."""
        _check_tenant(tenant)
        return await (await self._store()).list_keys(include_revoked, tenant)

    async def revoke_key(self, key_id: int, *, tenant: str | None = None) -> ApiKey | None:
        """Revoke a key at once (idempotent); None if no such key (of ``tenant``, if given)."""
        _check_tenant(tenant)
        return await (await self._store()).revoke_key(key_id, tenant)

    async def resolve_key(self, key: str) -> ApiKey | None:
        """The active key ``key`` is (marking it used), or None if unknown or revoked."""
        return await (await self._store()).find_active_key(key)

    async def watch_key_changes(self, changed: Callable[[int | None], None]) -> None:
        """Tell ``changed`` of each key another process changes (None: any key), until cancelled.

        On PostgreSQL one dedicated session per call LISTENs for revocations; it returns at once
        where nothing can be watched (``memory://``, PgBouncer without a direct URL).
        """
        await (await self._store()).watch_key_changes(changed)

    async def bootstrap_admin_key(self) -> str | None:
        """On a database without any key, create an admin key and return its secret."""
        return await (await self._store()).bootstrap_admin_key()

    async def list_tenants(self) -> dict[str, int]:
        """``{tenant: active keys}`` for every tenant that ever had a key, by name."""
        return await (await self._store()).list_tenants()

    # -- users ------------------------------------------------------------------------------
    async def list_users(
        self,
        *,
        tenant: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
        offset: int = 0,
    ) -> UserPage:
        """Users with current memories or turns, by id in byte order, a page at a time.

        Args:
            tenant: Only the users of this tenant (ids ``"<tenant>:..."``, returned as stored).
            limit: Users per page.
            cursor: ``next_cursor`` of the previous page: the page starts after its last user.
                Users added meanwhile appear in a later page if their id sorts after it; none
                is skipped or repeated.
            offset: Skip this many users first (older paging; each skipped user is read).
        """
        if limit < 1 or offset < 0:
            raise UsageError("limit must be at least 1 and offset at least 0")
        _check_tenant(tenant)
        after = None if cursor is None else decode_cursor(cursor, 1)[0]
        prefix = None if tenant is None else f"{tenant}:"
        ops = await self._ops("listing users")
        rows = await ops.list_users(prefix=prefix, after=after, limit=limit, offset=offset)
        more = len(rows) == limit
        return UserPage(rows, encode_cursor(rows[-1].user_id) if more else None)

    async def list_scopes(self, *, tenant: str | None = None, limit: int = 200) -> list[ScopeRow]:
        """Every scope with current memories (user, agent, run and their combinations).

        Args:
            tenant: Only the scopes whose ids are all this tenant's (returned as stored).
            limit: At most this many scopes, by user id, then agent id, then run id.
        """
        if limit < 1:
            raise UsageError("limit must be at least 1")
        _check_tenant(tenant)
        prefix = None if tenant is None else f"{tenant}:"
        ops = await self._ops("listing scopes")
        return await ops.list_scopes(prefix=prefix, limit=limit)

    async def memory_owner(self, memory_id: uuid.UUID) -> dict[str, str | None] | None:
        """A memory's stored scope ids (found through its history once deleted), or None."""
        return await (await self._ops("finding a memory's owner")).memory_owner(memory_id)

    async def queued_jobs(self, tenant: str, cap: int) -> int:
        """A tenant's queued jobs, counted up to ``cap + 1`` at most (a quota check)."""
        ops = await self._ops("counting a tenant's queued jobs")
        return await ops.queued_jobs_with_prefix(f"{tenant}:", cap)

    # -- the job queue ----------------------------------------------------------------------
    async def job_stats(self, days: int = 14) -> JobStats:
        """Queued and parked jobs (in total, per worker lane and per kind), LLM usage in total
        and per day."""
        ops = await self._ops("reading job statistics")
        usage = await (await self._store()).usage_stats()
        by_kind = await ops.queue_by_kind()  # the totals are its sums: one count of the queue
        daily = await ops.usage_per_day(days)
        queued = sum(counts["queued"] for counts in by_kind.values())
        parked = sum(counts["parked"] for counts in by_kind.values())
        return JobStats(queued, parked, usage, by_kind, _by_lane(by_kind), daily)

    async def parked_jobs(self, limit: int = 100) -> list[Job]:
        """Jobs that failed every attempt, oldest first, with their last error."""
        await self._ops("listing parked jobs")  # an operator view, as the others: PostgreSQL
        return await (await self._store()).list_jobs("parked", limit)

    async def retry_parked(self, job_ids: list[int] | None = None) -> int:
        """Queue parked jobs again (all when ``job_ids`` is None); returns how many."""
        await self._ops("requeueing parked jobs")
        return await (await self._store()).requeue_parked(job_ids)

    async def ping(self) -> None:
        """One round trip to the database; raises :class:`StoreUnavailable` if it is down."""
        await (await self._ops("checking health")).ping()
