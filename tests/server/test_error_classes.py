"""One status per class of bad input: undecodable bodies 422 like invalid JSON, edge values
refused or accepted as documented, two framings of one body refused 400 before any route."""

from __future__ import annotations

from typing import Any

import httpx

JSON = {"Content-Type": "application/json"}


def _uniform(response: httpx.Response, status: int, type_: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    assert body["type"] == type_ and isinstance(body["error"], str) and body["error"]
    return body


UNDECODABLE = [
    b'{"messages": "\xff\xfe", "user_id": "u"}',  # not UTF-8
    b'{"messages": "x", "user_id": "u", "metadata": {"n": ' + b"9" * 5000 + b"}}",
    b'{"messages": "x", "user_id": ',  # not JSON
]


async def test_bodies_that_cannot_be_decoded_are_422(client: httpx.AsyncClient) -> None:
    for raw in UNDECODABLE:
        response = await client.post("/v1/memories", content=raw, headers=JSON)
        body = _uniform(response, 422, "ValidationError")
        assert body["error"].startswith("request body is not valid JSON")
    assert (await client.get("/v1/memories", params={"user_id": "u"})).json()["results"] == []


async def test_the_last_second_of_year_9999_and_the_first_of_year_1_are_accepted(
    client: httpx.AsyncClient,
) -> None:
    for stamp in ("9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", 253402300799):
        response = await client.post(
            "/v1/memories",
            json={
                "messages": f"said at {stamp}",
                "user_id": "u",
                "infer": False,
                "timestamp": stamp,
            },
        )
        assert response.status_code == 200, (stamp, response.text)
    for stamp in ("9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", 253402300800):
        response = await client.post(
            "/v1/memories",
            json={"messages": "out of range", "user_id": "u", "infer": False, "timestamp": stamp},
        )
        _uniform(response, 422, "UsageError")


NOT_BOOLEANS = [
    ("timestamp", True),
    ("timestamp", False),
    ("infer", "yes"),
    ("infer", 1),
    ("wait", 1),
    ("wait", "true"),
]


async def test_booleans_are_strict_and_not_numbers(client: httpx.AsyncClient) -> None:
    for field, value in NOT_BOOLEANS:
        body = {"messages": "strict", "user_id": "u", "infer": False, field: value}
        _uniform(await client.post("/v1/memories", json=body), 422, "ValidationError")
    assert (await client.get("/v1/memories", params={"user_id": "u"})).json()["results"] == []


async def test_content_length_with_transfer_encoding_is_refused_before_any_route(
    client: httpx.AsyncClient,
) -> None:
    raw = b'{"messages": "smuggled", "user_id": "u", "infer": false}'
    headers = {**JSON, "Content-Length": str(len(raw)), "Transfer-Encoding": "chunked"}
    response = await client.post("/v1/memories", content=raw, headers=headers)
    _uniform(response, 400, "BadRequest")
    assert response.headers["connection"] == "close"
    assert (await client.get("/v1/memories", params={"user_id": "u"})).json()["results"] == []


# Values the OpenAPI schema forbids (a date-time string, an integer, a boolean, a number),
# which lax pydantic would take: 0 and "0" as 1970, false as 0, 0 as false, "0.5" as 0.5.
SCHEMA_FORBIDS: list[tuple[str, dict[str, Any]]] = [
    ("/v1/memories/search", {"query": "q", "user_id": "u", "as_of": 0}),
    ("/v1/memories/search", {"query": "q", "user_id": "u", "as_of": 1.5}),
    ("/v1/memories/search", {"query": "q", "user_id": "u", "as_of": "0"}),
    ("/v1/memories/search", {"query": "q", "user_id": "u", "threshold": True}),
    ("/v1/memories/search", {"query": "q", "user_id": "u", "threshold": "0.5"}),
    ("/v1/jobs/retry", {"ids": [False]}),
    ("/v1/jobs/retry", {"ids": ["12"]}),
    ("/v1/jobs/retry", {"ids": [1.0]}),
    ("/v1/keys", {"name": "n", "is_admin": 0}),
    ("/v1/keys", {"name": "n", "is_admin": "true"}),
    ("/v1/memories", {"messages": "m", "user_id": "u", "infer": False, "timestamp": "1700000000"}),
    ("/v1/memories", {"messages": "m", "user_id": "u", "infer": False, "expiration_date": 0}),
]


async def test_values_the_schema_forbids_are_422(client: httpx.AsyncClient) -> None:
    for path, body in SCHEMA_FORBIDS:
        refused = _uniform(await client.post(path, json=body), 422, "ValidationError")
        assert refused["details"], (path, body)
    assert (await client.get("/v1/keys")).json()["results"] == []  # no key was created
    assert (await client.get("/v1/memories", params={"user_id": "u"})).json()["results"] == []


async def test_what_the_schema_allows_is_still_accepted(client: httpx.AsyncClient) -> None:
    search = {"query": "q", "user_id": "u", "as_of": "2024-05-01T10:00:00Z", "threshold": 0}
    assert (await client.post("/v1/memories/search", json=search)).status_code == 200
    assert (await client.post("/v1/jobs/retry", json={"ids": [1, 2]})).json() == {"requeued": 0}
    key = await client.post("/v1/keys", json={"name": "ops", "is_admin": True})
    assert key.status_code == 201 and key.json()["is_admin"] is True
    for timestamp in (1714557600, 1714557600.5, "2024-05-01T10:00:00Z"):
        add = {"messages": "m", "user_id": "u", "infer": False, "timestamp": timestamp}
        assert (await client.post("/v1/memories", json=add)).status_code == 200, timestamp
    expiring = {"messages": "e", "user_id": "u", "infer": False, "expiration_date": "2999-01-01"}
    assert (await client.post("/v1/memories", json=expiring)).status_code == 200
