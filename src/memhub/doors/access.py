"""Who may call, and how often: the one key check of the REST server and the MCP HTTP door.

Both doors accept the same keys (``MEMHUB_ADMIN_KEY`` and the stored keys), trust a key they
looked up for ``MEMHUB_KEY_CACHE_SECONDS``, hold a tenant key to the same request bucket
and in-flight cap, and serve its requests at the same per-tenant request slots
(``MEMHUB_REQUEST_SLOTS``), through :class:`Access` (:meth:`Access.admit`). A key revoked
by any process is forgotten at once: :class:`Access` follows the store's key changes
(PostgreSQL LISTEN/NOTIFY); while it cannot, the cache's expiry is the bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from memhub._cpu import background
from memhub.config import EnvSettings
from memhub.doors.slots import RequestSlots
from memhub.memory.admin import ApiKey, AsyncAdmin, hash_key, keys_equal

log = logging.getLogger("memhub.server")

__all__ = [
    "ENV_ADMIN_KEY",
    "OVER_QUOTA_SECONDS",
    "Access",
    "AccessSettings",
    "KeyCache",
    "Quotas",
    "RateLimiter",
]

ENV_ADMIN_KEY = ApiKey(
    id=0,
    name="admin (MEMHUB_ADMIN_KEY)",
    prefix="",
    tenant=None,
    is_admin=True,
    created_at=datetime(1970, 1, 1, tzinfo=UTC),
    revoked_at=None,
    last_used_at=None,
)
"""What :meth:`Access.check` returns for ``MEMHUB_ADMIN_KEY`` (it is not stored)."""


class AccessSettings(EnvSettings):
    """The keys and quotas both doors apply (``MEMHUB_*``); see ServerSettings for each."""

    model_config = SettingsConfigDict(env_prefix="MEMHUB_", extra="ignore")

    admin_key: SecretStr | None = Field(default=None, min_length=16)
    rate_limit: float = Field(default=20.0, ge=0)
    rate_burst: float = Field(default=40.0, ge=1)
    max_in_flight_per_key: int = Field(default=4, ge=0)
    key_cache_seconds: float = Field(default=5.0, ge=0)
    request_slots: int = Field(default=0, ge=0, le=1024)


@dataclass
class _Bucket:
    tokens: float
    stamp: float


@dataclass
class RateLimiter:
    """A token bucket per key: ``rate`` tokens a second, at most ``burst`` saved up.

    In-process: each server process counts on its own, so N processes allow N times the rate.
    """

    rate: float
    burst: float
    _buckets: dict[object, _Bucket] = field(default_factory=dict)
    _max_keys: int = 100_000

    def take(self, key: object, cost: float = 1.0, now: float | None = None) -> float:
        """Spend ``cost`` tokens of ``key``'s bucket; 0 if allowed, else seconds to wait."""
        now = time.monotonic() if now is None else now
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self._max_keys:  # bounded memory: forget idle buckets
                self._buckets.clear()
            bucket = self._buckets[key] = _Bucket(self.burst, now)
        bucket.tokens = min(self.burst, bucket.tokens + (now - bucket.stamp) * self.rate)
        bucket.stamp = now
        if cost > self.burst:
            return math.inf
        if bucket.tokens >= cost:
            bucket.tokens -= cost
            return 0.0
        return (cost - bucket.tokens) / self.rate


@dataclass
class KeyCache:
    """Keys found in the database in the last ``ttl`` seconds, by their hash.

    A key is forgotten when it is revoked (:meth:`forget`, told by this process or by the
    store's key changes) and at the latest ``ttl`` seconds (``MEMHUB_KEY_CACHE_SECONDS``) after
    it was looked up. ``generation`` changes with every forget: a lookup that started before
    one is not cached (it may have read the key just before its revocation committed).
    """

    ttl: float
    generation: int = 0
    _entries: dict[str, tuple[ApiKey, float]] = field(default_factory=dict)
    _max_entries: int = 10_000

    def get(self, digest: str, now: float | None = None) -> ApiKey | None:
        entry = self._entries.get(digest)
        if entry is None:
            return None
        if entry[1] <= (time.monotonic() if now is None else now):
            del self._entries[digest]
            return None
        return entry[0]

    def put(self, digest: str, key: ApiKey, generation: int | None = None) -> None:
        """Cache ``key``, unless a key was forgotten since ``generation`` was read."""
        if self.ttl <= 0 or (generation is not None and generation != self.generation):
            return
        if len(self._entries) >= self._max_entries:  # bounded memory: start over
            self._entries.clear()
        self._entries[digest] = (key, time.monotonic() + self.ttl)

    def forget(self, key_id: int) -> None:
        """Drop a key (it was just revoked)."""
        self.generation += 1
        for digest in [d for d, (key, _) in self._entries.items() if key.id == key_id]:
            del self._entries[digest]

    def clear(self) -> None:
        """Drop every key (changes may have been missed)."""
        self.generation += 1
        self._entries.clear()


OVER_QUOTA_SECONDS = 2.0
"""How long after its last refusal a key counts as over its quota (:meth:`Quotas.over_quota`)."""


@dataclass
class Quotas:
    """A tenant key's request bucket, how many of its requests are being served, and when it
    was last refused.

    A key refused in the last OVER_QUOTA_SECONDS is over its quota: it is served one request
    at a time, and the doors run its requests' CPU work at background priority
    (:func:`memhub._cpu.background`), so a client sending faster than its quota waits on
    itself and is served from CPU the other tenants leave (bench/server_limits.py).
    """

    requests: RateLimiter
    max_in_flight: int
    in_flight: Counter[int] = field(default_factory=Counter)
    # Open event streams (MCP's GET), counted apart: idle for a session's life, they would
    # shut the key's requests out if they counted as requests; bounded by the same number.
    streams: Counter[int] = field(default_factory=Counter)
    refused_at: dict[int, float] = field(default_factory=dict)
    max_keys: int = 100_000

    def refusal(
        self, key_id: int, now: float | None = None, *, stream: bool = False
    ) -> tuple[str, int] | None:
        """Why ``key_id`` may not start a request (or open a ``stream``) now, and the
        seconds to wait; None when it may.

        Spends a token of the key's bucket when it is admitted, and notes the time of a
        refusal (:meth:`over_quota`).
        """
        now = time.monotonic() if now is None else now
        refused = self._cap_refusal(key_id, now, stream) or self._bucket_refusal(key_id, now)
        if refused is not None:
            if len(self.refused_at) >= self.max_keys and key_id not in self.refused_at:
                self.refused_at.clear()  # a bound on memory; forgetting only ends a penalty
            self.refused_at[key_id] = now
        return refused

    def over_quota(self, key_id: int, now: float | None = None) -> bool:
        """Whether ``key_id`` was refused in the last OVER_QUOTA_SECONDS."""
        refused = self.refused_at.get(key_id)
        now = time.monotonic() if now is None else now
        return refused is not None and now - refused < OVER_QUOTA_SECONDS

    def _cap_refusal(self, key_id: int, now: float, stream: bool) -> tuple[str, int] | None:
        if stream:
            if self.max_in_flight > 0 and self.streams[key_id] >= self.max_in_flight:
                return (
                    f"{self.max_in_flight} event streams of this API key are already open"
                    " (MEMHUB_MAX_IN_FLIGHT_PER_KEY); end a session or retry in 1 s",
                    1,
                )
            return None
        if self.max_in_flight > 0 and self.in_flight[key_id] >= self.max_in_flight:
            return (
                f"{self.max_in_flight} requests of this API key are already being served"
                " (MEMHUB_MAX_IN_FLIGHT_PER_KEY); retry in 1 s",
                1,
            )
        if self.in_flight[key_id] >= 1 and self.over_quota(key_id, now):
            return (
                "this API key is over its quota (MEMHUB_RATE_LIMIT) and one of its requests is"
                " already being served; retry in 1 s",
                1,
            )
        return None

    def _bucket_refusal(self, key_id: int, now: float) -> tuple[str, int] | None:
        if self.requests.rate <= 0:
            return None
        wait = self.requests.take(key_id, now=now)
        if wait <= 0:
            return None
        seconds = max(1, math.ceil(wait))
        return f"too many requests for this API key (MEMHUB_RATE_LIMIT); retry in {seconds} s", (
            seconds
        )

    def enter(self, key_id: int, *, stream: bool = False) -> None:
        (self.streams if stream else self.in_flight)[key_id] += 1

    def leave(self, key_id: int, *, stream: bool = False) -> None:
        counts = self.streams if stream else self.in_flight
        counts[key_id] -= 1
        if counts[key_id] <= 0:
            del counts[key_id]


@dataclass
class Access:
    """The key check, the quotas and the request slots of one process's door (REST or MCP).

    :meth:`start` follows the store's key changes in a background task (one dedicated
    PostgreSQL session); :meth:`check` starts it too, if nothing did.
    """

    admin: AsyncAdmin
    settings: AccessSettings
    keys: KeyCache = field(init=False)
    quotas: Quotas = field(init=False)
    slots: RequestSlots = field(init=False)
    _watch: asyncio.Task[None] | None = field(default=None, init=False)
    _watching: asyncio.Event = field(default_factory=asyncio.Event, init=False)
    _closed: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        requests = RateLimiter(self.settings.rate_limit, self.settings.rate_burst)
        self.quotas = Quotas(requests, self.settings.max_in_flight_per_key)
        self.keys = KeyCache(self.settings.key_cache_seconds)
        self.slots = RequestSlots(self.settings.request_slots)

    async def start(self, wait: float = 0.0) -> None:
        """Follow key changes from now on (idempotent), waiting up to ``wait`` s for the first.

        Waiting lets a server answer its first request with revocations already pushed; a
        watch that cannot start in time (or at all) leaves the cache's expiry as the bound.
        """
        if self._watch is None:
            self._watch = asyncio.create_task(self._follow(), name="memhub key changes")
        if wait > 0 and not self._watching.is_set():
            watching = asyncio.ensure_future(self._watching.wait())
            # Whichever comes first: listening, or a watch that ended (nothing to watch).
            await asyncio.wait(
                {watching, self._watch}, timeout=wait, return_when=asyncio.FIRST_COMPLETED
            )
            watching.cancel()

    async def aclose(self) -> None:
        """Stop following key changes (for good: :meth:`check` does not start again)."""
        self._closed = True
        task, self._watch = self._watch, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _follow(self) -> None:
        try:
            await self.admin.watch_key_changes(self._changed)
        except Exception:  # a background task: say so; the cache's expiry still bounds keys
            log.exception("following key changes failed; MEMHUB_KEY_CACHE_SECONDS is the bound")

    def _changed(self, key_id: int | None) -> None:
        if key_id is None:
            self.keys.clear()
            self._watching.set()
        else:
            self.keys.forget(key_id)

    def cached(self, presented: str) -> ApiKey | None:
        """The key ``presented`` is, if known without the database (no I/O)."""
        admin_key = self.settings.admin_key
        if admin_key is not None and keys_equal(presented, admin_key.get_secret_value()):
            return ENV_ADMIN_KEY
        return self.keys.get(hash_key(presented))

    async def check(self, presented: str) -> ApiKey | None:
        """The active key ``presented`` is, or None (unknown or revoked); cached."""
        found = self.cached(presented)
        if found is not None:
            return found
        if self._watch is None and not self._closed:  # a door without a lifespan (MCP)
            await self.start(wait=self.admin.memory.settings.connect_timeout)
        generation = self.keys.generation
        found = await self.admin.resolve_key(presented)
        if found is not None:
            self.keys.put(hash_key(presented), found, generation)
        return found

    async def admit(
        self, key: ApiKey, serve: Callable[[bool], Awaitable[None]], *, slot: bool = True
    ) -> tuple[str, int] | None:
        """Serve a tenant key's request within its quotas, at its tenant's turn.

        Args:
            key: The caller's key (a tenant key: admin keys are not held to quotas).
            serve: Serves the request; it is told whether the request's CPU work runs niced
                (the key is over its quota, or its tenant has more requests waiting).
            slot: Take a request slot (False for a request that stays open without working,
                as the MCP transport's event stream does: it would hold a slot for nothing,
                and it is counted among the key's open streams, not its requests).

        Returns:
            Why the request is refused and the seconds to wait (``serve`` is not called), or
            None once ``serve`` returned.
        """
        stream = not slot
        refused = self.quotas.refusal(key.id, stream=stream)
        if refused is not None:
            return refused
        self.quotas.enter(key.id, stream=stream)
        try:
            # A key sending faster than its quota has its admitted work's CPU niced: it is
            # served from CPU the other tenants leave (memhub._cpu).
            over = self.quotas.over_quota(key.id)
            if not slot:
                with background(over):
                    await serve(over)
                return None
            async with self.slots.serve(key.tenant or "", over) as niced:
                await serve(niced)
        finally:
            self.quotas.leave(key.id, stream=stream)
        return None
