"""Over REST, ids and filter values with ``%``, quotes and backslashes scope exactly, never 500."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from memhub.server import ServerSettings
from tests.memory.test_awkward_values import AWKWARD
from tests.server.conftest import ADMIN_KEY


@pytest.fixture
def server_settings() -> ServerSettings:
    # Rate limits off: this test sends ~120 requests in a burst; 429s are tested on their own.
    return ServerSettings(admin_key=SecretStr(ADMIN_KEY), auth="on", rate_limit=0)


async def _add(client: httpx.AsyncClient, user: str) -> str:
    response = await client.post(
        "/v1/memories",
        json={
            "messages": f"secret note of user {user!r}",
            "user_id": user,
            "metadata": {"tag": user},
            "infer": False,
            "wait": True,
        },
    )
    assert response.status_code == 200, (user, response.text)
    (item,) = response.json()["results"]
    return str(item["id"])


def _ids(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return [str(item["id"]) for item in body["results"]]


async def test_awkward_ids_and_filter_values_over_rest(
    client: httpx.AsyncClient, tenant_a: httpx.AsyncClient
) -> None:
    for api in (client, tenant_a):  # unnamespaced, and under a tenant's namespace
        ids = {user: await _add(api, user) for user in AWKWARD}
        for user in AWKWARD:
            assert _ids(await api.get("/v1/memories", params={"user_id": user})) == [ids[user]]
            search = await api.post(
                "/v1/memories/search",
                json={"query": "secret note", "user_id": user, "filters": {"tag": user}},
            )
            assert _ids(search) == [ids[user]], user
            other = next(u for u in AWKWARD if u != user)
            outside = await api.get(f"/v1/memories/{ids[other]}", params={"user_id": user})
            assert outside.status_code == 404, (user, outside.text)
        deleted = await api.delete("/v1/memories", params={"user_id": "a%%b"})
        assert deleted.status_code == 200 and deleted.json()["deleted"] == 1
        assert _ids(await api.get("/v1/memories", params={"user_id": "a%b"})) == [ids["a%b"]]
