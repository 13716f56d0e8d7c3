"""A request over its key's quota costs a header check: no body parse, no database, no pool
checkout (counted by wrapping the pool's checkout and psycopg's execute)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from psycopg_pool import AsyncConnectionPool
from pydantic import SecretStr

from memhub.server import ServerSettings
from tests.server.conftest import ADMIN_KEY, bearer, new_key


@pytest.fixture
def server_settings() -> ServerSettings:
    return ServerSettings(admin_key=SecretStr(ADMIN_KEY), rate_limit=0.001, rate_burst=1)


async def test_an_over_quota_request_never_reaches_the_database(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = await new_key(client, "acme")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://t", headers=bearer(key)
    ) as flooder:
        assert (await flooder.get("/v1/me")).status_code == 200  # its one token; now cached
        touched: list[str] = []
        checkout = AsyncConnectionPool.connection
        execute = psycopg.AsyncConnection.execute

        @asynccontextmanager
        async def counted_checkout(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            touched.append("checkout")
            async with checkout(self, *args, **kwargs) as conn:
                yield conn

        async def counted_execute(self: Any, *args: Any, **kwargs: Any) -> Any:
            touched.append("execute")
            return await execute(self, *args, **kwargs)

        monkeypatch.setattr(AsyncConnectionPool, "connection", counted_checkout)
        monkeypatch.setattr(psycopg.AsyncConnection, "execute", counted_execute)
        for _ in range(20):
            # Not even JSON: a 422 would mean the body was read and parsed.
            response = await flooder.post(
                "/v1/memories", content=b"{not json", headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 429, response.text
            assert response.json()["type"] == "TooManyRequests"
        assert touched == []
        assert (await client.get("/healthz")).status_code == 200  # counted: the spy works
        assert "checkout" in touched and "execute" in touched
