"""Two tenants with the same user ids never see, change or delete each other's data."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import psycopg
import pytest

from memhub.errors import UsageError
from memhub.memory.inputs import Limits
from memhub.server.tenancy import Principal

Conn = psycopg.AsyncConnection[tuple[Any, ...]]


async def add(client: httpx.AsyncClient, text: str, **scope: str) -> dict[str, Any]:
    response = await client.post(
        "/v1/memories", json={"messages": text, **scope, "infer": False, "wait": True}
    )
    assert response.status_code == 200, response.text
    (item,) = response.json()["results"]
    return dict(item)


def texts(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return sorted(m["memory"] for m in response.json()["results"])


async def test_same_user_id_in_two_tenants_stays_apart(
    client: httpx.AsyncClient, tenant_a: httpx.AsyncClient, tenant_b: httpx.AsyncClient, aconn: Conn
) -> None:
    a_item = await add(tenant_a, "Acme's Alice likes green tea.", user_id="alice")
    await add(tenant_b, "Globex's Alice likes black coffee.", user_id="alice")
    await add(client, "Unnamespaced Alice likes water.", user_id="alice")

    assert a_item["user_id"] == "alice"  # shown without the namespace
    cur = await aconn.execute("SELECT user_id FROM memories ORDER BY user_id")
    assert [r[0] for r in await cur.fetchall()] == ["acme:alice", "alice", "globex:alice"]

    assert texts(await tenant_a.get("/v1/memories", params={"user_id": "alice"})) == [
        "Acme's Alice likes green tea."
    ]
    assert texts(await tenant_b.get("/v1/memories", params={"user_id": "alice"})) == [
        "Globex's Alice likes black coffee."
    ]
    search = {"query": "What does Alice drink?", "user_id": "alice"}
    assert texts(await tenant_a.post("/v1/memories/search", json=search)) == [
        "Acme's Alice likes green tea."
    ]
    assert texts(await tenant_b.post("/v1/memories/search", json=search)) == [
        "Globex's Alice likes black coffee."
    ]
    # The admin sees ids as stored.
    assert texts(await client.get("/v1/memories", params={"user_id": "acme:alice"})) == [
        "Acme's Alice likes green tea."
    ]

    users_a = (await tenant_a.get("/v1/users")).json()["results"]
    assert [u["user_id"] for u in users_a] == ["alice"]
    users_admin = (await client.get("/v1/users")).json()["results"]
    assert [u["user_id"] for u in users_admin] == ["acme:alice", "alice", "globex:alice"]


async def test_a_tenant_cannot_reach_another_tenants_memory_by_id(
    client: httpx.AsyncClient, tenant_a: httpx.AsyncClient, tenant_b: httpx.AsyncClient
) -> None:
    a_item = await add(tenant_a, "Acme secret: the launch is on Friday.", user_id="alice")
    admin_item = await add(client, "Admin-only fact.", user_id="alice")
    await add(tenant_b, "Globex's own fact.", user_id="alice")

    for victim in (a_item["id"], admin_item["id"]):
        for params in ({}, {"user_id": "alice"}, {"user_id": "acme:alice"}, {"agent_id": "x"}):
            for method, path, body in [
                ("GET", f"/v1/memories/{victim}", None),
                ("PUT", f"/v1/memories/{victim}", {"text": "overwritten by globex"}),
                ("DELETE", f"/v1/memories/{victim}", None),
                ("GET", f"/v1/memories/{victim}/history", None),
            ]:
                response = await tenant_b.request(method, path, params=params, json=body)
                # Exactly what an id that never existed answers: nothing to probe.
                assert response.status_code == 404, (method, path, params)
                assert response.json() == {
                    "error": f"no memory {victim} in this scope",
                    "type": "MemoryNotFound",
                }

    untouched = await tenant_a.get(f"/v1/memories/{a_item['id']}")
    assert untouched.json()["memory"] == "Acme secret: the launch is on Friday."
    history = await tenant_a.get(f"/v1/memories/{a_item['id']}/history")
    assert [e["event"] for e in history.json()] == ["ADD"]
    still = await client.get(f"/v1/memories/{admin_item['id']}")
    assert still.json()["memory"] == "Admin-only fact."


async def test_no_route_leaks_another_tenants_data(
    tenant_a: httpx.AsyncClient, tenant_b: httpx.AsyncClient
) -> None:
    secret = "Acme's vault code is 4711."
    a_items = [
        await add(tenant_a, secret, user_id="alice"),
        await add(tenant_a, secret, agent_id="bot"),
        await add(tenant_a, secret, run_id="run-1"),
    ]
    scopes: list[dict[str, str | bool]] = [
        {"user_id": "alice"},
        {"agent_id": "bot"},
        {"run_id": "run-1"},
    ]
    for scope in scopes:
        calls: list[tuple[str, str, dict[str, str | bool] | None, dict[str, Any] | None]] = [
            ("GET", "/v1/memories", scope, None),
            ("GET", "/v1/memories", {**scope, "include_superseded": True}, None),
            ("POST", "/v1/memories/search", None, {"query": "vault code", **scope}),
            ("GET", "/v1/users", None, None),
            ("DELETE", "/v1/memories", scope, None),
        ]
        for method, path, params, body in calls:
            response = await tenant_b.request(method, path, params=params, json=body)
            assert response.status_code == 200, (method, path, response.text)
            assert "4711" not in response.text
            assert all(item["id"] not in response.text for item in a_items)

    for item in a_items:
        got = await tenant_a.get(f"/v1/memories/{item['id']}")
        assert got.json()["memory"] == secret


async def test_delete_all_of_one_tenant_spares_the_other(
    tenant_a: httpx.AsyncClient, tenant_b: httpx.AsyncClient
) -> None:
    await add(tenant_a, "Acme keeps this.", user_id="alice")
    await add(tenant_b, "Globex drops this.", user_id="alice")
    response = await tenant_b.delete("/v1/memories", params={"user_id": "alice"})
    assert response.status_code == 200
    assert texts(await tenant_b.get("/v1/memories", params={"user_id": "alice"})) == []
    assert texts(await tenant_a.get("/v1/memories", params={"user_id": "alice"})) == [
        "Acme keeps this."
    ]


async def test_tenants_may_not_filter_on_scope_ids(tenant_a: httpx.AsyncClient) -> None:
    for filters in (
        {"user_id": "globex:alice"},
        {"OR": [{"role": "user"}, {"user_id": {"in": ["globex:alice"]}}]},
    ):
        response = await tenant_a.post(
            "/v1/memories/search", json={"query": "x", "user_id": "alice", "filters": filters}
        )
        assert response.status_code == 422
        assert "filters cannot name user_id" in response.json()["error"]


async def test_tenant_owns_its_deleted_memorys_history(tenant_a: httpx.AsyncClient) -> None:
    item = await add(tenant_a, "Short-lived.", user_id="alice")
    assert (await tenant_a.delete(f"/v1/memories/{item['id']}")).status_code == 200
    history = await tenant_a.get(f"/v1/memories/{item['id']}/history")
    assert [e["event"] for e in history.json()] == ["ADD", "DELETE"]
    missing = await tenant_a.get(f"/v1/memories/{uuid.uuid4()}/history")
    assert missing.status_code == 404


async def test_tenant_id_length_leaves_room_for_the_namespace(tenant_a: httpx.AsyncClient) -> None:
    too_long = "u" * 252  # "acme:" + 252 characters would exceed 255
    response = await tenant_a.get("/v1/memories", params={"user_id": too_long})
    assert response.status_code == 422
    assert "the limit is 250" in response.json()["error"]
    fits = await tenant_a.get("/v1/memories", params={"user_id": "u" * 250})
    assert fits.status_code == 200


# -- pure logic ------------------------------------------------------------------------------
LIMITS = Limits()
ACME = Principal(name="k", tenant="acme")
ADMIN = Principal(name="a", tenant=None)


def test_principal_namespaces_and_shows_ids() -> None:
    assert ACME.scope(LIMITS, "alice", None, "r") == {
        "user_id": "acme:alice",
        "agent_id": None,
        "run_id": "acme:r",
    }
    assert ADMIN.scope(LIMITS, "alice") == {"user_id": "alice", "agent_id": None, "run_id": None}
    assert ACME.present({"id": "1", "user_id": "acme:alice", "agent_id": None}) == {
        "id": "1",
        "user_id": "alice",
        "agent_id": None,
    }


@pytest.mark.parametrize("bad", ["", "   ", "a\x00b"])
def test_principal_checks_ids_before_namespacing(bad: str) -> None:
    with pytest.raises(UsageError):
        ACME.stored_id("user_id", bad, LIMITS)


@pytest.mark.parametrize(
    ("stored", "owned"),
    [
        ({"user_id": "acme:alice"}, True),
        ({"user_id": "acme:alice", "agent_id": "acme:bot"}, True),
        ({"user_id": "acme:alice", "agent_id": "globex:bot"}, False),
        ({"user_id": "acmeco:alice"}, False),
        ({"user_id": "alice"}, False),
        ({"user_id": None, "agent_id": None, "run_id": None}, False),
    ],
)
def test_principal_owns_only_fully_namespaced_items(
    stored: dict[str, str | None], owned: bool
) -> None:
    assert ACME.owns(stored) is owned
    assert ADMIN.owns(stored) is True
