"""The MCP HTTP door checks keys with the REST server's :class:`Access`: the same keys (the
admin key of ``MEMHUB_ADMIN_KEY`` included), the same key cache and the same quotas."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from starlette.types import Receive, Scope, Send

from memhub import AsyncMemory, MemhubSettings
from memhub.mcp.auth import TENANT_STATE, KeyAuth
from memhub.memory.access import AccessSettings
from memhub.memory.admin import AsyncAdmin
from memhub.testing import FakeEmbedder

ADMIN = "mcp-env-admin-key-0123456789"


class Tools:
    """The SDK's app stand-in: records the tenant each admitted request carried."""

    def __init__(self) -> None:
        self.tenants: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.tenants.append(scope["state"][TENANT_STATE])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


@pytest.fixture
async def admin(settings: MemhubSettings) -> AsyncIterator[AsyncAdmin]:
    async with AsyncMemory(settings=settings, embedder=FakeEmbedder()) as memory:
        yield AsyncAdmin(memory)


async def test_the_same_keys_cache_and_quotas_as_rest(admin: AsyncAdmin) -> None:
    tools = Tools()
    access = AccessSettings(
        admin_key=SecretStr(ADMIN), rate_limit=0.01, rate_burst=3, key_cache_seconds=60
    )
    door = KeyAuth(tools, admin, access)
    _, tenant = await admin.create_key("mcp acme", tenant="acme")
    _, stored_admin = await admin.create_key("mcp admin", is_admin=True)
    transport = httpx.ASGITransport(app=door)

    async def call(key: str | None) -> httpx.Response:
        headers: dict[str, Any] = {} if key is None else {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://mcp.test") as client:
            return await client.post("/mcp", json={}, headers=headers)

    assert (await call(ADMIN)).status_code == 200, "MEMHUB_ADMIN_KEY is refused on MCP"
    assert (await call(stored_admin)).status_code == 200
    assert (await call(None)).status_code == 401
    assert (await call("mhk_not-a-key")).status_code == 401
    statuses = [(await call(tenant)).status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429], "the tenant's bucket (burst 3) is not applied"
    refused = await call(tenant)
    assert refused.json()["type"] == "TooManyRequests" and "retry-after" in refused.headers
    assert tools.tenants == ["", "", "acme", "acme", "acme"]
    # The two stored keys were looked up once and cached; the env admin key is never stored.
    assert len(door.access.keys._entries) == 2
    await door.access.aclose()  # its session listening for revocations
