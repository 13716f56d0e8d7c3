"""The tenant gate: a tenant over its quota is refused before routing, parsing or the database.

Keys verified a moment ago are cached, so a flooding key's requests are answered 429 from
memory (a hash and a dict lookup) and cannot take pooled connections from other tenants. The
gate wraps the whole application, so a refusal costs no more than uvicorn's HTTP parse and
the gate; a key refused more than FLOOD_REFUSALS times in a second has its further refusals
held (MEMHUB_FLOOD_HOLD_SECONDS), so that a client waiting for each answer cannot take the
server's CPU from other tenants either. A key refused in the last seconds is served one
request at a time, its CPU work at background priority (``Quotas``), so even the requests it
is admitted cost the others little. Admitted requests then take turns by tenant at a few
request slots (MEMHUB_REQUEST_SLOTS, :class:`memhub._fair.FairShare`): however many requests
other tenants have in flight, a tenant with nothing running or waiting starts at once (one
spare slot), and while a tenant has
requests waiting for their turn, its running one's CPU work is niced as an over-quota key's
is. bench/server_limits.py and
bench/server_limits_refusal.py measure all of it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memhub._cpu import background, cpu_slots, owned_by
from memhub._fair import FairShare
from memhub.memory.access import KeyCache, Quotas
from memhub.memory.admin import ApiKey
from memhub.server.state import ServerState

__all__ = [
    "FLOOD_REFUSALS",
    "GATED_KEY",
    "Floods",
    "KeyCache",
    "Quotas",
    "TenantGate",
    "presented_key",
]

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
    """The tenant gate around the whole application: quotas of a cached tenant key first.

    Wraps the ASGI application itself (``create_app`` returns a FastAPI whose ``__call__``
    goes through it), so a refusal runs before Starlette's middleware stack, FastAPI's
    layers, routing and the body limit: one header read, a hash, two dictionary lookups and
    a prepared answer. Requests with an unknown (uncached) key pass through: authentication
    looks the key up, caches it and applies the same quotas there.
    """

    def __init__(self, app: ASGIApp, state: Callable[[], ServerState | None]) -> None:
        self.app = app
        self.state = state
        self.floods = Floods()
        self.slots: FairShare | None = None  # MEMHUB_REQUEST_SLOTS, made on the first request

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        state = self.state() if scope["type"] == "http" else None
        key = _cached_tenant_key(state, scope) if state is not None else None
        if key is None or state is None:
            await self.app(scope, receive, send)
            return
        quotas = state.quotas
        refused = quotas.refusal(key.id)
        if refused is not None:
            start, body = _refusal(*refused)
            hold = state.server.flood_hold_seconds
            if hold > 0 and self.floods.flooding(key.id, time.monotonic(), hold):
                # A client that waits for each answer (a retry loop, a pooled connection)
                # now sends at most one request a `hold` per connection, instead of as many
                # as the server can refuse: the refusals' CPU would be taken from the others.
                await asyncio.sleep(hold)
            await send(start)
            await send(body)
            return
        quotas.enter(key.id)
        try:
            # A key sending faster than its quota has its admitted work's CPU niced: it is
            # served from CPU the other tenants leave (memhub._cpu). Every tenant's requests
            # take turns at the request slots, and their CPU work at the CPU slots, so a
            # quiet tenant's request is next whatever the others have queued.
            over = quotas.over_quota(key.id)
            tenant = key.tenant or ""
            slots = self._slots(state)
            async with slots.slot(tenant, later=over):
                # A tenant with more requests waiting for their turn wants more than its
                # share: this one's CPU work, too, runs from what the others leave.
                busy = over or slots.queue.waiting(tenant) > 0
                with background(busy), owned_by(tenant):
                    await self.app({**scope, GATED_KEY: key}, receive, send)
        finally:
            quotas.leave(key.id)

    def _slots(self, state: ServerState) -> FairShare:
        if self.slots is None:
            self.slots = FairShare(state.server.request_slots or cpu_slots())
        return self.slots


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


def _cached_tenant_key(state: ServerState, scope: Scope) -> ApiKey | None:
    if state.server.auth != "on":
        return None
    header = next((v for k, v in scope.get("headers", ()) if k == b"authorization"), None)
    key = presented_key(header.decode("latin-1") if header is not None else None)
    if key is None:
        return None
    found = state.access.cached(key)
    return found if found is not None and found.tenant is not None else None


def _refusal(error: str, seconds: int) -> tuple[Message, Message]:
    """The two ASGI messages of a 429, fresh each time (a server may keep or change them)."""
    body, headers = _refusal_bytes(error, seconds)
    start: Message = {"type": "http.response.start", "status": 429, "headers": list(headers)}
    return start, {"type": "http.response.body", "body": body}


@functools.lru_cache(maxsize=64)
def _refusal_bytes(error: str, seconds: int) -> tuple[bytes, tuple[tuple[bytes, bytes], ...]]:
    # Few distinct refusals (the message names the setting and the seconds): encoded once.
    body = json.dumps({"error": error, "type": "TooManyRequests"}).encode()
    headers = (
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(seconds).encode()),
    )
    return body, headers
