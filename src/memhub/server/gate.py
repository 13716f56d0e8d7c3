"""The tenant gate: a tenant over its quota is refused before routing, parsing or the database.

Keys verified a moment ago are cached, so a flooding key's requests are answered 429 from
memory (a hash and a dict lookup) and cannot take CPU or pooled connections from other
tenants: bench/server_limits.py measures the effect.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send

from memhub.memory.admin import ApiKey, hash_key
from memhub.server.limits import RateLimiter, answer

__all__ = ["GATED_KEY", "KeyCache", "Quotas", "TenantGate", "presented_key"]

GATED_KEY = "memhub.gated_key"
"""The scope entry holding the key the gate admitted (its quota already spent)."""

_SCHEMES = ("bearer", "token")


def presented_key(header: str | None) -> str | None:
    """The key in an ``Authorization`` header (``Bearer <key>`` or ``Token <key>``), or None."""
    if not header:
        return None
    scheme, _, key = header.strip().partition(" ")
    if scheme.lower() not in _SCHEMES or not key.strip():
        return None
    return key.strip()


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


class TenantGate:
    """ASGI middleware applying a cached tenant key's quotas before anything else runs.

    Requests with an unknown (uncached) key pass through: authentication looks the key up,
    caches it and applies the same quotas there.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        key = self._cached_tenant_key(scope)
        if key is None:
            await self.app(scope, receive, send)
            return
        quotas: Quotas = scope["app"].state.memhub.quotas
        refused = quotas.refusal(key.id)
        if refused is not None:
            error, seconds = refused
            await answer(send, 429, error, "TooManyRequests", {"Retry-After": str(seconds)})
            return
        quotas.in_flight[key.id] += 1
        try:
            await self.app({**scope, GATED_KEY: key}, receive, send)
        finally:
            quotas.in_flight[key.id] -= 1
            if quotas.in_flight[key.id] <= 0:
                del quotas.in_flight[key.id]

    @staticmethod
    def _cached_tenant_key(scope: Scope) -> ApiKey | None:
        if scope["type"] != "http":
            return None
        state = getattr(scope["app"].state, "memhub", None)
        if state is None or state.server.auth != "on":
            return None
        header = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), None)
        key = presented_key(header.decode("latin-1") if header is not None else None)
        if key is None:
            return None
        found = state.keys.get(hash_key(key))
        return found if found is not None and found.tenant is not None else None
