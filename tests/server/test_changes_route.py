"""``GET /v1/memories/changes`` and ``POST /v1/memories/changes/{id}/undo`` on a real database:
what models changed, per scope and tenant, paged, and undone under the same memory id."""

from __future__ import annotations

import httpx

from memhub import AsyncMemory, MemhubSettings


async def test_changes_are_listed_paged_and_undone_within_the_tenant(
    settings: MemhubSettings, tenant_a: httpx.AsyncClient, tenant_b: httpx.AsyncClient
) -> None:
    texts = ["I keep bees.", "I grow leeks.", "I play oboe."]
    body = {"messages": [{"role": "user", "content": t} for t in texts], "user_id": "alice"}
    added = await tenant_a.post("/v1/memories", json={**body, "infer": False, "wait": True})
    ids = [m["id"] for m in added.json()["results"]]
    async with AsyncMemory(settings=settings) as memory:  # what agents' forget does
        for n, memory_id in enumerate(ids):
            await memory.retire(memory_id, user_id="acme:alice", actor=f"agent:a{n}", reason="x")
        # the person's own retire is not a model change
        figs = await memory.add("I like figs.", user_id="acme:alice", infer=False, wait=True)
        await memory.retire(figs["results"][0]["id"], user_id="acme:alice")

    first = await tenant_a.get("/v1/memories/changes", params={"user_id": "alice", "limit": 2})
    assert first.status_code == 200
    page = first.json()
    assert [c["memory_id"] for c in page["results"]] == [ids[2], ids[1]]  # newest first
    assert [c["actor"] for c in page["results"]] == ["agent:a2", "agent:a1"]
    assert page["results"][0]["event"] == "RETIRE" and page["results"][0]["undone"] is False
    params = {"user_id": "alice", "limit": 2, "cursor": page["next_cursor"]}
    rest = (await tenant_a.get("/v1/memories/changes", params=params)).json()
    assert [c["memory_id"] for c in rest["results"]] == [ids[0]] and "next_cursor" not in rest

    other = await tenant_b.get("/v1/memories/changes", params={"user_id": "alice"})
    assert other.json() == {"results": []}
    change_id = page["results"][0]["id"]
    refused = await tenant_b.post(
        f"/v1/memories/changes/{change_id}/undo", params={"user_id": "alice"}
    )
    assert refused.status_code == 404 and refused.json()["type"] == "MemoryNotFound"
    for bad, params in [
        ("/v1/memories/changes", {}),  # whose changes?
        ("/v1/memories/changes", {"user_id": "alice", "cursor": "x"}),
    ]:
        assert (await tenant_a.get(bad, params=params)).status_code == 422
    unscoped = await tenant_a.post(f"/v1/memories/changes/{change_id}/undo")
    assert unscoped.status_code == 422
    assert (await tenant_a.post("/v1/memories/changes/0/undo", params=params)).status_code == 422

    undone = await tenant_a.post(
        f"/v1/memories/changes/{change_id}/undo", params={"user_id": "alice"}
    )
    assert undone.status_code == 200
    assert (undone.json()["id"], undone.json()["user_id"]) == (ids[2], "alice")
    again = await tenant_a.post(
        f"/v1/memories/changes/{change_id}/undo", params={"user_id": "alice"}
    )
    assert again.status_code == 409 and "undone already" in again.json()["error"]
    listed = (await tenant_a.get("/v1/memories/changes", params={"user_id": "alice"})).json()
    assert [c["undone"] for c in listed["results"]] == [True, False, False]
