"""The MCP HTTP door serves tenants at the REST server's request slots (MEMHUB_REQUEST_SLOTS):
a tenant's second request waits for its turn while another tenant is served at once, and a
key past its in-flight cap gets the JSON 429 with ``Retry-After``.

A real ``python -m memhub.mcp --http`` process on the embedded PostgreSQL. What holds the
first request in its slot is the database, not a clock: the test holds a SHARE lock on
``conversation_context``, so the first tenant's ``add_memory`` (one INSERT of its turn)
waits for it, and the test sees that wait in ``pg_locks`` before it goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psycopg

from memhub.store.postgres import keys as pg_keys
from tests.mcp.http_process import free_port, until_listening

# The SDK answers a POST as JSON or as an event stream; the client accepts both.
ACCEPT = {"Accept": "application/json, text/event-stream"}


async def _tenant_key(db_url: str, tenant: str) -> str:
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        _, secret = await pg_keys.create_key(conn, f"mcp {tenant}", tenant, False)
    return secret


def _message(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of a POST's answer (a JSON body, or one event of a stream)."""
    assert response.status_code == 200, response.text
    if response.headers["content-type"].startswith("application/json"):
        return dict(response.json())
    data = [line[5:] for line in response.text.splitlines() if line.startswith("data:")]
    return dict(json.loads(data[-1]))


class Session:
    """One MCP session over raw HTTP: the JSON-RPC calls, each one POST."""

    def __init__(self, http: httpx.AsyncClient, url: str, key: str) -> None:
        self.http, self.url = http, url
        self.headers = {**ACCEPT, "Authorization": f"Bearer {key}"}
        self.ids = iter(range(1, 1_000))

    async def open(self) -> None:
        hello = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "slots test", "version": "0"},
        }
        answer = await self.post("initialize", hello)
        self.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert (await self.http.post(self.url, json=note, headers=self.headers)).status_code == 202

    async def post(self, method: str, params: dict[str, Any]) -> httpx.Response:
        body = {"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params}
        return await self.http.post(self.url, json=body, headers=self.headers)

    async def tool(self, name: str, **arguments: Any) -> dict[str, Any]:
        answer = _message(await self.post("tools/call", {"name": name, "arguments": arguments}))
        result = answer["result"]
        assert not result.get("isError"), result
        return dict(json.loads(result["content"][0]["text"]))


async def _until_an_insert_waits_for(conn: psycopg.AsyncConnection[Any], table: str) -> None:
    """Until a backend waits for a lock on ``table`` (a condition, polled)."""
    for _ in range(2_400):
        cur = await conn.execute(
            "SELECT count(*) FROM pg_locks WHERE NOT granted AND relation = %s::regclass",
            (table,),
        )
        row = await cur.fetchone()
        if row is not None and row[0] > 0:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"nothing came to wait for the lock on {table}")


@contextlib.asynccontextmanager
async def _mcp_server(db_url: str, tmp_path: Any, **settings: str) -> AsyncIterator[str]:
    """A real ``memhub mcp --http`` process with ``settings`` (environment variables); its URL."""
    port = free_port()
    env = {**os.environ, "MEMHUB_DATABASE_URL": db_url, "MEMHUB_DATA_DIR": str(tmp_path)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        *("-m", "memhub.mcp", "--http", "--port", str(port), "--user-id", "web"),
        env={**env, **settings},
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        await until_listening(port)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        await process.wait()


async def test_a_tenant_waits_its_turn_while_another_is_served(db_url: str, tmp_path: Any) -> None:
    acme_key, globex_key = await _tenant_key(db_url, "acme"), await _tenant_key(db_url, "globex")
    limits = {
        "MEMHUB_REQUEST_SLOTS": "1",
        "MEMHUB_MAX_IN_FLIGHT_PER_KEY": "2",
        "MEMHUB_RATE_LIMIT": "0",
    }
    async with _mcp_server(db_url, tmp_path, **limits) as url:
        async with (
            httpx.AsyncClient(timeout=120) as http,
            await psycopg.AsyncConnection.connect(db_url, autocommit=True) as watch,
            await psycopg.AsyncConnection.connect(db_url) as holder,
        ):
            acme, globex = Session(http, url, acme_key), Session(http, url, globex_key)
            await acme.open()
            await globex.open()
            await globex.tool("add_memory", text="Globex ships anvils on Tuesdays")
            # Loads the embedder in the server, so nothing below waits for that.
            await globex.tool("search_memories", query="anvils")

            await holder.execute("LOCK TABLE conversation_context IN SHARE MODE")
            adding = asyncio.create_task(acme.tool("add_memory", text="Acme likes rockets"))
            await _until_an_insert_waits_for(watch, "conversation_context")
            # acme's add holds the one slot (its INSERT waits for the lock); acme's next
            # request waits for acme's turn, globex (nothing running) starts at once.
            listing = asyncio.create_task(acme.tool("list_memories"))
            found = await globex.tool("search_memories", query="when are anvils shipped")
            assert [m["memory"] for m in found["results"]] == ["Globex ships anvils on Tuesdays"]
            assert not listing.done() and not adding.done()

            # acme has two requests in flight (its cap): a third is refused in JSON.
            refused = await acme.post("tools/call", {"name": "list_memories", "arguments": {}})
            assert refused.status_code == 429
            assert refused.headers["content-type"] == "application/json"
            assert int(refused.headers["retry-after"]) >= 1
            body = refused.json()
            assert body["type"] == "TooManyRequests"
            assert "MEMHUB_MAX_IN_FLIGHT_PER_KEY" in body["error"]

            await holder.commit()  # the lock goes: acme's add, then its listing, are served
            added = await adding
            listed = await listing
        assert added["status"] in ("stored", "queued")
        assert [m["memory"] for m in listed["results"]] == ["Acme likes rockets"]


async def test_open_event_streams_do_not_shut_out_the_keys_requests(
    db_url: str, tmp_path: Any
) -> None:
    """A session's GET event stream stays open for the session's life, idle: it is counted
    among the key's open streams, not its requests in flight. With a cap of two, a key with
    two sessions' streams open is still served, and a third stream is refused in JSON. (A
    cap of two, not one: the server counts a request until its handler returns, which may be
    just after the client has read the answer and sent its next request.)"""
    key = await _tenant_key(db_url, "acme")
    limits = {"MEMHUB_MAX_IN_FLIGHT_PER_KEY": "2", "MEMHUB_RATE_LIMIT": "0"}
    async with (
        _mcp_server(db_url, tmp_path, **limits) as url,
        httpx.AsyncClient(timeout=120) as http,
        contextlib.AsyncExitStack() as open,
    ):
        sessions = [Session(http, url, key) for _ in range(3)]
        for session in sessions:
            await session.open()
        streams = [{**s.headers, "Accept": "text/event-stream"} for s in sessions]
        for headers in streams[:2]:
            stream = await open.enter_async_context(http.stream("GET", url, headers=headers))
            assert stream.status_code == 200  # admitted: it counts from here on
        for session in sessions:
            assert (await session.tool("list_memories"))["results"] == []
        third = await http.get(url, headers=streams[2])
        assert third.status_code == 429
        assert third.json()["type"] == "TooManyRequests"
        assert "event streams" in third.json()["error"]
