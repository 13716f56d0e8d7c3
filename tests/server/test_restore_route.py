"""``POST /v1/memories/{id}/restore`` and ``GET /v1/memories/retired`` on a real database."""

from __future__ import annotations

import uuid

import httpx

from memhub import AsyncMemory, MemhubSettings


async def test_restore_route_answers_and_never_crosses_tenants(
    settings: MemhubSettings, tenant_a: httpx.AsyncClient, tenant_b: httpx.AsyncClient
) -> None:
    body = {"messages": "I keep bees.", "user_id": "alice", "infer": False, "wait": True}
    added = await tenant_a.post("/v1/memories", json=body)
    memory_id = added.json()["results"][0]["id"]
    async with AsyncMemory(settings=settings) as memory:  # what an agent's forget does
        await memory.retire(memory_id, user_id="acme:alice", actor="agent:x", reason="asked")

    listed = await tenant_a.get("/v1/memories/retired", params={"user_id": "alice"})
    assert listed.status_code == 200
    (item,) = listed.json()["results"]
    assert (item["id"], item["user_id"], item["retired_by"]) == (memory_id, "alice", "agent:x")
    assert (await tenant_b.get("/v1/memories/retired", params={"user_id": "alice"})).json() == {
        "results": []
    }
    assert (await tenant_a.get(f"/v1/memories/{memory_id}")).status_code == 404  # out of reads

    for client, target in [(tenant_b, memory_id), (tenant_a, str(uuid.uuid4()))]:
        refused = await client.post(f"/v1/memories/{target}/restore")
        assert refused.status_code == 404 and refused.json()["type"] == "MemoryNotFound"
    assert (await tenant_a.post("/v1/memories/not-a-uuid/restore")).status_code == 422

    restored = await tenant_a.post(f"/v1/memories/{memory_id}/restore")
    assert restored.status_code == 200 and restored.json()["memory"] == "I keep bees."
    found = await tenant_a.post("/v1/memories/search", json={"query": "bees", "user_id": "alice"})
    assert [m["id"] for m in found.json()["results"]] == [memory_id]

    again = await tenant_a.post(f"/v1/memories/{memory_id}/restore")
    assert again.status_code == 409 and again.json()["type"] == "NotRestorable"
    assert "is current" in again.json()["error"] and "Retry-After" not in again.headers
    assert (await tenant_a.delete(f"/v1/memories/{memory_id}")).status_code == 200
    erased = await tenant_a.post(f"/v1/memories/{memory_id}/restore")
    assert erased.status_code == 409 and "was erased" in erased.json()["error"]
