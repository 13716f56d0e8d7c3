"""Over REST, a search hit on a long message returns its passage and says where it lies.

Real parts: the server's MiniLM embedder (a 256-token window) and its PostgreSQL.
"""

from __future__ import annotations

import httpx

from tests.memory.test_passages import LONG, TAIL


async def test_search_returns_the_passage_and_get_the_whole(client: httpx.AsyncClient) -> None:
    added = await client.post(
        "/v1/memories",
        json={
            "messages": [
                {"role": "assistant", "content": LONG},
                {"role": "user", "content": "I also want to bake bread."},
            ],
            "user_id": "alice",
            "infer": False,
            "wait": True,
        },
    )
    assert added.status_code == 200, added.text
    found = await client.post(
        "/v1/memories/search",
        json={"query": "When is my sister's wedding?", "user_id": "alice", "limit": 2},
    )
    assert found.status_code == 200, found.text
    best, other = found.json()["results"]
    assert TAIL in best["memory"] and len(best["memory"]) < len(LONG)
    start, end = best["passage"]["start"], best["passage"]["end"]
    assert (best["memory"], best["passage"]["length"]) == (LONG[start:end], len(LONG))
    assert "passage" not in other
    whole = await client.get(f"/v1/memories/{best['id']}")
    assert whole.json()["memory"] == LONG and "passage" not in whole.json()
