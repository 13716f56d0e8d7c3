"""The tenant gate: a tenant over its quota is refused before routing, parsing or the database.

Keys verified a moment ago are cached, so a flooding key's requests are answered 429 from
memory (a hash and a dict lookup) and cannot take pooled connections from other tenants. The
gate wraps the whole application, so a refusal costs no more than uvicorn's HTTP parse and
the gate; a key refused more than FLOOD_REFUSALS times in a second has its further refusals
held (MEMHUB_FLOOD_HOLD_SECONDS), so that a client waiting for each answer cannot take the
server's CPU from other tenants either. A key refused in the last seconds is served one
request at a time, its CPU work at background priority (``Quotas``), so even the requests it
is admitted cost the others little. Admitted requests then take turns by tenant at a few
request slots (MEMHUB_REQUEST_SLOTS, :class:`memhub.doors.slots.RequestSlots`, which the MCP
HTTP door shares): however many requests
other tenants have in flight, a tenant with nothing running or waiting starts at once (one
spare slot), and while a tenant has
requests waiting for their turn, its running one's CPU work is niced as an over-quota key's
is. bench/server_limits.py and
bench/server_limits_refusal.py measure all of it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Receive, Scope, Send

from memhub.doors.answers import too_many_requests
from memhub.errors import MemhubError
from memhub.memory.admin import ApiKey
from memhub.server.state import ServerState

__all__ = [
    "FLOOD_REFUSALS",
    "GATED_KEY",
    "LOOKED_UP_KEY",
    "Floods",
    "TenantGate",
    "presented_key",
]

GATED_KEY = "memhub.gated_key"
"""The scope entry holding the key the gate admitted (its quota already spent)."""

LOOKED_UP_KEY = "memhub.looked_up_key"
"""The scope entry holding what the gate's lookup of an uncached key found (None: no active
key), so that authentication does not look it up again."""

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
    """The tenant gate around the whole application: quotas of a cached tenant key first.

    Wraps the ASGI application itself (``create_app`` returns a FastAPI whose ``__call__``
    goes through it), so a refusal runs before Starlette's middleware stack, FastAPI's
    layers, routing and the body limit: one header read, a hash, two dictionary lookups and
    a prepared answer. An uncached key is looked up here (and cached), so that every tenant
    request, the first of a key and any with ``MEMHUB_KEY_CACHE_SECONDS=0``, is held to the
    in-flight cap and takes its turn at the request slots; a lookup that fails (the database
    is down) passes the request on, and authentication answers it.
    """

    def __init__(self, app: ASGIApp, state: Callable[[], ServerState | None]) -> None:
        self.app = app
        self.state = state
        self.floods = Floods()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.state() if scope["type"] == "http" else None
        key = await _tenant_key(state, scope) if state is not None else None
        if key is None or state is None:
            await self.app(scope, receive, send)
            return

        async def serve(_niced: bool) -> None:
            # Its CPU work already runs niced or not (Access.admit): this task does it.
            await self.app({**scope, GATED_KEY: key}, receive, send)

        refused = await state.access.admit(key, serve)
        if refused is None:
            return
        start, body = too_many_requests(*refused)
        hold = state.server.flood_hold_seconds
        if hold > 0 and self.floods.flooding(key.id, time.monotonic(), hold):
            # A client that waits for each answer (a retry loop, a pooled connection) now
            # sends at most one request a `hold` per connection, instead of as many as the
            # server can refuse: the refusals' CPU would be taken from the others.
            await asyncio.sleep(hold)
        await send(start)
        await send(body)


FLOOD_REFUSALS = 50
"""Refusals of one key within a second past which its further refusals are held."""


@dataclass
class Floods:
    """Which keys are flooding: refused more than FLOOD_REFUSALS times within a second.

    A flooding key stays so until it has had no refusal for ``hold + 1`` seconds: its held
    requests come back after ``hold`` and are held again, so a steady flood meets the hold
    on every request, not a fresh burst of FLOOD_REFUSALS quick refusals each second.
    In-process, like the quotas: each server process holds the floods it sees.
    """

    windows: dict[int, tuple[float, int, float]] = field(default_factory=dict)
    max_keys: int = 100_000

    def flooding(self, key_id: int, now: float, hold: float) -> bool:
        """Count one more refusal of ``key_id`` at ``now``: is the key flooding?"""
        start, count, last = self.windows.get(key_id, (now, 0, now))
        if now - last > hold + 1.0 or (count <= FLOOD_REFUSALS and now - start >= 1.0):
            start, count = now, 0  # quiet long enough, or a new second of a key not flooding
        if len(self.windows) >= self.max_keys and key_id not in self.windows:
            self.windows.clear()  # a bound on memory; forgetting only shortens holds
        self.windows[key_id] = (start, count + 1, now)
        return count >= FLOOD_REFUSALS


async def _tenant_key(state: ServerState, scope: Scope) -> ApiKey | None:
    """The tenant key the request presents: from the cache, else looked up (and noted in
    ``scope`` for authentication) on the API's routes; None for no key, an admin key or an
    unknown one. ``/healthz`` and the page are never held up by a lookup."""
    if state.server.auth != "on":
        return None
    header = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), None)
    key = presented_key(header.decode("latin-1") if header is not None else None)
    if key is None:
        return None
    found = state.access.cached(key)
    if found is None and str(scope.get("path", "")).startswith("/v1/"):  # routes with keys
        try:
            found = await state.access.check(key)
        except MemhubError:  # authentication looks again and answers with the error's status
            return None
        scope[LOOKED_UP_KEY] = found
    return found if found is not None and found.tenant is not None else None
