"""Bad input answers 422 with a message that says what was wrong, and writes nothing."""

from __future__ import annotations

from typing import Any

import httpx
import psycopg
import pytest

Conn = psycopg.AsyncConnection[tuple[Any, ...]]


async def row_counts(aconn: Conn) -> tuple[int, ...]:
    cur = await aconn.execute(
        "SELECT (SELECT count(*) FROM conversation_context), (SELECT count(*) FROM memories),"
        " (SELECT count(*) FROM memory_jobs), (SELECT count(*) FROM memory_history)"
    )
    row = await cur.fetchone()
    assert row is not None
    return tuple(int(v) for v in row)


BAD_ADDS: list[tuple[Any, str]] = [
    ({"messages": "hi"}, "one of user_id, agent_id or run_id is required"),
    ({"messages": [], "user_id": "u"}, "messages must not be empty"),
    ({"messages": [{"role": "wizard", "content": "x"}], "user_id": "u"}, "unknown message role"),
    ({"messages": [{"role": "user"}], "user_id": "u"}, "body.messages"),
    ({"messages": "   ", "user_id": "u"}, "must not be empty"),
    ({"messages": "hi", "user_id": ""}, "body.user_id"),
    ({"messages": "hi", "user_id": "u" * 256}, "body.user_id"),
    ({"messages": "hi", "user_id": 42}, "body.user_id"),
    ({"messages": "hi", "user_id": "u", "metadata": {"user_id": "x"}}, "cannot set scope ids"),
    ({"messages": "hi", "user_id": "u", "metadata": [1]}, "body.metadata"),
    ({"messages": "hi", "user_id": "u", "timestamp": "yesterday"}, "body.timestamp"),
    ({"messages": "hi", "user": "u"}, "body.user: Extra inputs are not permitted"),
    ({"messages": "a\x00b", "user_id": "u"}, "NUL"),
    ({"user_id": "u"}, "body.messages: Field required"),
]


@pytest.mark.parametrize(("body", "expected"), BAD_ADDS)
async def test_bad_add_is_422_and_writes_nothing(
    client: httpx.AsyncClient, aconn: Conn, body: Any, expected: str
) -> None:
    before = await row_counts(aconn)
    response = await client.post("/v1/memories", json=body)
    assert response.status_code == 422, response.text
    assert expected in response.json()["error"]
    assert response.json()["type"] in {"UsageError", "ValidationError"}
    assert await row_counts(aconn) == before


async def test_malformed_json_is_422(client: httpx.AsyncClient, aconn: Conn) -> None:
    response = await client.post(
        "/v1/memories", content=b'{"messages": "hi",', headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 422
    assert response.json()["error"].startswith("request body is not valid JSON")
    assert await row_counts(aconn) == (0, 0, 0, 0)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ({"query": "x"}, "one of user_id, agent_id or run_id is required"),
        ({"query": "", "user_id": "u"}, "body.query"),
        ({"query": "x", "user_id": "u", "limit": 0}, "body.limit"),
        ({"query": "x", "user_id": "u", "threshold": 2}, "body.threshold"),
        ({"query": "x", "user_id": "u", "filters": {"x": {"$regex": "a"}}}, "operator"),
    ],
)
async def test_bad_search_is_422(client: httpx.AsyncClient, body: Any, expected: str) -> None:
    response = await client.post("/v1/memories/search", json=body)
    assert response.status_code == 422, response.text
    assert expected in response.json()["error"]


async def test_bad_query_parameters_and_ids_are_422(client: httpx.AsyncClient) -> None:
    cases: list[tuple[str, str, dict[str, str | int]]] = [
        ("GET", "/v1/memories", {}),
        ("GET", "/v1/memories", {"user_id": "u", "limit": "many"}),
        ("DELETE", "/v1/memories", {}),
        ("GET", "/v1/memories/not-a-uuid", {}),
        ("GET", "/v1/users", {"limit": 0}),
    ]
    for method, path, params in cases:
        response = await client.request(method, path, params=params)
        assert response.status_code == 422, (method, path, params, response.text)
        assert response.json()["error"]


async def test_bad_update_writes_nothing(client: httpx.AsyncClient, aconn: Conn) -> None:
    added = await client.post(
        "/v1/memories", json={"messages": "Keep me.", "user_id": "u", "infer": False, "wait": True}
    )
    memory_id = added.json()["results"][0]["id"]
    before = await row_counts(aconn)
    for body in ({"text": ""}, {}, {"text": "x", "metadata": {"run_id": "r"}}, {"text": 5}):
        response = await client.put(f"/v1/memories/{memory_id}", json=body)
        assert response.status_code == 422, body
    assert await row_counts(aconn) == before
    got = await client.get(f"/v1/memories/{memory_id}")
    assert got.json()["memory"] == "Keep me."


async def test_keys_validate_their_body(client: httpx.AsyncClient) -> None:
    for body in (
        {"name": "x"},
        {"name": "x", "tenant": "acme", "is_admin": True},
        {"name": "x", "tenant": "Bad Name"},
        {"name": "", "tenant": "acme"},
    ):
        response = await client.post("/v1/keys", json=body)
        assert response.status_code == 422, body
    assert (await client.get("/v1/keys")).json()["results"] == []
