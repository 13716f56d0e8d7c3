"""Over REST too, the id ``POST /v1/memories`` returns works at once (no ``wait``), and an
unknown or another tenant's id is a 404, never their data. Real database and embedder."""

from __future__ import annotations

import uuid

import httpx


async def test_the_returned_id_works_at_once(
    tenant_a: httpx.AsyncClient, tenant_b: httpx.AsyncClient
) -> None:
    added = await tenant_a.post(
        "/v1/memories", json={"messages": "I hate olives.", "user_id": "zed", "infer": False}
    )
    assert added.status_code == 200, added.text
    memory_id = added.json()["results"][0]["id"]
    got = await tenant_a.get(f"/v1/memories/{memory_id}")
    assert got.status_code == 200 and got.json()["memory"] == "I hate olives."
    history = await tenant_a.get(f"/v1/memories/{memory_id}/history")
    assert [e["event"] for e in history.json()] == ["ADD"]
    found = await tenant_a.post("/v1/memories/search", json={"query": "olives", "user_id": "zed"})
    assert [m["id"] for m in found.json()["results"]] == [memory_id]
    for response in (  # another tenant, and an id nobody has
        await tenant_b.get(f"/v1/memories/{memory_id}"),
        await tenant_b.get(f"/v1/memories/{memory_id}/history"),
        await tenant_b.put(f"/v1/memories/{memory_id}", json={"text": "mine"}),
        await tenant_b.delete(f"/v1/memories/{memory_id}"),
        await tenant_a.get(f"/v1/memories/{uuid.uuid4()}"),
    ):
        assert response.status_code == 404, response.text
        assert "olives" not in response.text
    updated = await tenant_a.put(f"/v1/memories/{memory_id}", json={"text": "I love olives."})
    assert updated.status_code == 200, updated.text
    deleted = await tenant_a.delete(f"/v1/memories/{memory_id}")
    assert deleted.status_code == 200
    assert (await tenant_a.get(f"/v1/memories/{memory_id}")).status_code == 404
