"""Every memory route's happy path, with Mem0-shaped bodies, on a real database and embedder."""

from __future__ import annotations

import uuid

import httpx

MEMORY_FIELDS = {"id", "memory", "hash", "metadata", "created_at", "updated_at", "valid_from"}


async def add(client: httpx.AsyncClient, user_id: str, *texts: str) -> list[dict[str, object]]:
    response = await client.post(
        "/v1/memories",
        json={
            "messages": [{"role": "user", "content": text} for text in texts],
            "user_id": user_id,
            "infer": False,
            "wait": True,
        },
    )
    assert response.status_code == 200, response.text
    results: list[dict[str, object]] = response.json()["results"]
    return results


async def test_add_with_wait_returns_the_memories_added(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/memories",
        json={
            "messages": [
                {"role": "user", "content": "I love hiking in the Alps every summer."},
                {"role": "assistant", "content": "That sounds wonderful!"},
            ],
            "user_id": "alice",
            "metadata": {"source": "chat"},
            "infer": False,
            "timestamp": "2024-05-01T10:00:00Z",
            "wait": True,
        },
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert {r["memory"] for r in results} == {
        "I love hiking in the Alps every summer.",
        "That sounds wonderful!",
    }
    for item in results:
        assert set(item) >= MEMORY_FIELDS | {"event", "user_id"}
        assert item["event"] == "ADD"
        assert item["user_id"] == "alice"
        assert item["metadata"]["source"] == "chat"
        assert "score" not in item  # absent, not null: Mem0's shape
        assert item["created_at"].startswith("2024-05-01T10:00:00")


async def test_add_without_wait_queues_and_the_worker_ingests(
    client: httpx.AsyncClient, app: object
) -> None:
    response = await client.post(
        "/v1/memories", json={"messages": "My sister lives in Vienna.", "user_id": "bob"}
    )
    assert response.status_code == 200
    body = response.json()
    (queued,) = body["results"]  # no LLM: one memory per message, its id assigned at once
    assert queued["memory"] == "My sister lives in Vienna." and queued["status"] == "PENDING"
    assert body["status"] == "PENDING" and len(body["queued_turn_ids"]) == 1
    await app.state.memhub.memory.wait_idle()  # type: ignore[attr-defined]
    listed = await client.get("/v1/memories", params={"user_id": "bob"})
    assert [m["memory"] for m in listed.json()["results"]] == ["My sister lives in Vienna."]
    assert listed.json()["results"][0]["id"] == queued["id"]


async def test_search_as_of_a_moment(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/memories",
        json={
            "messages": "I moved to Vienna.",
            "user_id": "vera",
            "infer": False,
            "timestamp": "2024-05-01T10:00:00Z",
            "wait": True,
        },
    )
    assert response.status_code == 200, response.text

    async def at(moment: str) -> list[str]:
        body = {"query": "Where do I live?", "user_id": "vera", "as_of": moment}
        found = await client.post("/v1/memories/search", json=body)
        assert found.status_code == 200, found.text
        return [m["memory"] for m in found.json()["results"]]

    assert await at("2024-01-01T00:00:00Z") == []  # not said yet then
    assert await at("2024-06-01T00:00:00Z") == ["I moved to Vienna."]
    bad = await client.post(
        "/v1/memories/search", json={"query": "x", "user_id": "v", "as_of": "soon"}
    )
    assert bad.status_code == 422


async def test_search_ranks_by_meaning_with_scores(client: httpx.AsyncClient) -> None:
    await add(
        client,
        "alice",
        "I love hiking in the Alps every summer.",
        "My sister Anna lives in Vienna.",
        "I am allergic to peanuts.",
    )
    response = await client.post(
        "/v1/memories/search",
        json={"query": "Where does my sister live?", "user_id": "alice", "limit": 2},
    )
    assert response.status_code == 200
    results = response.json()["results"]
    assert len(results) == 2
    assert results[0]["memory"] == "My sister Anna lives in Vienna."
    assert all(0.0 <= r["score"] <= 1.0 for r in results)
    assert results[0]["score"] >= results[1]["score"]


async def test_search_accepts_mem0_top_k_filters_and_threshold(client: httpx.AsyncClient) -> None:
    await add(client, "alice", "I love hiking in the Alps.", "I play the violin.")
    response = await client.post(
        "/v1/memories/search",
        json={
            "query": "music",
            "user_id": "alice",
            "top_k": 5,
            "filters": {"role": "user"},
            "threshold": 0.0,
        },
    )
    assert response.status_code == 200
    assert len(response.json()["results"]) == 2


async def test_results_say_their_kind_and_a_kind_filter_selects(client: httpx.AsyncClient) -> None:
    await add(client, "kim", "I play the violin.")
    query = {"query": "violin", "user_id": "kim", "threshold": 0.0}
    found = await client.post("/v1/memories/search", json=query)
    assert [r["kind"] for r in found.json()["results"]] == ["episode"]
    facts = await client.post("/v1/memories/search", json={**query, "filters": {"kind": "fact"}})
    assert facts.status_code == 200 and facts.json()["results"] == []
    wrong = await client.post("/v1/memories/search", json={**query, "filters": {"kind": "facts"}})
    assert wrong.status_code == 422 and "kind" in wrong.text


async def test_get_all_lists_newest_first_and_respects_limit(client: httpx.AsyncClient) -> None:
    await add(client, "carol", "First fact.")
    await add(client, "carol", "Second fact.")
    response = await client.get("/v1/memories", params={"user_id": "carol"})
    assert [m["memory"] for m in response.json()["results"]] == ["Second fact.", "First fact."]
    limited = await client.get("/v1/memories", params={"user_id": "carol", "limit": 1})
    assert len(limited.json()["results"]) == 1


async def test_get_update_history_delete_one_memory(client: httpx.AsyncClient) -> None:
    (item,) = await add(client, "dave", "I live in Berlin.")
    memory_id = item["id"]

    got = await client.get(f"/v1/memories/{memory_id}")
    assert got.status_code == 200
    assert got.json()["memory"] == "I live in Berlin."

    updated = await client.put(
        f"/v1/memories/{memory_id}", json={"text": "I live in Munich.", "metadata": {"v": 2}}
    )
    assert updated.status_code == 200
    assert updated.json()["message"] == "Memory updated successfully!"
    assert updated.json()["result"]["memory"] == "I live in Munich."
    # PUT replaces the caller's metadata; the role is memhub's, in a column of its own.
    assert updated.json()["result"]["metadata"] == {"v": 2}
    assert updated.json()["result"]["role"] == "user"

    history = await client.get(f"/v1/memories/{memory_id}/history")
    assert [e["event"] for e in history.json()] == ["ADD", "UPDATE"]
    assert history.json()[1]["old_memory"] == "I live in Berlin."
    assert history.json()[1]["new_memory"] == "I live in Munich."

    deleted = await client.delete(f"/v1/memories/{memory_id}")
    assert deleted.json() == {"message": "Memory deleted successfully!"}
    assert (await client.get(f"/v1/memories/{memory_id}")).status_code == 404
    after = await client.get(f"/v1/memories/{memory_id}/history")
    assert [e["event"] for e in after.json()] == ["ADD", "UPDATE", "DELETE"]


async def test_update_accepts_data_as_in_the_python_api(client: httpx.AsyncClient) -> None:
    (item,) = await add(client, "erin", "Old text.")
    response = await client.put(f"/v1/memories/{item['id']}", json={"data": "New text."})
    assert response.json()["result"]["memory"] == "New text."


async def test_by_id_routes_honour_a_scope(client: httpx.AsyncClient) -> None:
    (item,) = await add(client, "frank", "Frank's fact.")
    inside = await client.get(f"/v1/memories/{item['id']}", params={"user_id": "frank"})
    assert inside.status_code == 200
    outside = await client.get(f"/v1/memories/{item['id']}", params={"user_id": "grace"})
    assert outside.status_code == 404
    assert outside.json()["type"] == "MemoryNotFound"


async def test_unknown_memory_is_404(client: httpx.AsyncClient) -> None:
    missing = uuid.uuid4()
    for method, path in [
        ("GET", f"/v1/memories/{missing}"),
        ("DELETE", f"/v1/memories/{missing}"),
        ("GET", f"/v1/memories/{missing}/history"),
    ]:
        response = await client.request(method, path)
        assert response.status_code == 404, (method, path)
        assert response.json() == {
            "error": f"no memory {missing} in this scope",
            "type": "MemoryNotFound",
        }
    put = await client.put(f"/v1/memories/{missing}", json={"text": "x"})
    assert put.status_code == 404


async def test_delete_all_removes_only_that_user(client: httpx.AsyncClient) -> None:
    await add(client, "henry", "Henry one.", "Henry two.")
    await add(client, "iris", "Iris one.")
    response = await client.delete("/v1/memories", params={"user_id": "henry"})
    assert response.status_code == 200
    assert response.json()["message"] == "Memories deleted successfully!"
    assert response.json()["deleted"] >= 2
    assert (await client.get("/v1/memories", params={"user_id": "henry"})).json()["results"] == []
    assert (
        len((await client.get("/v1/memories", params={"user_id": "iris"})).json()["results"]) == 1
    )


async def test_users_lists_counts(client: httpx.AsyncClient) -> None:
    await add(client, "jack", "Jack one.", "Jack two.")
    await add(client, "kate", "Kate one.")
    response = await client.get("/v1/users")
    assert response.status_code == 200
    users = {u["user_id"]: u for u in response.json()["results"]}
    assert users["jack"]["memories"] == 2
    assert users["jack"]["turns"] == 2
    assert users["kate"]["memories"] == 1
    assert users["kate"]["last_activity"] is not None
    page = await client.get("/v1/users", params={"limit": 1, "offset": 1})
    assert [u["user_id"] for u in page.json()["results"]] == ["kate"]


async def test_users_page_by_cursor_inside_a_tenant(
    client: httpx.AsyncClient, tenant_a: httpx.AsyncClient
) -> None:
    for user in ("zoe", "amy", "bob"):
        await add(tenant_a, user, f"{user} was here.")
    await add(client, "acme-other", "Not acme's.")
    first = (await tenant_a.get("/v1/users", params={"limit": 2})).json()
    assert [u["user_id"] for u in first["results"]] == ["amy", "bob"]
    cursor = first["next_cursor"]
    await add(tenant_a, "ann", "Behind the cursor: shown on no later page.")
    rest = (await tenant_a.get("/v1/users", params={"limit": 2, "cursor": cursor})).json()
    assert [u["user_id"] for u in rest["results"]] == ["zoe"]
    assert "next_cursor" not in rest
    both = await tenant_a.get("/v1/users", params={"cursor": cursor, "offset": 1})
    assert both.status_code == 422
    assert (await tenant_a.get("/v1/users", params={"cursor": "nope"})).status_code == 422


async def test_agent_and_run_scopes(client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/v1/memories",
        json={
            "messages": "Always answer in French.",
            "agent_id": "helper",
            "run_id": "run-1",
            "infer": False,
            "wait": True,
        },
    )
    (item,) = response.json()["results"]
    assert item["agent_id"] == "helper"
    assert item["run_id"] == "run-1"
    listed = await client.get("/v1/memories", params={"agent_id": "helper"})
    assert [m["id"] for m in listed.json()["results"]] == [item["id"]]


async def test_job_stats(client: httpx.AsyncClient) -> None:
    response = await client.get("/v1/jobs/stats")
    assert response.status_code == 200
    body = response.json()
    assert body["queued"] == 0
    assert body["parked"] == 0
    assert body["llm"]["llm_calls"] == 0


async def test_healthz_and_whoami(client: httpx.AsyncClient) -> None:
    health = await client.get("/healthz", headers={"Authorization": ""})
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "database": "ok"}
    me = await client.get("/v1/me")
    assert me.json() == {"name": "admin (MEMHUB_ADMIN_KEY)", "tenant": None, "is_admin": True}


async def test_mem0_style_trailing_slashes_work(client: httpx.AsyncClient) -> None:
    (item,) = await add(client, "lena", "Lena's fact.")
    listed = await client.get("/v1/memories/", params={"user_id": "lena"})
    assert listed.status_code == 200
    assert [m["id"] for m in listed.json()["results"]] == [item["id"]]
    history = await client.get(f"/v1/memories/{item['id']}/history/")
    assert history.status_code == 200


async def test_put_replaces_and_patch_merges_the_callers_metadata(
    client: httpx.AsyncClient,
) -> None:
    added = await client.post(
        "/v1/memories",
        json={
            "messages": "I like green tea.",
            "user_id": "u",
            "run_id": "r1",
            "metadata": {"source": "chat", "mood": "calm"},
            "infer": False,
            "wait": True,
        },
    )
    item = added.json()["results"][0]
    memory_id = item["id"]
    assert item["metadata"] == {"source": "chat", "mood": "calm"} and item["role"] == "user"

    patched = await client.patch(
        f"/v1/memories/{memory_id}",
        json={"metadata": {"mood": "happy", "role": "system", "provenance": "forged"}},
    )
    assert patched.status_code == 200, patched.text
    result = patched.json()["result"]
    # Merged; metadata is the caller's (its "role" key too), but never its provenance.
    assert result["metadata"] == {"source": "chat", "mood": "happy", "role": "system"}
    assert result["role"] == "user" and result["memory"] == "I like green tea."  # text kept
    # History is of text, as Mem0's: a metadata-only change writes no UPDATE of equal texts.
    events = (await client.get(f"/v1/memories/{memory_id}/history")).json()
    assert [e["event"] for e in events] == ["ADD"]

    put = await client.put(
        f"/v1/memories/{memory_id}",
        json={"text": "I like black tea.", "metadata": {"source": "form", "session_id": "x"}},
    )
    assert put.status_code == 200, put.text
    assert put.json()["result"]["metadata"] == {"source": "form", "session_id": "x"}
    assert put.json()["result"]["memory"] == "I like black tea."
    events = (await client.get(f"/v1/memories/{memory_id}/history")).json()
    assert [(e["event"], e["old_memory"]) for e in events] == [
        ("ADD", None),
        ("UPDATE", "I like green tea."),
    ]

    empty = await client.patch(f"/v1/memories/{memory_id}", json={})
    assert empty.status_code == 422


async def test_list_pages_with_a_cursor_across_equal_timestamps(client: httpx.AsyncClient) -> None:
    texts = [f"Fact number {n}." for n in range(5)]  # one batch: one created_at for all
    body = {"messages": texts, "user_id": "pager", "infer": False, "wait": True}
    assert (await client.post("/v1/memories", json=body)).status_code == 200
    seen: list[str] = []
    params: dict[str, str | int] = {"user_id": "pager", "limit": 2}
    for _ in range(5):
        page = (await client.get("/v1/memories", params=params)).json()
        seen += [m["memory"] for m in page["results"]]
        if "next_cursor" not in page:
            break
        params["cursor"] = page["next_cursor"]
    assert sorted(seen) == sorted(texts)  # none skipped, none repeated
    bad = await client.get("/v1/memories", params={"user_id": "pager", "cursor": "bm90LWpzb24"})
    assert bad.status_code == 422
    assert "invalid cursor" in bad.json()["error"]


async def test_search_takes_max_tokens_and_rerank_as_the_python_api(
    client: httpx.AsyncClient,
) -> None:
    texts = [f"I went hiking in the Alps on day {n} of the trip with my sister." for n in range(6)]
    await add(client, "budget", *texts)
    body = {"query": "hiking in the Alps", "user_id": "budget", "limit": 6}
    everything = await client.post("/v1/memories/search", json=body)
    assert len(everything.json()["results"]) == 6
    capped = await client.post("/v1/memories/search", json={**body, "max_tokens": 40})
    assert capped.status_code == 200, capped.text
    kept = capped.json()["results"]
    assert 1 <= len(kept) < 6
    assert sum(len(r["memory"]) for r in kept) <= 40 * 4
    refused = await client.post("/v1/memories/search", json={**body, "max_tokens": 0})
    assert refused.status_code == 422
    not_configured = await client.post("/v1/memories/search", json={**body, "rerank": True})
    assert not_configured.status_code == 422  # no MEMHUB_RERANKER on this server
    assert "rerank" in not_configured.text.lower()
    assert (await client.post("/v1/memories/search", json={**body, "rerank": 1})).status_code == 422
    # the cut-off relative to the best score, as search(min_score_ratio=...)
    cut = await client.post("/v1/memories/search", json={**body, "min_score_ratio": 1.0})
    assert cut.status_code == 200, cut.text
    best = everything.json()["results"][0]["score"]
    assert all(r["score"] >= best for r in cut.json()["results"])
    assert 1 <= len(cut.json()["results"]) < 6
    for bad in (1.5, "0.5", True):
        wrong = await client.post("/v1/memories/search", json={**body, "min_score_ratio": bad})
        assert wrong.status_code == 422, bad


async def test_search_returns_the_excerpt_of_a_long_memory_as_the_python_api(
    client: httpx.AsyncClient,
) -> None:
    filler = " ".join(f"Day {n} was spent indoors reading about tides." for n in range(40))
    long = f"{filler} My passport number renewal is due in March. {filler}"
    (added,) = await add(client, "excerpts", long)
    body = {"query": "when is my passport renewal due?", "user_id": "excerpts", "limit": 1}
    (hit,) = (await client.post("/v1/memories/search", json=body)).json()["results"]
    assert hit["id"] == added["id"]
    assert "passport number renewal is due in March" in hit["memory"]
    assert len(hit["memory"]) <= 192 * 4  # MEMHUB_SEARCH_EXCERPT_TOKENS' default
    assert hit["memory"] == long[hit["passage"]["start"] : hit["passage"]["end"]]
    assert hit["passage"]["length"] == len(long)
    wider = {**body, "excerpt_tokens": 400}
    (more,) = (await client.post("/v1/memories/search", json=wider)).json()["results"]
    assert 192 * 4 < len(more["memory"]) <= 400 * 4
    for bad in (-1, 1.5, "10"):
        wrong = await client.post("/v1/memories/search", json={**body, "excerpt_tokens": bad})
        assert wrong.status_code == 422, bad
