"""``GET /v1/scopes``: every scope kind with memories, each tenant's own only."""

from __future__ import annotations

import httpx


async def _add(client: httpx.AsyncClient, text: str, **scope: str) -> None:
    body = {"messages": text, **scope, "infer": False, "wait": True}
    response = await client.post("/v1/memories", json=body)
    assert response.status_code == 200, response.text


async def test_every_scope_kind_is_listed_and_tenants_see_their_own(
    client: httpx.AsyncClient, tenant_a: httpx.AsyncClient, tenant_b: httpx.AsyncClient
) -> None:
    await _add(tenant_a, "Escalate refunds.", agent_id="support-bot")  # an agent alone
    await _add(tenant_a, "Ada likes tea.", user_id="ada")
    await _add(tenant_a, "Ada asked about Porto.", user_id="ada", run_id="r1")
    await _add(tenant_a, "Run note.", run_id="r2")
    await _add(tenant_b, "Globex secret.", user_id="ada")

    listed = await tenant_a.get("/v1/scopes")
    assert listed.status_code == 200, listed.text
    scopes = [
        ({k: v for k, v in s.items() if k in ("user_id", "agent_id", "run_id")}, s["memories"])
        for s in listed.json()["results"]
    ]
    assert scopes == [
        ({"user_id": "ada", "agent_id": None, "run_id": "r1"}, 1),
        ({"user_id": "ada", "agent_id": None, "run_id": None}, 1),
        ({"user_id": None, "agent_id": "support-bot", "run_id": None}, 1),
        ({"user_id": None, "agent_id": None, "run_id": "r2"}, 1),
    ]
    # What the page does with the agent's scope: list it by agent_id alone (no 422).
    page = await tenant_a.get("/v1/memories", params={"agent_id": "support-bot"})
    assert [m["memory"] for m in page.json()["results"]] == ["Escalate refunds."]

    other = (await tenant_b.get("/v1/scopes")).json()["results"]
    assert [(s["user_id"], s["memories"]) for s in other] == [("ada", 1)]
    admin = (await client.get("/v1/scopes")).json()["results"]
    assert {s["user_id"] for s in admin} >= {"acme:ada", "globex:ada"}
    assert (await tenant_a.get("/v1/scopes", params={"limit": 0})).status_code == 422
    assert len((await tenant_a.get("/v1/scopes", params={"limit": 2})).json()["results"]) == 2
