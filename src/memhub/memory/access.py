"""Who may call, and how often: the one key check of the REST server and the MCP HTTP door.

Both doors accept the same keys (``MEMHUB_ADMIN_KEY`` and the stored keys), trust a key they
looked up for ``MEMHUB_KEY_CACHE_SECONDS``, and hold a tenant key to the same request bucket
and in-flight cap, through :class:`Access`.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pydantic import Field, SecretStr
from pydantic_settings import SettingsConfigDict

from memhub.config import EnvSettings
from memhub.memory.admin import AsyncAdmin
from memhub.store.api_keys import ApiKey, hash_key, keys_equal

__all__ = [
    "ENV_ADMIN_KEY",
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

    A key revoked through this process is forgotten at once; revoked through another process,
    it still works here for up to ``ttl`` seconds (``MEMHUB_KEY_CACHE_SECONDS``).
    """

    ttl: float
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

    def put(self, digest: str, key: ApiKey) -> None:
        if self.ttl <= 0:
            return
        if len(self._entries) >= self._max_entries:  # bounded memory: start over
            self._entries.clear()
        self._entries[digest] = (key, time.monotonic() + self.ttl)

    def forget(self, key_id: int) -> None:
        """Drop a key (it was just revoked)."""
        for digest in [d for d, (key, _) in self._entries.items() if key.id == key_id]:
            del self._entries[digest]


@dataclass
class Quotas:
    """A tenant key's request bucket and how many of its requests are being served."""

    requests: RateLimiter
    max_in_flight: int
    in_flight: Counter[int] = field(default_factory=Counter)

    def refusal(self, key_id: int) -> tuple[str, int] | None:
        """Why ``key_id`` may not start a request now (and the seconds to wait), or None.

        Spends a token of the key's bucket when the request is admitted.
        """
        if self.max_in_flight > 0 and self.in_flight[key_id] >= self.max_in_flight:
            return (
                f"{self.max_in_flight} requests of this API key are already being served"
                " (MEMHUB_MAX_IN_FLIGHT_PER_KEY); retry in 1 s",
                1,
            )
        if self.requests.rate <= 0:
            return None
        wait = self.requests.take(key_id)
        if wait <= 0:
            return None
        seconds = max(1, math.ceil(wait))
        return f"too many requests for this API key (MEMHUB_RATE_LIMIT); retry in {seconds} s", (
            seconds
        )

    def enter(self, key_id: int) -> None:
        self.in_flight[key_id] += 1

    def leave(self, key_id: int) -> None:
        self.in_flight[key_id] -= 1
        if self.in_flight[key_id] <= 0:
            del self.in_flight[key_id]


@dataclass
class Access:
    """The key check and the quotas of one process's door (REST or MCP)."""

    admin: AsyncAdmin
    settings: AccessSettings
    keys: KeyCache = field(init=False)
    quotas: Quotas = field(init=False)

    def __post_init__(self) -> None:
        requests = RateLimiter(self.settings.rate_limit, self.settings.rate_burst)
        self.quotas = Quotas(requests, self.settings.max_in_flight_per_key)
        self.keys = KeyCache(self.settings.key_cache_seconds)

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
        found = await self.admin.resolve_key(presented)
        if found is not None:
            self.keys.put(hash_key(presented), found)
        return found
