"""The gate in front of the whole application: a refused request never enters Starlette's
middleware stack, and a key refused past FLOOD_REFUSALS times in a second has its further
429s held (MEMHUB_FLOOD_HOLD_SECONDS), the same answer sent later, until it goes quiet."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import httpx
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from starlette.types import Receive, Scope, Send

from memhub.server import ServerSettings, gate
from memhub.server.gate import FLOOD_REFUSALS, Floods
from tests.server.conftest import ADMIN_KEY, bearer, new_key

HOLD = 0.5


@pytest.fixture
def server_settings() -> ServerSettings:
    return ServerSettings(
        admin_key=SecretStr(ADMIN_KEY), rate_limit=0.001, rate_burst=1, flood_hold_seconds=HOLD
    )


def _client(app: FastAPI, key: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t", headers=bearer(key)
    )


async def test_a_refusal_never_enters_the_middleware_stack(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    key = await new_key(client, "acme")
    async with _client(app, key) as a:
        assert (await a.get("/v1/me")).status_code == 200  # its one token; now cached
        stack = app.middleware_stack
        assert stack is not None
        entered: list[str] = []

        async def counted(scope: Scope, receive: Receive, send: Send) -> None:
            entered.append(scope["path"])
            await stack(scope, receive, send)

        app.middleware_stack = counted
        for _ in range(10):
            response = await a.post(
                "/v1/memories", content=b"{not json", headers={"Content-Type": "application/json"}
            )
            assert response.status_code == 429
            assert response.headers["Retry-After"].isdigit()
            assert response.headers["Content-Type"] == "application/json"
            assert response.json()["type"] == "TooManyRequests"
            assert "MEMHUB_RATE_LIMIT" in response.json()["error"]
        assert entered == []
        assert (await client.get("/v1/me")).status_code == 200  # counted: the spy works
        assert entered == ["/v1/me"]


async def test_a_flooding_key_has_its_refusals_held(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The holds are read from the gate's own sleeps (it still sleeps them), not a stopwatch."""
    holds: list[float] = []

    async def hold(seconds: float) -> None:
        holds.append(seconds)
        await asyncio.sleep(seconds)

    monkeypatch.setattr(gate, "asyncio", SimpleNamespace(sleep=hold))
    keys = [await new_key(client, "acme"), await new_key(client, "globex")]
    async with _client(app, keys[0]) as a, _client(app, keys[1]) as b:
        assert (await a.get("/v1/me")).status_code == 200
        assert (await b.get("/v1/me")).status_code == 200
        for _ in range(FLOOD_REFUSALS):
            assert (await a.get("/v1/me")).status_code == 429
        assert holds == [], "the first refusals are answered at once"
        held = await a.get("/v1/me")
        assert holds == [HOLD]
        assert held.status_code == 429 and held.json()["type"] == "TooManyRequests"
        assert held.headers["Retry-After"].isdigit()
        # Another key over its quota is not held for A's flood ...
        assert (await b.get("/v1/me")).status_code == 429
        assert holds == [HOLD]
        # ... and an admin is not refused at all.
        assert (await client.get("/v1/me")).status_code == 200


def test_a_flooding_key_stays_held_until_it_goes_quiet() -> None:
    floods = Floods()
    assert not any(floods.flooding(1, 10.0, 1.0) for _ in range(FLOOD_REFUSALS))
    assert floods.flooding(1, 10.5, 1.0)
    assert not floods.flooding(2, 10.5, 1.0)  # per key
    # Its held requests come back a hold later: still flooding, held again (no new burst).
    assert floods.flooding(1, 11.6, 1.0)
    assert floods.flooding(1, 13.5, 1.0)
    assert not floods.flooding(1, 15.6, 1.0)  # quiet for more than hold + 1 s: forgiven
    # A key under the threshold starts each second afresh.
    assert not any(floods.flooding(3, 20.0, 1.0) for _ in range(FLOOD_REFUSALS))
    assert not any(floods.flooding(3, 21.0, 1.0) for _ in range(FLOOD_REFUSALS))
    small = Floods(max_keys=2)
    for key in range(5):  # bounded: old windows are forgotten
        small.flooding(key, 0.0, 1.0)
    assert len(small.windows) <= 2
