"""The tenant gate: in-flight cap per key, quotas from cached keys, and the key cache's reach
(a revocation notified by the store is forgotten at once, one by hand in SQL at expiry)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from memhub import AsyncMemory, MemhubSettings
from memhub.doors.access import KeyCache
from memhub.memory.admin import ApiKey, AsyncAdmin
from memhub.server import ServerSettings, create_app
from tests.server.conftest import ADMIN_KEY, bearer, new_key
from tests.server.test_validation import Conn


@pytest.fixture
def server_settings() -> ServerSettings:
    return ServerSettings(admin_key=SecretStr(ADMIN_KEY), max_in_flight_per_key=1)


def _client(app: FastAPI, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t", headers=bearer(key)
    )


async def test_requests_over_the_in_flight_cap_are_429_at_once(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    keys = [await new_key(client, "acme"), await new_key(client, "globex")]
    release = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:  # keeps the first request in flight
        yield b'{"messages": "hello", '
        await release.wait()
        yield b'"user_id": "u", "infer": false}'

    async with _client(app, keys[0]) as a, _client(app, keys[1]) as b:
        assert (await a.get("/v1/me")).status_code == 200  # the key is now cached
        held = asyncio.create_task(
            a.post(
                "/v1/memories",
                content=slow_body(),
                headers={"Content-Type": "application/json"},
            )
        )
        await asyncio.sleep(0.2)
        refused = await a.get("/v1/me")
        assert refused.status_code == 429
        assert refused.headers["Retry-After"] == "1"
        assert "MEMHUB_MAX_IN_FLIGHT_PER_KEY" in refused.json()["error"]
        assert (await b.get("/v1/me")).status_code == 200  # another tenant is not held up
        assert (await client.get("/v1/me")).status_code == 200  # nor an admin
        release.set()
        assert (await held).status_code == 200
        assert (await a.get("/v1/me")).status_code == 200  # the slot is free again


async def test_the_in_flight_cap_holds_for_keys_not_cached(settings: MemhubSettings) -> None:
    """With MEMHUB_KEY_CACHE_SECONDS=0 every request's key is looked up: the gate looks it up
    itself, so the cap (and the request slots) hold for those requests too. They passed the
    gate before, and 12 concurrent searches of a capped key all ran (a real `memhub serve`)."""
    server = ServerSettings(
        admin_key=SecretStr(ADMIN_KEY), max_in_flight_per_key=1, key_cache_seconds=0
    )
    app = create_app(settings, server=server)
    release = asyncio.Event()

    async def slow_body() -> AsyncIterator[bytes]:  # keeps the first request in flight
        yield b'{"messages": "hello", '
        await release.wait()
        yield b'"user_id": "u", "infer": false}'

    async with app.router.lifespan_context(app), _client(app, ADMIN_KEY) as admin:
        async with _client(app, await new_key(admin, "acme")) as a:
            held = asyncio.create_task(
                a.post(
                    "/v1/memories",
                    content=slow_body(),
                    headers={"Content-Type": "application/json"},
                )
            )
            for _ in range(1000):  # until the held request is in (were it counted)
                if app.state.memhub.access.quotas.in_flight:
                    break
                await asyncio.sleep(0.01)
            refused = await a.get("/v1/me")
            assert refused.status_code == 429
            assert "MEMHUB_MAX_IN_FLIGHT_PER_KEY" in refused.json()["error"]
            release.set()
            assert (await held).status_code == 200
            assert (await a.get("/v1/me")).status_code == 200  # free again
        assert (await _client(app, "mhk_not_a_key").get("/v1/me")).status_code == 401


async def _revoke_in_database(aconn: Conn, name: str) -> None:
    # By hand in SQL, without a notification: no process is told.
    await aconn.execute("UPDATE api_keys SET revoked_at = now() WHERE name = %s", (name,))


@pytest.mark.parametrize("cache_seconds", [0.0, 3600.0])
async def test_a_key_revoked_elsewhere_works_here_until_the_cache_expires(
    app: FastAPI, client: httpx.AsyncClient, aconn: Conn, cache_seconds: float
) -> None:
    app.state.memhub.keys.ttl = cache_seconds
    key = await new_key(client, "acme")
    async with _client(app, key) as a:
        assert (await a.get("/v1/me")).status_code == 200
        await _revoke_in_database(aconn, "key of acme")
        expected = 200 if cache_seconds else 401  # MEMHUB_KEY_CACHE_SECONDS, documented
        assert (await a.get("/v1/me")).status_code == expected


async def test_a_key_revoked_through_the_store_is_forgotten_at_once(
    app: FastAPI, client: httpx.AsyncClient, settings: MemhubSettings
) -> None:
    app.state.memhub.keys.ttl = 3600.0
    key = await new_key(client, "acme")
    async with _client(app, key) as a:
        assert (await a.get("/v1/me")).status_code == 200  # cached for an hour
        # Another process's store (its own pool and engine): this app is told by NOTIFY.
        async with AsyncMemory(settings=settings) as memory:
            (listed,) = await AsyncAdmin(memory).list_keys(tenant="acme")
            await AsyncAdmin(memory).revoke_key(listed.id)
        # cached for an hour: refused within a minute is NOTIFY's doing, not the cache's end
        deadline = asyncio.get_running_loop().time() + 60
        while (status := (await a.get("/v1/me")).status_code) == 200:
            assert asyncio.get_running_loop().time() < deadline, "still cached"
            await asyncio.sleep(0.01)
        assert status == 401


def test_a_lookup_that_raced_a_revocation_is_not_cached() -> None:
    cache = KeyCache(ttl=3600)
    key = ApiKey(7, "k", "mhk_abcdef", "acme", False, datetime.now(UTC), None, None)
    before = cache.generation
    cache.forget(7)  # the notification landed while the lookup was on its way
    cache.put("digest", key, before)
    assert cache.get("digest") is None
    cache.put("digest", key, cache.generation)
    assert cache.get("digest") == key
    cache.clear()  # after a lost listening session
    assert cache.get("digest") is None


async def test_start_returns_once_the_watch_listens(settings: MemhubSettings) -> None:
    # start(wait=...) once waited for the watch to end too (asyncio.wait's ALL_COMPLETED),
    # so every `memhub serve` and MCP HTTP start stalled its whole wait: here 60 s, caught by
    # the 30 s bound below, while the session listens within a fraction of a second.
    from memhub.doors.access import Access, AccessSettings

    async with AsyncMemory(settings=settings) as memory:
        access = Access(AsyncAdmin(memory), AccessSettings())
        try:
            await asyncio.wait_for(access.start(wait=60.0), 30.0)
            assert access._watching.is_set()
        finally:
            await access.aclose()
