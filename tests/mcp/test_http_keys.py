"""The MCP HTTP door checks keys with the REST server's :class:`Access`: the same keys (the
admin key of ``MEMHUB_ADMIN_KEY`` included), the same key cache and the same quotas."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Sequence
from contextvars import Context
from types import SimpleNamespace
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from pydantic import SecretStr
from starlette.types import Receive, Scope, Send

from memhub import AsyncMemory, MemhubSettings, _cpu
from memhub._cpu import in_background
from memhub._fair import FairShare, held_slot
from memhub.doors.access import AccessSettings
from memhub.mcp import MCPConfig
from memhub.mcp.auth import OVER_QUOTA_STATE, SLOT_STATE, TENANT_STATE, KeyAuth
from memhub.mcp.tools import ServerState, add_memory, search_memories
from memhub.memory.admin import AsyncAdmin
from memhub.testing import FakeEmbedder

ADMIN = "mcp-env-admin-key-0123456789"


class Tools:
    """The SDK's app stand-in: records the tenant each admitted request carried."""

    def __init__(self) -> None:
        self.tenants: list[str] = []
        self.over_quota: list[bool] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.tenants.append(scope["state"][TENANT_STATE])
        if OVER_QUOTA_STATE in scope["state"]:  # tenant keys only
            self.over_quota.append(scope["state"][OVER_QUOTA_STATE])
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


@pytest.fixture
async def admin(settings: MemhubSettings) -> AsyncIterator[AsyncAdmin]:
    async with AsyncMemory(settings=settings, embedder=FakeEmbedder()) as memory:
        yield AsyncAdmin(memory)


async def test_the_same_keys_cache_and_quotas_as_rest(admin: AsyncAdmin) -> None:
    tools = Tools()
    access = AccessSettings(
        admin_key=SecretStr(ADMIN), rate_limit=0.01, rate_burst=3, key_cache_seconds=60
    )
    door = KeyAuth(tools, admin, access)
    _, tenant = await admin.create_key("mcp acme", tenant="acme")
    _, stored_admin = await admin.create_key("mcp admin", is_admin=True)
    transport = httpx.ASGITransport(app=door)

    async def call(key: str | None) -> httpx.Response:
        headers: dict[str, Any] = {} if key is None else {"Authorization": f"Bearer {key}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://mcp.test") as client:
            return await client.post("/mcp", json={}, headers=headers)

    assert (await call(ADMIN)).status_code == 200, "MEMHUB_ADMIN_KEY is refused on MCP"
    assert (await call(stored_admin)).status_code == 200
    assert (await call(None)).status_code == 401
    assert (await call("mhk_not-a-key")).status_code == 401
    statuses = [(await call(tenant)).status_code for _ in range(5)]
    assert statuses == [200, 200, 200, 429, 429], "the tenant's bucket (burst 3) is not applied"
    refused = await call(tenant)
    assert refused.json()["type"] == "TooManyRequests" and "retry-after" in refused.headers
    assert tools.tenants == ["", "", "acme", "acme", "acme"]
    # The two stored keys were looked up once and cached; the env admin key is never stored.
    assert len(door.access.keys._entries) == 2
    await door.access.aclose()  # its session listening for revocations


class PriorityProbe(FakeEmbedder):
    """Records, for each query embedded, whether its CPU work would run in the background.

    The real encoders hand that work to memhub._cpu.run_cpu (tests/test_cpu.py reads the
    thread's nice value); here only the flag matters, so hashed vectors stand in."""

    def __init__(self) -> None:
        super().__init__()
        self.background: list[bool] = []
        self.owners: list[str] = []  # whose turn at the CPU slots (memhub._cpu.owned_by)

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.background.append(in_background())
        self.owners.append(_cpu._owner.get())
        return await super().embed(texts)


async def test_an_over_quota_key_is_flagged_and_its_search_runs_in_the_background(
    settings: MemhubSettings,
) -> None:
    tools = Tools()
    async with AsyncMemory(settings=settings, embedder=FakeEmbedder()) as memory:
        admin = AsyncAdmin(memory)
        door = KeyAuth(tools, admin, AccessSettings(rate_limit=4, rate_burst=1))
        _, tenant = await admin.create_key("mcp acme", tenant="acme")
        transport = httpx.ASGITransport(app=door)
        async with httpx.AsyncClient(
            transport=transport,
            base_url="http://mcp.test",
            headers={"Authorization": f"Bearer {tenant}"},
        ) as client:
            assert (await client.post("/mcp", json={})).status_code == 200
            assert (await client.post("/mcp", json={})).status_code == 429
            await asyncio.sleep(0.4)  # a token again, within OVER_QUOTA_SECONDS
            assert (await client.post("/mcp", json={})).status_code == 200
        await door.access.aclose()
    assert tools.over_quota == [False, True]

    probe = PriorityProbe()
    async with AsyncMemory(settings=settings, embedder=probe) as memory:
        state = ServerState(memory, MCPConfig())
        for over in (False, True):
            flags = {OVER_QUOTA_STATE: over, TENANT_STATE: "acme"}
            request = SimpleNamespace(state=SimpleNamespace(**flags))
            ctx: Any = SimpleNamespace(
                request_context=SimpleNamespace(lifespan_context=state, request=request)
            )
            await search_memories("where does ada live", ctx, user_id="ada")
    assert probe.background == [False, True]
    # The query's embedding takes the tenant's turn at the CPU slots, as a REST search's does.
    assert probe.owners == ["acme", "acme"]


class HeldStream:
    """The SDK's app stand-in: a GET stays open until released (the transport's event
    stream), a POST is answered at once."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] == "GET":
            self.opened.set()
            await self.release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})


@contextlib.asynccontextmanager
async def acme_client(
    app: HeldStream, admin: AsyncAdmin, settings: AccessSettings
) -> AsyncIterator[tuple[KeyAuth, Any, httpx.AsyncClient]]:
    """The MCP door over ``app``, a key of tenant acme, and a client sending it."""
    door = KeyAuth(app, admin, settings)
    key, tenant = await admin.create_key("mcp acme", tenant="acme")
    headers = {"Authorization": f"Bearer {tenant}"}
    transport = httpx.ASGITransport(app=door)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://mcp.test", headers=headers
    ) as client:
        yield door, key, client


async def test_an_open_event_stream_takes_no_request_slot_and_is_counted_as_a_stream(
    admin: AsyncAdmin,
) -> None:
    app = HeldStream()
    settings = AccessSettings(rate_limit=0, request_slots=1, max_in_flight_per_key=2)
    async with acme_client(app, admin, settings) as (door, key, client):
        stream = asyncio.create_task(client.get("/mcp"))
        await app.opened.wait()
        slots = door.access.slots
        assert slots.share.queue.busy == 0, "the idle stream holds a request slot"
        # The tenant's tool call is served beside its open stream (one slot); were the
        # stream holding the slot, the call would wait for it (the guard below ends that).
        served = await asyncio.wait_for(client.post("/mcp", json={}), 60)
        assert served.status_code == 200
        # The stream is one of the key's open streams, not one of its requests in flight.
        assert door.access.quotas.streams[key.id] == 1 and not door.access.quotas.in_flight
        app.release.set()
        assert (await stream).status_code == 200
    assert slots.share.queue.busy == 0 and not door.access.quotas.in_flight
    assert not door.access.quotas.streams
    await door.access.aclose()


async def test_a_key_at_its_in_flight_cap_can_still_end_its_sessions(
    admin: AsyncAdmin,
) -> None:
    """The SDK's client keeps each session's event stream open: four sessions of a key fill
    the default cap of four open streams (seen with the mcp SDK's own client on `memhub mcp
    --http`). The DELETE that ends a session frees what it holds, so it is never refused:
    were it 429, the client could not end its sessions, and their streams would keep the key
    from opening new ones."""
    app = HeldStream()
    settings = AccessSettings(rate_limit=0.01, rate_burst=2, max_in_flight_per_key=1)
    async with acme_client(app, admin, settings) as (door, key, client):
        stream = asyncio.create_task(client.get("/mcp"))  # the key's one open stream
        await app.opened.wait()
        assert (await client.get("/mcp")).status_code == 429  # the cap on streams holds
        for _ in range(3):  # past the cap and the bucket: each session still ends
            assert (await client.delete("/mcp")).status_code == 200
        assert door.access.quotas.streams[key.id] == 1
        app.release.set()
        assert (await stream).status_code == 200
    assert not door.access.quotas.streams and not door.access.quotas.in_flight
    await door.access.aclose()


async def test_add_memory_lends_the_requests_slot_while_it_waits_for_ingestion(
    settings: MemhubSettings,
) -> None:
    """The tool runs in the SDK's session task; the slot its HTTP request holds comes in the
    request's state (SLOT_STATE), and the wait for ingestion lends it: another tenant's
    request takes the one slot meanwhile. No worker runs, so the wait goes on until the
    test has seen that, then the call is cancelled."""
    share = FairShare(1, spare=0)
    unworked = settings.model_copy(update={"worker": "off", "wait_timeout": 120.0})
    async with AsyncMemory(settings=unworked, embedder=FakeEmbedder()) as memory:
        state = ServerState(memory, MCPConfig())
        async with share.slot("acme"):
            flags = {TENANT_STATE: "acme", SLOT_STATE: held_slot()}
            request = SimpleNamespace(state=SimpleNamespace(**flags))
            ctx: Any = SimpleNamespace(
                request_context=SimpleNamespace(lifespan_context=state, request=request)
            )
            # A context of its own, as the SDK's session task has: not the request's.
            adding = asyncio.create_task(
                add_memory(ctx, text="Acme likes rockets", user_id="a"), context=Context()
            )
            # Served only if the waiting tool lent acme's slot (one slot, no spare); were it
            # not lent, this would wait for good (the guard ends that).
            await asyncio.wait_for(share.enter("globex"), 60)
            assert share.queue.running == {"globex": 1}
            share.leave("globex")
            assert not adding.done()
            adding.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await adding
    assert share.queue.busy == 0 and share.queue.waiting() == 0
