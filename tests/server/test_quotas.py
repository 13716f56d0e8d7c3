"""Limits before work, idempotent adds, per-key rate limits and the tenant backlog cap."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from memhub import AsyncMemory, MemhubSettings
from memhub.doors.access import RateLimiter
from memhub.errors import UsageError
from memhub.server import ServerSettings, create_app
from tests.server.conftest import ADMIN_KEY, bearer, new_key
from tests.server.test_validation import Conn, row_counts


async def test_oversized_body_is_413_naming_the_setting(
    client: httpx.AsyncClient, aconn: Conn
) -> None:
    body = b'{"messages": "' + b"x" * 1_100_000 + b'", "user_id": "u"}'
    response = await client.post(
        "/v1/memories", content=body, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert "MEMHUB_MAX_BODY_BYTES" in response.json()["error"]

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: cut off while streaming
        for _ in range(40):
            yield b" " * 65_536

    streamed = await client.post("/v1/memories", content=chunks())
    assert streamed.status_code == 413
    assert await row_counts(aconn) == (0, 0, 0, 0)


async def test_limits_name_their_setting(client: httpx.AsyncClient) -> None:
    many = await client.post("/v1/memories", json={"messages": ["m"] * 101, "user_id": "u"})
    assert many.status_code == 422
    assert "MEMHUB_MAX_MESSAGES_PER_ADD" in many.json()["error"]
    meta = await client.post(
        "/v1/memories", json={"messages": "m", "user_id": "u", "metadata": {"a": "x" * 20_000}}
    )
    assert "MEMHUB_MAX_METADATA_BYTES" in meta.json()["error"]


async def test_retried_add_with_the_same_key_writes_once(
    client: httpx.AsyncClient, aconn: Conn
) -> None:
    body = {"messages": "I live in Lyon.", "user_id": "u", "infer": False, "wait": True}
    headers = {"Idempotency-Key": "turn-42"}
    first = await client.post("/v1/memories", json=body, headers=headers)
    assert first.status_code == 200, first.text
    counts = await row_counts(aconn)
    again = await client.post("/v1/memories", json=body, headers=headers)
    assert again.status_code == 200
    assert again.json() == first.json()
    assert await row_counts(aconn) == counts
    assert counts[:2] == (1, 1)  # one turn, one memory
    other = await client.post(
        "/v1/memories", json={**body, "messages": "Something else."}, headers=headers
    )
    assert other.status_code == 422
    assert "already used" in other.json()["error"]
    # The key is the scope's own: another user may use the same key.
    bob = await client.post("/v1/memories", json={**body, "user_id": "bob"}, headers=headers)
    assert bob.status_code == 200
    assert bob.json()["results"][0]["id"] != first.json()["results"][0]["id"]


async def test_python_add_is_idempotent(settings: MemhubSettings, aconn: Conn) -> None:
    async with AsyncMemory(settings=settings) as memory:
        first = await memory.add("Hello", user_id="u", idempotency_key="k1")
        again = await memory.add("Hello", user_id="u", idempotency_key="k1")
        assert again == first
        with pytest.raises(UsageError):
            await memory.add("Bye", user_id="u", idempotency_key="k1")
    assert (await row_counts(aconn))[0] == 1


@pytest.fixture
def server_settings() -> ServerSettings:
    return ServerSettings(
        admin_key=SecretStr(ADMIN_KEY), rate_limit=1.0, rate_burst=3, max_queued_jobs=2
    )


async def test_rate_limit_is_429_with_retry_after_per_key(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    keys = [await new_key(client, "acme"), await new_key(client, "globex")]
    transport = httpx.ASGITransport(app=app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://t", headers=bearer(keys[0])) as a,
        httpx.AsyncClient(transport=transport, base_url="http://t", headers=bearer(keys[1])) as b,
    ):
        statuses = [(await a.get("/v1/me")).status_code for _ in range(4)]
        assert statuses == [200, 200, 200, 429]
        refused = await a.get("/v1/me")
        assert refused.status_code == 429
        assert int(refused.headers["Retry-After"]) >= 1
        assert "MEMHUB_RATE_LIMIT" in refused.json()["error"]
        assert (await b.get("/v1/me")).status_code == 200  # another key is unaffected
        admin = [(await client.get("/v1/me")).status_code for _ in range(5)]
        assert admin == [200] * 5  # admin keys are not rate limited


async def test_tenant_backlog_is_capped(settings: MemhubSettings) -> None:
    # No worker runs here, so every add stays queued: the third add of a tenant over a cap
    # of two is refused, before anything is written; another tenant still gets through.
    settings = settings.model_copy(update={"worker": "off"})
    server = ServerSettings(admin_key=SecretStr(ADMIN_KEY), max_queued_jobs=2)
    app = create_app(settings, server=server)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(
            transport=transport, base_url="http://t", headers=bearer(ADMIN_KEY)
        ) as admin:
            keys = [await new_key(admin, "acme"), await new_key(admin, "globex")]
            statuses = []
            for i in range(3):
                r = await admin.post(
                    "/v1/memories",
                    json={"messages": f"m{i}", "user_id": "u"},
                    headers=bearer(keys[0]),
                )
                statuses.append(r.status_code)
            assert statuses == [200, 200, 429]
            assert "MEMHUB_MAX_QUEUED_JOBS" in r.json()["error"]
            assert r.headers["Retry-After"]
            other = await admin.post(
                "/v1/memories", json={"messages": "x", "user_id": "u"}, headers=bearer(keys[1])
            )
            assert other.status_code == 200  # the cap is per tenant


def test_token_bucket_refills_at_its_rate() -> None:
    bucket = RateLimiter(rate=2.0, burst=2.0)
    assert bucket.take("k", now=0.0) == 0.0
    assert bucket.take("k", now=0.0) == 0.0
    assert bucket.take("k", now=0.0) == pytest.approx(0.5)
    assert bucket.take("k", now=0.5) == 0.0
    assert bucket.take("other", now=0.5) == 0.0
