"""The tenant gate: a tenant over its quota is refused before routing, parsing or the database.

Keys verified a moment ago are cached, so a flooding key's requests are answered 429 from
memory (a hash and a dict lookup) and cannot take CPU or pooled connections from other
tenants: bench/server_limits.py measures the effect.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from memhub.memory.access import KeyCache, Quotas
from memhub.memory.admin import ApiKey
from memhub.server.limits import answer

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
        quotas.enter(key.id)
        try:
            await self.app({**scope, GATED_KEY: key}, receive, send)
        finally:
            quotas.leave(key.id)

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
        found = state.access.cached(key)
        return found if found is not None and found.tenant is not None else None
