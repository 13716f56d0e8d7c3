"""Failures answer with a typed JSON body and never a traceback; the spec and page are served."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict
from pydantic import SecretStr

from memhub import AsyncMemory, MemhubSettings
from memhub.doors.answers import RETRY_AFTER_SECONDS
from memhub.errors import (
    Conflict,
    MemhubError,
    MemoryNotFound,
    ProviderHTTPError,
    StoreUnavailable,
    UsageError,
)
from memhub.server import ServerSettings, create_app
from memhub.server.errors import STATUSES
from tests.server.conftest import ADMIN_KEY, bearer


class BrokenMemory(AsyncMemory):
    """Fails the way a bug (search) or a provider outage (add) would."""

    async def search(self, query: str, **kwargs: Any) -> Any:
        raise RuntimeError("secret internal detail: password=hunter2")

    async def add(self, messages: Any, **kwargs: Any) -> Any:
        raise ProviderHTTPError("embedder at http://10.0.0.5 said 502", status_code=502)


@pytest.fixture
async def broken(settings: MemhubSettings) -> AsyncIterator[httpx.AsyncClient]:
    memory = BrokenMemory(settings=settings)
    app = create_app(memory=memory, server=ServerSettings(admin_key=SecretStr(ADMIN_KEY)))
    try:
        async with app.router.lifespan_context(app):
            # raise_app_exceptions=False: Starlette re-raises unhandled errors for the server to
            # log after answering; the client only sees the answer.
            transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://t", headers=bearer(ADMIN_KEY)
            ) as client:
                yield client
    finally:
        await memory.aclose()


async def test_unexpected_errors_are_500_without_details(
    broken: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    response = await broken.post("/v1/memories/search", json={"query": "x", "user_id": "u"})
    assert response.status_code == 500
    assert response.json() == {
        "error": "internal server error (see the server log)",
        "type": "InternalError",
    }
    assert "hunter2" not in response.text
    assert "Traceback" not in response.text
    assert "hunter2" in caplog.text  # but the operator can see it


async def test_provider_outages_are_502_with_retry_after(broken: httpx.AsyncClient) -> None:
    response = await broken.post("/v1/memories", json={"messages": "hi", "user_id": "u"})
    assert response.status_code == 502
    assert response.json()["type"] == "ProviderHTTPError"
    assert response.headers["Retry-After"] == str(RETRY_AFTER_SECONDS)
    assert "10.0.0.5" not in response.text


def _error_tree(root: type[MemhubError]) -> list[type[MemhubError]]:
    """memhub's public error classes (``__module__ == "memhub"``), however deep.

    Internal subclasses, such as the agent's ToolError, never leave their layer.
    """
    found = [root] if root.__module__ == "memhub" else []
    for sub in root.__subclasses__():
        found.extend(_error_tree(sub))
    return found


def test_every_error_class_has_its_own_status() -> None:
    """Walks memhub's error tree: a class without an entry of its own fails this test."""
    classes = set(_error_tree(MemhubError))
    assert set(STATUSES) == classes
    documented = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    for cls, mapping in STATUSES.items():
        assert f"`{cls.__name__}`" in documented, f"{cls.__name__} missing from docs/api.md"
        if issubclass(cls, UsageError | MemoryNotFound | Conflict):
            assert mapping.status < 500, cls  # the caller's input or a lost race: never 5xx
    assert STATUSES[Conflict].status == 409
    assert STATUSES[StoreUnavailable].status == 503 and STATUSES[StoreUnavailable].retry
    assert STATUSES[ProviderHTTPError].status == 502 and STATUSES[ProviderHTTPError].retry


async def test_database_down_is_503(settings: MemhubSettings, pg_admin_url: str) -> None:
    settings = settings.model_copy(update={"connect_timeout": 1.0})
    app = create_app(settings, server=ServerSettings(admin_key=SecretStr(ADMIN_KEY)))
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t", headers=bearer(ADMIN_KEY)
        ) as client,
    ):
        assert (await client.get("/healthz")).status_code == 200
        assert settings.database_url is not None
        name = str(conninfo_to_dict(settings.database_url)["dbname"])
        async with await psycopg.AsyncConnection.connect(pg_admin_url, autocommit=True) as c:
            await c.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        health = await client.get("/healthz")
        assert health.status_code == 503
        assert health.json() == {"status": "unavailable", "database": "unreachable"}
        listed = await client.get("/v1/memories", params={"user_id": "u"})
        assert listed.status_code == 503
        assert listed.json() == {
            "error": "the database is unavailable; retry later",
            "type": "StoreUnavailable",
        }


async def test_unknown_route_and_method_are_json(client: httpx.AsyncClient) -> None:
    missing = await client.get("/v1/nothing-here")
    assert missing.status_code == 404
    assert missing.json() == {"error": "Not Found", "type": "NotFound"}
    wrong = await client.patch("/v1/memories")
    assert wrong.status_code == 405
    assert wrong.json()["type"] == "MethodNotAllowed"


async def test_openapi_spec_lists_the_routes(client: httpx.AsyncClient) -> None:
    spec = (await client.get("/openapi.json")).json()
    assert spec["info"]["title"] == "memhub"
    paths = spec["paths"]
    assert set(paths) >= {
        "/v1/memories",
        "/v1/memories/search",
        "/v1/memories/{memory_id}",
        "/v1/memories/{memory_id}/history",
        "/v1/users",
        "/v1/keys",
        "/v1/keys/{key_id}",
        "/v1/jobs/stats",
        "/healthz",
    }
    assert set(paths["/v1/memories"]) == {"get", "post", "delete"}
    assert set(paths["/v1/memories/{memory_id}"]) == {"get", "put", "patch", "delete"}
    add_body = paths["/v1/memories"]["post"]["requestBody"]["content"]["application/json"]
    assert add_body["schema"]["$ref"].endswith("/AddRequest")


async def test_page_and_its_files_are_served(client: httpx.AsyncClient) -> None:
    page = await client.get("/", headers={"Authorization": ""})
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert '<script type="module" src="/static/app.js">' in page.text
    for name, kind in (("app.js", "javascript"), ("style.css", "text/css")):
        response = await client.get(f"/static/{name}")
        assert response.status_code == 200
        assert kind in response.headers["content-type"]
    # The page must not depend on anything outside the server.
    assert "http" not in page.text.replace("http-equiv", "")


async def test_the_server_refuses_to_start_on_the_in_process_store(
    settings: MemhubSettings,
) -> None:
    """API keys and tenants live in PostgreSQL: memory:// fails the start, not each request."""
    from memhub.errors import ConfigurationError

    in_process = settings.model_copy(update={"database_url": "memory://"})
    app = create_app(in_process, server=ServerSettings(admin_key=SecretStr(ADMIN_KEY)))
    with pytest.raises(ConfigurationError, match="PostgreSQL"):
        async with app.router.lifespan_context(app):
            pass


async def test_405_allows_every_method_of_the_path(client: httpx.AsyncClient) -> None:
    """Three routes share /v1/memories; the Allow header names all of them (and works)."""
    wrong = await client.put("/v1/memories")
    assert wrong.status_code == 405
    allowed = wrong.headers["Allow"].split(", ")
    assert allowed == ["DELETE", "GET", "POST"]
    by_id = await client.post("/v1/memories/00000000-0000-0000-0000-000000000000")
    assert by_id.headers["Allow"].split(", ") == ["DELETE", "GET", "PATCH", "PUT"]
