"""The MCP tools through the SDK's in-process client, against a real database."""

from __future__ import annotations

import os
import sys
import uuid
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from mcp import Client, StdioServerParameters
from memhub import AsyncMemory, MemhubSettings
from memhub.mcp import MCPConfig, create_server
from tests.mcp.http_process import free_port, until_listening

TOOL_NAMES = {
    "search_memories",
    "add_memory",
    "list_memories",
    "delete_memory",
    "get_memory_history",
}


def text_of(result: CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, TextContent))


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, text_of(result)
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def failure(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    assert result.is_error
    message = text_of(result)
    assert "Traceback" not in message
    return message


async def test_tools_are_listed_with_schemas(settings: MemhubSettings) -> None:
    async with Client(create_server(settings, MCPConfig())) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) == TOOL_NAMES
    assert tools["search_memories"].input_schema["required"] == ["query"]
    assert "user_id" in tools["delete_memory"].input_schema["properties"]


async def test_each_user_sees_and_changes_only_their_own(settings: MemhubSettings) -> None:
    async with Client(create_server(settings, MCPConfig())) as client:
        added = await ok(client, "add_memory", text="I am allergic to peanuts", user_id="ada")
        assert added["status"] == "stored"
        await ok(
            client,
            "add_memory",
            messages=[{"role": "user", "content": "My sister lives in Lyon"}],
            user_id="bob",
            metadata={"source": "chat"},
        )
        found = await ok(client, "search_memories", query="peanut allergy", user_id="ada")
        assert found["results"][0]["memory"] == "I am allergic to peanuts"
        memory_id = found["results"][0]["id"]
        bobs = await ok(client, "list_memories", user_id="bob")
        assert [m["memory"] for m in bobs["results"]] == ["My sister lives in Lyon"]
        assert bobs["results"][0]["metadata"]["source"] == "chat"

        # Bob knows Ada's memory id, but it is not in his scope.
        assert "no memory" in await failure(
            client, "get_memory_history", memory_id=memory_id, user_id="bob"
        )
        none_for_bob = await ok(client, "search_memories", query="peanut allergy", user_id="bob")
        assert memory_id not in {m["id"] for m in none_for_bob["results"]}

        # A server not pinned to one user lets the model choose the user: it removes nothing.
        forget = "Please forget that I am allergic to peanuts."
        for who in ("bob", "ada"):
            refused = await failure(
                client, "delete_memory", memory_id=memory_id, user_id=who, user_request=forget
            )
            assert "not pinned to one user" in refused
        assert len((await ok(client, "list_memories", user_id="ada"))["results"]) == 1

    async with Client(create_server(settings, MCPConfig(default_user_id="bob"))) as client:
        assert "no memory" in await failure(
            client, "delete_memory", memory_id=memory_id, user_request=forget
        )
    async with Client(create_server(settings, MCPConfig(default_user_id="ada"))) as client:
        await ok(client, "delete_memory", memory_id=memory_id, user_request=forget)
        history = await ok(client, "get_memory_history", memory_id=memory_id)
        assert [e["event"] for e in history["history"]] == ["ADD", "RETIRE"]  # restorable
        assert (await ok(client, "list_memories"))["results"] == []


async def test_search_as_of_a_moment(settings: MemhubSettings) -> None:
    async with AsyncMemory(settings=settings) as memory:
        await memory.add("I moved to Vienna.", user_id="ada", timestamp="2024-05-01", wait=True)
    async with Client(create_server(settings, MCPConfig())) as client:
        before = await ok(
            client, "search_memories", query="home", user_id="ada", as_of="2024-01-01"
        )
        after = await ok(client, "search_memories", query="home", user_id="ada", as_of="2024-06-01")
        assert before["results"] == []
        assert [m["memory"] for m in after["results"]] == ["I moved to Vienna."]
        assert "as_of must be a datetime" in await failure(
            client, "search_memories", query="home", user_id="ada", as_of="soon"
        )


async def test_search_takes_a_kind(settings: MemhubSettings) -> None:
    """``kind`` narrows the search to what was said (episodes) or to extracted facts."""
    from tests.engine.conftest import store_facts

    async with AsyncMemory(settings=settings) as memory:
        await memory.add("I moved to Vienna last spring.", user_id="ada", infer=False, wait=True)
        await store_facts(memory, "ada", "The user lives in Vienna.")
    async with Client(create_server(settings, MCPConfig())) as client:
        both = await ok(client, "search_memories", query="Vienna", user_id="ada")
        facts = await ok(client, "search_memories", query="Vienna", user_id="ada", kind="fact")
        said = await ok(client, "search_memories", query="Vienna", user_id="ada", kind="episode")
        assert {m["kind"] for m in both["results"]} == {"episode", "fact"}
        assert [m["memory"] for m in facts["results"]] == ["The user lives in Vienna."]
        assert [m["memory"] for m in said["results"]] == ["I moved to Vienna last spring."]
        result = await client.call_tool(
            "search_memories", {"query": "Vienna", "user_id": "ada", "kind": "rumour"}
        )
        assert result.is_error


async def test_user_id_is_required_without_a_default(settings: MemhubSettings) -> None:
    async with Client(create_server(settings, MCPConfig())) as client:
        message = await failure(client, "list_memories")
    assert "user_id is required" in message
    assert "MEMHUB_MCP_USER_ID" in message


async def test_pinned_user_tools_take_no_user_id(settings: MemhubSettings) -> None:
    async with Client(create_server(settings, MCPConfig(default_user_id="dee"))) as client:
        tools = (await client.list_tools()).tools
        assert all("user_id" not in t.input_schema.get("properties", {}) for t in tools)
        await ok(client, "add_memory", text="Dee plays the cello")
        listed = await ok(client, "list_memories")
        assert [m["user_id"] for m in listed["results"]] == ["dee"]
        for other in ("someone-else", "dee"):  # refused, never quietly ignored
            with pytest.raises(Exception, match="pinned to one user"):
                await client.call_tool("list_memories", {"user_id": other})


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("search_memories", {"query": "x", "limit": 0}, "limit must be between 1 and 100"),
        ("search_memories", {"query": "   "}, "query must not be empty"),
        ("search_memories", {"query": 3}, "valid string"),
        ("list_memories", {"limit": "many"}, "valid integer"),
        ("add_memory", {}, "exactly one of text or messages"),
        ("add_memory", {"text": "a", "messages": [{"content": "b"}]}, "exactly one of"),
        ("add_memory", {"text": "a", "metadata": {"user_id": "x"}}, "cannot set scope ids"),
        ("add_memory", {"messages": [{"role": "robot", "content": "hi"}]}, "unknown role 'robot'"),
        ("delete_memory", {"memory_id": "not-a-uuid", "user_request": "x"}, "is not a UUID"),
        ("delete_memory", {"memory_id": str(uuid.uuid4()), "user_request": "x"}, "no memory"),
        ("get_memory_history", {"memory_id": str(uuid.uuid4())}, "no memory"),
        ("list_memories", {"user_id": "x" * 300}, "user_id is 300 characters"),
    ],
)
async def test_bad_input_is_a_clear_tool_error(
    settings: MemhubSettings, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    pinned = None if "user_id" in arguments else "u"
    async with Client(create_server(settings, MCPConfig(default_user_id=pinned))) as client:
        assert expected in await failure(client, tool, **arguments)


async def test_a_refused_embedder_is_reported_not_crashed(settings: MemhubSettings) -> None:
    wrong = settings.model_copy(update={"embedder": "nonsense"})
    async with Client(create_server(wrong, MCPConfig(default_user_id="u"))) as client:
        assert "unknown embedding provider" in await failure(client, "list_memories")


async def test_stdio_subprocess_serves_the_tools(db_url: str, tmp_path: Any) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memhub.mcp"],
        env={
            **os.environ,
            "MEMHUB_DATABASE_URL": db_url,
            "MEMHUB_DATA_DIR": str(tmp_path),
            "MEMHUB_MCP_USER_ID": "stdio-user",
        },
    )
    async with Client(params, mode="legacy") as client:
        assert {t.name for t in (await client.list_tools()).tools} == TOOL_NAMES
        assert (await ok(client, "list_memories"))["results"] == []


async def _tenant_key(db_url: str, tenant: str) -> str:
    import psycopg

    from memhub.store.postgres import keys as pg_keys

    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        _, secret = await pg_keys.create_key(conn, f"mcp {tenant}", tenant, False)
    return secret


def _keyed(url: str, key: str | None) -> Any:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    headers = {} if key is None else {"Authorization": f"Bearer {key}"}
    return streamable_http_client(url, http_client=create_mcp_http_client(headers=headers))


async def test_streamable_http_needs_a_key_and_keeps_tenants_apart(
    db_url: str, tmp_path: Any
) -> None:
    import asyncio

    import httpx

    port = free_port()
    env = {**os.environ, "MEMHUB_DATABASE_URL": db_url, "MEMHUB_DATA_DIR": str(tmp_path)}
    acme, globex = await _tenant_key(db_url, "acme"), await _tenant_key(db_url, "globex")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "memhub.mcp",
        "--http",
        "--port",
        str(port),
        "--user-id",
        "web",
        env=env,
        stderr=asyncio.subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        await until_listening(port)
        async with httpx.AsyncClient() as http:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            assert (await http.post(url, json=body)).status_code == 401
            wrong = {"Authorization": "Bearer mhk_not-a-key"}
            assert (await http.post(url, json=body, headers=wrong)).status_code == 401
            evil_host = {"Authorization": f"Bearer {acme}", "Host": "evil.example"}
            assert (await http.post(url, json=body, headers=evil_host)).status_code in (400, 421)
        async with Client(_keyed(url, acme)) as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOL_NAMES
            await ok(client, "add_memory", text="Served over HTTP")
            listed = await ok(client, "list_memories")
            assert [m["memory"] for m in listed["results"]] == ["Served over HTTP"]
            assert listed["results"][0]["user_id"] == "web"  # shown without the prefix
        async with Client(_keyed(url, globex)) as client:  # the same user name, another tenant
            assert (await ok(client, "list_memories"))["results"] == []
            found = await ok(client, "search_memories", query="Served over HTTP")
            assert found["results"] == []
    finally:
        process.terminate()
        await process.wait()
    import psycopg

    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT DISTINCT user_id FROM memories")
        assert [r[0] for r in await cur.fetchall()] == ["acme:web"]
