# ruff: noqa: UP031  (raw JSON bodies read best as %-templates: their braces need no escaping)
"""Hostile input, over REST and the Python API: always a 4xx or a UsageError, nothing written.

Bodies are sent as raw bytes so they can hold what a JSON encoder would refuse to produce:
lone surrogates, NaN, Infinity, deep nesting, numbers past every range.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.errors import UsageError
from tests.server.test_validation import Conn, row_counts

U = '"user_id": "u"'
DEEP = "[" * 5_000 + "]" * 5_000
HOSTILE_POSTS: list[tuple[str, str, str]] = [
    # (id, path, raw JSON body)
    ("nul-meta-key", "/v1/memories", '{"messages": "hi", %s, "metadata": {"a\\u0000": 1}}' % U),
    ("nul-meta-value", "/v1/memories", '{"messages": "hi", %s, "metadata": {"a": "\\u0000"}}' % U),
    (
        "surrogate-meta-key",
        "/v1/memories",
        '{"messages": "hi", %s, "metadata": {"\\ud800": 1}}' % U,
    ),
    (
        "surrogate-meta-value",
        "/v1/memories",
        '{"messages": "hi", %s, "metadata": {"a": "x\\udfff"}}' % U,
    ),
    ("surrogate-content", "/v1/memories", '{"messages": "hi \\ud800", %s}' % U),
    ("surrogate-user", "/v1/memories", '{"messages": "hi", "user_id": "\\ud800"}'),
    (
        "surrogate-role",
        "/v1/memories",
        '{"messages": [{"role": "\\ud800", "content": "x"}], %s}' % U,
    ),
    (
        "surrogate-extra",
        "/v1/memories",
        '{"messages": [{"role": "user", "content": "x", "name": "\\ud800"}], %s}' % U,
    ),
    ("nan-meta", "/v1/memories", '{"messages": "hi", %s, "metadata": {"a": NaN}}' % U),
    ("inf-meta", "/v1/memories", '{"messages": "hi", %s, "metadata": {"a": 1e400}}' % U),
    (
        "huge-int-meta",
        "/v1/memories",
        '{"messages": "hi", %s, "metadata": {"a": %s}}' % (U, "9" * 5000),
    ),
    (
        "deep-meta",
        "/v1/memories",
        '{"messages": "hi", %s, "metadata": {"a": %s}}' % (U, "[" * 40 + "]" * 40),
    ),
    ("deep-body", "/v1/memories", '{"messages": "hi", %s, "metadata": {"a": %s}}' % (U, DEEP)),
    (
        "big-meta",
        "/v1/memories",
        '{"messages": "hi", %s, "metadata": {"a": "%s"}}' % (U, "x" * 20_000),
    ),
    ("ts-1e20", "/v1/memories", '{"messages": "hi", %s, "timestamp": 1e20}' % U),
    ("ts-neg", "/v1/memories", '{"messages": "hi", %s, "timestamp": -1e15}' % U),
    ("ts-nan", "/v1/memories", '{"messages": "hi", %s, "timestamp": NaN}' % U),
    ("ts-inf", "/v1/memories", '{"messages": "hi", %s, "timestamp": Infinity}' % U),
    (
        "ts-year-0",
        "/v1/memories",
        '{"messages": "hi", %s, "timestamp": "0001-01-01T00:00:00+14:00"}' % U,
    ),
    ("too-many-messages", "/v1/memories", json.dumps({"messages": ["m"] * 101, "user_id": "u"})),
    ("huge-text", "/v1/memories", json.dumps({"messages": "x" * 40_000, "user_id": "u"})),
    ("limit-true", "/v1/memories/search", '{"query": "x", %s, "limit": true}' % U),
    ("limit-float", "/v1/memories/search", '{"query": "x", %s, "limit": 1.5}' % U),
    ("nul-filter-key", "/v1/memories/search", '{"query": "x", %s, "filters": {"a\\u0000": 1}}' % U),
    (
        "surrogate-filter-key",
        "/v1/memories/search",
        '{"query": "x", %s, "filters": {"\\ud800": 1}}' % U,
    ),
    (
        "nul-filter-value",
        "/v1/memories/search",
        '{"query": "x", %s, "filters": {"a": "\\u0000"}}' % U,
    ),
    (
        "surrogate-filter-value",
        "/v1/memories/search",
        '{"query": "x", %s, "filters": {"a": {"in": ["\\udc00"]}}}' % U,
    ),
    ("nan-filter", "/v1/memories/search", '{"query": "x", %s, "filters": {"a": {"gt": NaN}}}' % U),
    (
        "huge-in-list",
        "/v1/memories/search",
        json.dumps({"query": "x", "user_id": "u", "filters": {"a": {"in": list(range(100_000))}}}),
    ),
    ("surrogate-query", "/v1/memories/search", '{"query": "x\\ud800", %s}' % U),
    (
        "ts-filter",
        "/v1/memories/search",
        '{"query": "x", %s, "filters": {"created_at": {"gt": "99999-01-01"}}}' % U,
    ),
    ("ten-mb", "/v1/memories", json.dumps({"messages": "x" * 10_000_000, "user_id": "u"})),
]


@pytest.mark.parametrize(
    ("path", "raw"), [c[1:] for c in HOSTILE_POSTS], ids=[c[0] for c in HOSTILE_POSTS]
)
async def test_hostile_posts_are_4xx_and_write_nothing(
    client: httpx.AsyncClient, aconn: Conn, path: str, raw: str
) -> None:
    before = await row_counts(aconn)
    response = await client.post(
        path,
        content=raw.encode("utf-8", "surrogatepass"),
        headers={"Content-Type": "application/json"},
    )
    assert 400 <= response.status_code < 500, response.text[:500]
    assert response.json()["error"]
    assert await row_counts(aconn) == before


HOSTILE_GETS: list[tuple[str, str, dict[str, str]]] = [
    ("GET", "/v1/users", {"offset": "10000000000000000000"}),
    ("GET", "/v1/users", {"offset": "-1"}),
    ("GET", "/v1/users", {"limit": "1e3"}),
    ("GET", "/v1/memories", {"user_id": "u", "limit": "99999999999999999999"}),
    ("GET", "/v1/memories", {"user_id": "u\x00"}),
    ("DELETE", "/v1/memories", {"user_id": "u\x00"}),
    ("GET", "/v1/memories/00000000-0000-0000-0000-000000000000", {"user_id": "\x00"}),
]


@pytest.mark.parametrize(("method", "path", "params"), HOSTILE_GETS)
async def test_hostile_queries_are_4xx(
    client: httpx.AsyncClient, aconn: Conn, method: str, path: str, params: dict[str, str]
) -> None:
    before = await row_counts(aconn)
    response = await client.request(method, path, params=params)
    assert 400 <= response.status_code < 500, response.text[:500]
    assert await row_counts(aconn) == before


async def test_put_of_another_memorys_text_is_never_a_500(client: httpx.AsyncClient) -> None:
    # Once a UniqueViolation (500); now either allowed (no unique index on current text since
    # migration 0011) or a 409 Conflict, never a server error.
    ids = []
    for text in ("I like tea.", "I like coffee."):
        added = await client.post(
            "/v1/memories", json={"messages": text, "user_id": "u", "infer": False, "wait": True}
        )
        ids.append(added.json()["results"][0]["id"])
    response = await client.put(f"/v1/memories/{ids[1]}", json={"text": "I like tea."})
    assert response.status_code in (200, 409), response.text


def _loads(raw: str) -> Any:
    return json.loads(raw.encode("utf-8", "surrogatepass").decode("utf-8", "surrogatepass"))


PYTHON_CASES: list[tuple[str, dict[str, Any]]] = [
    ("nul-meta-key", {"metadata": {"a\x00": 1}}),
    ("surrogate-meta", {"metadata": {"a": "\ud800"}}),
    ("surrogate-meta-key", {"metadata": {"\udfff": 1}}),
    ("nan-meta", {"metadata": {"a": float("nan")}}),
    ("object-meta", {"metadata": {"a": object()}}),
    ("deep-meta", {"metadata": _loads('{"a": %s}' % ("[" * 40 + "]" * 40))}),
    ("big-meta", {"metadata": {"a": "x" * 20_000}}),
    ("ts-1e20", {"timestamp": 1e20}),
    ("ts-nan", {"timestamp": float("nan")}),
    ("ts-neg", {"timestamp": -1e15}),
    ("surrogate-user", {"user_id": "\ud800"}),
    ("surrogate-content", {"messages": "hi \ud800"}),
    ("bad-idempotency-key", {"idempotency_key": "k\x00"}),
]


@pytest.mark.parametrize("kwargs", [c[1] for c in PYTHON_CASES], ids=[c[0] for c in PYTHON_CASES])
async def test_hostile_python_adds_raise_usage_error(
    settings: MemhubSettings, aconn: Conn, kwargs: dict[str, Any]
) -> None:
    before = await row_counts(aconn)
    call = {"messages": "hi", "user_id": "u", **kwargs}
    async with AsyncMemory(settings=settings) as memory:
        with pytest.raises(UsageError):
            await memory.add(call.pop("messages"), **call)
        for filters in ({"a\x00": 1}, {"a": "\ud800"}, {"a": {"in": list(range(2000))}}):
            with pytest.raises(UsageError):
                await memory.search("x", user_id="u", filters=filters)
        with pytest.raises(UsageError):
            await memory.search("x", user_id="u", limit=True)  # type: ignore[arg-type]
    assert await row_counts(aconn) == before
