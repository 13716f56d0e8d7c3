"""API keys on the MCP HTTP transport: the same keys, cache and quotas as the REST server.

The check is :class:`memhub.doors.access.Access`, the one the REST server uses: the same
``MEMHUB_ADMIN_KEY`` and stored keys are accepted, a key looked up is trusted for
``MEMHUB_KEY_CACHE_SECONDS``, and a tenant key is held to ``MEMHUB_RATE_LIMIT`` and
``MEMHUB_MAX_IN_FLIGHT_PER_KEY`` (429 with ``Retry-After``; the DELETE that ends a session
is never refused). A tenant key scopes every tool call to the tenant's namespace (ids stored
as ``"<tenant>:<id>"``, exactly as the REST server stores them); requests without a valid
key answer 401 before the MCP SDK sees them, and a database that cannot be reached answers
503 with ``Retry-After``, as REST does.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from memhub._fair import held_slot
from memhub.doors.access import Access, AccessSettings
from memhub.doors.answers import RETRY_AFTER_SECONDS, answer
from memhub.errors import StatementTimeout, StoreUnavailable
from memhub.memory.admin import AsyncAdmin

__all__ = ["OVER_QUOTA_STATE", "SLOT_STATE", "TENANT_STATE", "KeyAuth"]

TENANT_STATE = "memhub_tenant"
"""The request-state key holding the caller's tenant ("" for an admin key)."""

OVER_QUOTA_STATE = "memhub_over_quota"
"""The request-state key saying the request's CPU work runs niced: its key was refused a
moment ago (Quotas.over_quota), or its tenant has more requests waiting for a slot.

The SDK runs tools in its session's tasks, not in the request's, so the flag travels in the
request's state and the tools run their CPU work in the background themselves."""


SLOT_STATE = "memhub_slot"
"""The request-state key holding the request slot the request holds (memhub._fair.held_slot),
so that the tool, in the SDK's session task, lends it while it waits for ingestion, as a REST
request does."""


class KeyAuth:
    """Require ``Authorization: Bearer <key>`` of an active memhub API key on every request."""

    def __init__(self, app: ASGIApp, admin: AsyncAdmin, settings: AccessSettings | None = None):
        self.app = app
        self.access = Access(admin, settings or AccessSettings.from_env())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        challenge = {"WWW-Authenticate": "Bearer"}
        header = dict(scope.get("headers", [])).get(b"authorization", b"").decode("latin-1")
        kind, _, key = header.strip().partition(" ")
        if kind.lower() not in ("bearer", "token") or not key.strip():
            message = "missing API key: send 'Authorization: Bearer <key>'"
            await answer(send, 401, message, "Unauthorized", challenge)
            return
        try:
            found = await self.access.check(key.strip())
        except (StoreUnavailable, StatementTimeout):
            message = "the database is unavailable; retry later"
            retry = {"Retry-After": str(RETRY_AFTER_SECONDS)}
            await answer(send, 503, message, "StoreUnavailable", retry)
            return
        if found is None:
            await answer(send, 401, "invalid or revoked API key", "Unauthorized", challenge)
            return
        state = scope.setdefault("state", {})
        state[TENANT_STATE] = found.tenant or ""
        if found.tenant is None or scope.get("method") == "DELETE":
            # An admin key has no quotas. A DELETE ends a session and frees what it holds
            # (its event stream): refused at the in-flight cap, it would keep the key shut.
            await self.app(scope, receive, send)
            return

        async def serve(niced: bool) -> None:
            state[OVER_QUOTA_STATE] = niced
            state[SLOT_STATE] = held_slot()
            await self.app(scope, receive, send)

        # A POST carries one JSON-RPC message and is answered when its work is done: it
        # takes a request slot, as a REST request does. A GET is the stream of the server's
        # own messages, open for the session's life and idle: a slot would be held for
        # nothing, and counted as a request it would shut the key's requests out; open
        # streams are bounded apart, by the same number (doors/access.Quotas).
        refused = await self.access.admit(found, serve, slot=scope.get("method") == "POST")
        if refused is not None:
            error, seconds = refused
            await answer(send, 429, error, "TooManyRequests", {"Retry-After": str(seconds)})
