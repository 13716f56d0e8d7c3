"""API keys: required, hashed at rest, revocable; admin routes refuse tenant keys."""

from __future__ import annotations

import hashlib
from typing import Any

import httpx
import psycopg
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from memhub import MemhubSettings
from memhub.server import ServerSettings, create_app
from tests.server.conftest import ADMIN_KEY, bearer, new_key

Conn = psycopg.AsyncConnection[tuple[Any, ...]]

ROUTES = [
    ("POST", "/v1/memories", {"messages": "hi", "user_id": "u"}),
    ("POST", "/v1/memories/search", {"query": "hi", "user_id": "u"}),
    ("GET", "/v1/memories?user_id=u", None),
    ("DELETE", "/v1/memories?user_id=u", None),
    ("GET", "/v1/memories/00000000-0000-0000-0000-000000000001", None),
    ("PUT", "/v1/memories/00000000-0000-0000-0000-000000000001", {"text": "x"}),
    ("DELETE", "/v1/memories/00000000-0000-0000-0000-000000000001", None),
    ("GET", "/v1/memories/00000000-0000-0000-0000-000000000001/history", None),
    ("GET", "/v1/users", None),
    ("GET", "/v1/jobs/stats", None),
    ("GET", "/v1/me", None),
    ("POST", "/v1/keys", {"name": "k", "tenant": "t"}),
    ("GET", "/v1/keys", None),
    ("DELETE", "/v1/keys/1", None),
]
ADMIN_ONLY = [r for r in ROUTES if r[1].startswith(("/v1/keys", "/v1/jobs"))]


def anonymous(client: httpx.AsyncClient, headers: dict[str, str]) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=client._transport, base_url=client.base_url, headers=headers)


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": "Bearer"},
        {"Authorization": "Basic dXNlcjpwYXNz"},
        {"Authorization": "Bearer mhk_not-a-real-key"},
        {"Authorization": f"Bearer {ADMIN_KEY}x"},
    ],
    ids=["none", "empty", "basic", "unknown", "near-miss"],
)
async def test_every_v1_route_needs_a_valid_key(
    client: httpx.AsyncClient, aconn: Conn, headers: dict[str, str]
) -> None:
    async with anonymous(client, headers) as caller:
        for method, path, body in ROUTES:
            response = await caller.request(method, path, json=body)
            assert response.status_code == 401, (method, path)
            assert response.json()["type"] == "Unauthorized"
            assert response.headers["WWW-Authenticate"] == "Bearer"
    cur = await aconn.execute("SELECT count(*) FROM conversation_context")
    assert await cur.fetchone() == (0,)


async def test_mem0_token_scheme_is_accepted(client: httpx.AsyncClient) -> None:
    key = await new_key(client, "acme")
    async with anonymous(client, {"Authorization": f"Token {key}"}) as caller:
        me = await caller.get("/v1/me")
    assert me.json() == {"name": "key of acme", "tenant": "acme", "is_admin": False}


async def test_admin_routes_refuse_tenant_keys(tenant_a: httpx.AsyncClient) -> None:
    for method, path, body in ADMIN_ONLY:
        response = await tenant_a.request(method, path, json=body)
        assert response.status_code == 403, (method, path)
        assert response.json() == {"error": "this route needs an admin key", "type": "Forbidden"}


async def test_keys_are_stored_hashed_and_shown_once(
    client: httpx.AsyncClient, aconn: Conn
) -> None:
    created = await client.post("/v1/keys", json={"name": "acme prod", "tenant": "acme"})
    assert created.status_code == 201
    body = created.json()
    secret = body["key"]
    assert secret.startswith("mhk_")
    assert len(secret) >= 40
    assert secret.startswith(body["prefix"])

    cur = await aconn.execute("SELECT * FROM api_keys")
    rows = await cur.fetchall()
    assert len(rows) == 1
    assert all(secret not in str(value) for value in rows[0])
    cur = await aconn.execute("SELECT key_hash FROM api_keys")
    assert await cur.fetchone() == (hashlib.sha256(secret.encode()).hexdigest(),)

    listed = (await client.get("/v1/keys")).json()["results"]
    assert [k["name"] for k in listed] == ["acme prod"]
    assert "key" not in listed[0]
    assert "key_hash" not in listed[0]


async def test_revoked_key_is_refused_at_once(client: httpx.AsyncClient) -> None:
    created = (await client.post("/v1/keys", json={"name": "tmp", "tenant": "acme"})).json()
    async with anonymous(client, bearer(created["key"])) as caller:
        assert (await caller.get("/v1/me")).status_code == 200
        revoked = await client.delete(f"/v1/keys/{created['id']}")
        assert revoked.status_code == 200
        assert revoked.json()["revoked_at"] is not None
        response = await caller.get("/v1/memories", params={"user_id": "alice"})
        assert response.status_code == 401
        assert response.json()["error"] == "invalid or revoked API key"
    assert (await client.get("/v1/keys")).json()["results"] == []
    everything = await client.get("/v1/keys", params={"include_revoked": True})
    assert [k["id"] for k in everything.json()["results"]] == [created["id"]]
    assert (await client.delete("/v1/keys/999999")).status_code == 404


async def test_second_admin_key_manages_keys_and_records_use(client: httpx.AsyncClient) -> None:
    admin2 = await new_key(client, None)
    async with anonymous(client, bearer(admin2)) as caller:
        assert (await caller.get("/v1/me")).json()["is_admin"] is True
        assert (await caller.post("/v1/keys", json={"name": "n", "tenant": "x"})).status_code == 201
    keys = (await client.get("/v1/keys")).json()["results"]
    assert keys[0]["is_admin"] is True
    assert keys[0]["last_used_at"] is not None


async def start(settings: MemhubSettings, server: ServerSettings) -> tuple[FastAPI, Any]:
    app = create_app(settings, server=server)
    context = app.router.lifespan_context(app)
    await context.__aenter__()
    return app, context


async def test_first_start_prints_an_admin_key_once(
    settings: MemhubSettings, aconn: Conn, capsys: pytest.CaptureFixture[str]
) -> None:
    app, context = await start(settings, ServerSettings(auth="on", admin_key=None))
    try:
        printed = capsys.readouterr().out
        (secret,) = [w for w in printed.split() if w.startswith("mhk_")]
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t", headers=bearer(secret)
        ) as caller:
            me = await caller.get("/v1/me")
        assert me.json() == {"name": "bootstrap admin", "tenant": None, "is_admin": True}
    finally:
        await context.__aexit__(None, None, None)
    cur = await aconn.execute("SELECT key_hash FROM api_keys")
    assert await cur.fetchall() == [(hashlib.sha256(secret.encode()).hexdigest(),)]

    # A second start finds a key and creates none.
    _, context = await start(settings, ServerSettings(auth="on", admin_key=None))
    await context.__aexit__(None, None, None)
    assert "mhk_" not in capsys.readouterr().out
    cur = await aconn.execute("SELECT count(*) FROM api_keys")
    assert await cur.fetchone() == (1,)


async def test_configured_admin_key_skips_bootstrap(
    settings: MemhubSettings, aconn: Conn, capsys: pytest.CaptureFixture[str]
) -> None:
    _, context = await start(settings, ServerSettings(auth="on", admin_key=SecretStr(ADMIN_KEY)))
    await context.__aexit__(None, None, None)
    assert "mhk_" not in capsys.readouterr().out
    cur = await aconn.execute("SELECT count(*) FROM api_keys")
    assert await cur.fetchone() == (0,)


async def test_auth_off_treats_callers_as_local_admin(settings: MemhubSettings) -> None:
    app, context = await start(settings, ServerSettings(auth="off"))
    try:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t"
        ) as caller:
            me = await caller.get("/v1/me")
        assert me.json()["is_admin"] is True
    finally:
        await context.__aexit__(None, None, None)


def test_auth_off_listens_on_loopback_only(caplog: pytest.LogCaptureFixture) -> None:
    from memhub.server.main import listen_address

    assert listen_address(ServerSettings(auth="off", host="0.0.0.0", port=9000)) == (
        "127.0.0.1",
        9000,
    )
    assert "every caller is admin" in caplog.text
    assert listen_address(ServerSettings(auth="on", host="0.0.0.0")) == ("0.0.0.0", 8765)


def test_admin_key_must_be_long(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMHUB_ADMIN_KEY", "short")
    with pytest.raises(ValueError, match="admin_key"):
        ServerSettings.from_env()
    monkeypatch.setenv("MEMHUB_ADMIN_KEY", ADMIN_KEY)
    monkeypatch.setenv("MEMHUB_PORT", "9999")
    loaded = ServerSettings.from_env()
    assert loaded.admin_key is not None
    assert loaded.admin_key.get_secret_value() == ADMIN_KEY
    assert loaded.port == 9999
