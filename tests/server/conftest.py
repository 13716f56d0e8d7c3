"""Fixtures for the REST server: the app on the test's database, clients holding keys."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from memhub import MemhubSettings
from memhub.server import ServerSettings, create_app

ADMIN_KEY = "test-admin-key-0123456789abcdef"


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture
def server_settings() -> ServerSettings:
    return ServerSettings(admin_key=SecretStr(ADMIN_KEY), auth="on")


@pytest.fixture
async def app(settings: MemhubSettings, server_settings: ServerSettings) -> AsyncIterator[FastAPI]:
    """The app, started (httpx's ASGITransport does not run the lifespan itself)."""
    app = create_app(settings, server=server_settings)
    async with app.router.lifespan_context(app):
        yield app


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """A client holding the admin key."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://memhub.test", headers=bearer(ADMIN_KEY)
    ) as client:
        yield client


async def new_key(client: httpx.AsyncClient, tenant: str | None) -> str:
    """A fresh key: a tenant key, or an admin key for ``tenant=None``."""
    body = (
        {"name": f"key of {tenant}", "tenant": tenant}
        if tenant
        else {"name": "admin 2", "is_admin": True}
    )
    response = await client.post("/v1/keys", json=body)
    assert response.status_code == 201, response.text
    return str(response.json()["key"])


@pytest.fixture
async def tenant_a(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """A client on the same app holding tenant ``acme``'s key."""
    key = await new_key(client, "acme")
    return httpx.AsyncClient(
        transport=client._transport, base_url=client.base_url, headers=bearer(key)
    )


@pytest.fixture
async def tenant_b(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """A client on the same app holding tenant ``globex``'s key."""
    key = await new_key(client, "globex")
    return httpx.AsyncClient(
        transport=client._transport, base_url=client.base_url, headers=bearer(key)
    )
