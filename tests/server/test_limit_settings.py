"""Filter size, page size and offset limits are settings: each is honoured and named (422)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from memhub import AsyncMemory, MemhubSettings, UsageError
from memhub.server import ServerSettings
from tests.server.conftest import ADMIN_KEY

SMALL = {
    "max_filter_depth": 2,
    "max_filter_conditions": 3,
    "max_filter_in_values": 4,
    "max_search_results": 100,  # the smallest allowed: the default limit
    "max_page_size": 100,
}


@pytest.fixture
def settings(settings: MemhubSettings) -> MemhubSettings:
    return settings.model_copy(update=SMALL)


@pytest.fixture
def server_settings() -> ServerSettings:
    return ServerSettings(admin_key=SecretStr(ADMIN_KEY), max_offset=10)


def _search(filters: dict[str, Any] | None = None, limit: int = 1) -> dict[str, Any]:
    return {"query": "where", "user_id": "u", "filters": filters, "limit": limit}


DEEP = {"AND": [{"AND": [{"a": 1}]}]}  # three levels
MANY = {"a": 1, "b": 2, "c": 3, "d": 4}
LISTED = {"a": {"in": [1, 2, 3]}, "b": {"nin": [4, 5]}}  # five values over two lists


@pytest.mark.parametrize(
    ("body", "setting"),
    [
        (_search(DEEP), "MEMHUB_MAX_FILTER_DEPTH"),
        (_search(MANY), "MEMHUB_MAX_FILTER_CONDITIONS"),
        (_search(LISTED), "MEMHUB_MAX_FILTER_IN_VALUES"),
        (_search({"a": {"in": [1, 2, 3, 4, 5]}}), "MEMHUB_MAX_FILTER_IN_VALUES"),
        (_search(limit=101), "MEMHUB_MAX_SEARCH_RESULTS"),
        (_search(limit=10**30), "MEMHUB_MAX_SEARCH_RESULTS"),
    ],
)
async def test_search_limits_are_settings(
    client: httpx.AsyncClient, body: dict[str, Any], setting: str
) -> None:
    response = await client.post("/v1/memories/search", json=body)
    assert response.status_code == 422, response.text
    assert setting in response.json()["error"]


async def test_within_the_settings_is_accepted(client: httpx.AsyncClient) -> None:
    inside = {"AND": [{"a": {"in": [1, 2]}}, {"b": 1}, {"c": {"nin": [1, 2]}}]}
    assert (await client.post("/v1/memories/search", json=_search(inside, 100))).status_code == 200
    assert (await client.get("/v1/memories", params={"user_id": "u", "limit": 100})).is_success
    assert (await client.get("/v1/users", params={"limit": 100, "offset": 10})).is_success


@pytest.mark.parametrize(
    ("path", "params", "setting"),
    [
        ("/v1/memories", {"user_id": "u", "limit": 101}, "MEMHUB_MAX_PAGE_SIZE"),
        ("/v1/users", {"limit": 101}, "MEMHUB_MAX_PAGE_SIZE"),
        ("/v1/users", {"offset": 11}, "MEMHUB_MAX_OFFSET"),
        ("/v1/users", {"offset": 10**19}, "MEMHUB_MAX_OFFSET"),
        ("/v1/jobs/parked", {"limit": 101}, "MEMHUB_MAX_PAGE_SIZE"),
    ],
)
async def test_page_limits_are_settings(
    client: httpx.AsyncClient, path: str, params: dict[str, Any], setting: str
) -> None:
    response = await client.get(path, params=params)
    assert response.status_code == 422, response.text
    assert setting in response.json()["error"]


async def test_the_python_api_honours_the_same_settings(settings: MemhubSettings) -> None:
    async with AsyncMemory(settings=settings) as memory:
        with pytest.raises(UsageError, match="MEMHUB_MAX_FILTER_DEPTH"):
            await memory.search("q", user_id="u", filters=DEEP)
        with pytest.raises(UsageError, match="MEMHUB_MAX_FILTER_CONDITIONS"):
            await memory.get_all(user_id="u", filters=MANY)
        with pytest.raises(UsageError, match="MEMHUB_MAX_FILTER_IN_VALUES"):
            await memory.get_all(user_id="u", filters=LISTED)
        with pytest.raises(UsageError, match="MEMHUB_MAX_SEARCH_RESULTS"):
            await memory.search("q", user_id="u", limit=101)
        with pytest.raises(UsageError, match="MEMHUB_MAX_PAGE_SIZE"):
            await memory.get_all(user_id="u", limit=101)


def test_the_variables_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SMALL.items():
        monkeypatch.setenv(f"MEMHUB_{name.upper()}", str(value))
    monkeypatch.setenv("MEMHUB_MAX_OFFSET", "10")
    monkeypatch.setenv("MEMHUB_MAX_IN_FLIGHT_PER_KEY", "2")
    monkeypatch.setenv("MEMHUB_KEY_CACHE_SECONDS", "0")
    settings = MemhubSettings.from_env()
    assert {name: getattr(settings, name) for name in SMALL} == SMALL
    server = ServerSettings.from_env()
    assert (server.max_offset, server.max_in_flight_per_key, server.key_cache_seconds) == (10, 2, 0)
