"""API keys on the MCP HTTP transport: the same keys as the REST server, checked per request.

A tenant key scopes every tool call to the tenant's namespace (ids stored as
``"<tenant>:<id>"``, exactly as the REST server stores them); requests without a valid key
answer 401 before the MCP SDK sees them.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Receive, Scope, Send

from memhub.memory.admin import AsyncAdmin

__all__ = ["TENANT_STATE", "KeyAuth"]

TENANT_STATE = "memhub_tenant"
"""The request-state key holding the caller's tenant ("" for an admin key)."""


async def _refuse(send: Send, status: int, message: str) -> None:
    body = json.dumps({"error": message, "type": "Unauthorized"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b"Bearer"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class KeyAuth:
    """Require ``Authorization: Bearer <key>`` of an active memhub API key on every request."""

    def __init__(self, app: ASGIApp, admin: AsyncAdmin) -> None:
        self.app = app
        self.admin = admin

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers", [])).get(b"authorization", b"").decode("latin-1")
        kind, _, key = header.strip().partition(" ")
        if kind.lower() not in ("bearer", "token") or not key.strip():
            await _refuse(send, 401, "missing API key: send 'Authorization: Bearer <key>'")
            return
        found = await self.admin.resolve_key(key.strip())
        if found is None:
            await _refuse(send, 401, "invalid or revoked API key")
            return
        state = scope.setdefault("state", {})
        state[TENANT_STATE] = found.tenant or ""
        await self.app(scope, receive, send)
