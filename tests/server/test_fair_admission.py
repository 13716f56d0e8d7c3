"""Admission is per tenant: with the request slot taken by one tenant and more of its
requests waiting, another tenant's request (nothing of its own running) is served at once,
in the spare slot, before them; and while a tenant has requests waiting, the CPU work of its
running one is niced.

The app runs on the embedded PostgreSQL with the real in-process embedder; the only thing
the test adds is a hold on the first search's embedding (a threading.Event), so that the
slot stays taken while the others queue. What it asserts is the order the searches reached
the embedder and the waiting counts the gate reports: no clock.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from fastapi import FastAPI
from pydantic import SecretStr

from memhub._cpu import BACKGROUND_NICE
from memhub._fair import FairShare
from memhub.embed.onnx_encoder import OnnxEncoder
from memhub.server import ServerSettings
from tests.server.conftest import ADMIN_KEY, bearer, new_key


@pytest.fixture
def server_settings() -> ServerSettings:
    # One request slot (and the spare one), a quota no search here reaches, keys cached for the whole test (a
    # key looked up again would pass by the gate): only the turns decide.
    return ServerSettings(
        admin_key=SecretStr(ADMIN_KEY),
        rate_limit=1000,
        rate_burst=1000,
        request_slots=1,
        key_cache_seconds=3600,
    )


async def _until(condition: Any, what: str) -> None:
    """Let the loop run until ``condition()`` holds (a bounded number of turns, no clock)."""
    for _ in range(2_000):
        if condition():
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"never happened: {what}")


async def test_a_quiet_tenant_is_served_at_once_before_a_busy_tenants_queue(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = threading.Event()  # the first search is embedding
    release = threading.Event()
    embedded: list[str] = []
    nice: dict[str, int] = {}  # the nice value of the thread that embedded each query
    original = OnnxEncoder.embed_sync

    def spied(self: OnnxEncoder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        embedded.append(texts[0])
        nice[texts[0]] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        if texts[0] == "acme 0":
            held.set()
            release.wait(60)
        return original(self, texts)

    transport: Any = httpx.ASGITransport(app=app)
    keys = [await new_key(client, tenant) for tenant in ("acme", "globex")]
    acme, globex = (
        httpx.AsyncClient(transport=transport, base_url="http://t", headers=bearer(k), timeout=120)
        for k in keys
    )

    def search(who: httpx.AsyncClient, query: str) -> asyncio.Task[httpx.Response]:
        body = {"query": query, "user_id": "u"}
        return asyncio.create_task(who.post("/v1/memories/search", json=body))

    async with acme, globex:
        for who in (acme, globex):  # the key is cached: its next requests meet the gate
            assert (await who.get("/v1/me")).status_code == 200
            assert (
                await who.post("/v1/memories/search", json={"query": "warm", "user_id": "u"})
            ).status_code == 200
        monkeypatch.setattr(OnnxEncoder, "embed_sync", spied)
        embedded.clear()
        slots = app.state.memhub.access.slots.share
        assert isinstance(slots, FairShare) and slots.queue.slots == 1

        first = search(acme, "acme 0")
        await asyncio.to_thread(held.wait, 60)
        queued = [search(acme, f"acme {n}") for n in (1, 2, 3)]
        await _until(lambda: slots.queue.waiting("acme") == 3, "acme's 3 searches queued")
        quiet = search(globex, "globex")
        # globex has nothing running or waiting: it starts at once, in the spare slot,
        # while acme's first search still holds the slot and three more of acme's wait.
        await _until(lambda: "globex" in embedded, "globex's search reached the embedder")
        answer = await quiet
        assert answer.status_code == 200
        assert embedded == ["acme 0", "globex"], "a queued request reached the embedder"
        assert slots.queue.waiting("acme") == 3

        release.set()
        answers = await asyncio.gather(first, *queued)

    assert [a.status_code for a in answers] == [200] * 4
    assert embedded == ["acme 0", "globex", "acme 1", "acme 2", "acme 3"]
    if sys.platform == "linux":  # a nice value per thread
        normal = os.getpriority(os.PRIO_PROCESS, 0)
        # While more of acme's requests wait for their turn, acme's CPU work is niced; a
        # request with none behind it, and the quiet tenant's, are not.
        assert nice == {
            "acme 0": normal,
            "globex": normal,
            "acme 1": BACKGROUND_NICE,
            "acme 2": BACKGROUND_NICE,
            "acme 3": normal,
        }
    assert slots.queue.busy == 0 and slots.queue.waiting() == 0


async def test_requests_without_a_tenant_key_take_no_slot(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The admin key (no tenant) passes by the turns: an operator is never queued."""
    assert (await client.get("/v1/me")).status_code == 200
    assert app.state.memhub.access.slots.share.queue.busy == 0
