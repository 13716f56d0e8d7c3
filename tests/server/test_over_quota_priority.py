"""A tenant key sending faster than its quota is served from CPU the others leave: the query
embedding of its admitted searches runs in a nice-19 thread (memhub._cpu), the other
tenants' at normal priority. The real in-process model embeds; the test reads the nice value
the kernel reports for the thread that ran it."""

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
from memhub.doors import access
from memhub.doors.access import OVER_QUOTA_SECONDS, Quotas, RateLimiter
from memhub.embed.onnx_encoder import OnnxEncoder
from memhub.server import ServerSettings
from tests.server.conftest import ADMIN_KEY, bearer, new_key

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a nice value per thread")

RATE = 0.5  # a token every 2 s: no search, however slow the machine, outlasts it


@pytest.fixture
def server_settings() -> ServerSettings:
    return ServerSettings(admin_key=SecretStr(ADMIN_KEY), rate_limit=RATE, rate_burst=1)


@pytest.fixture
def embedding_nice(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The nice value of each thread that ran the real encoder, in call order."""
    seen: list[int] = []
    original = OnnxEncoder.embed_sync

    def spied(self: OnnxEncoder, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        return original(self, texts)

    monkeypatch.setattr(OnnxEncoder, "embed_sync", spied)
    return seen


async def test_an_over_quota_keys_search_embeds_niced_and_the_others_do_not(
    app: FastAPI,
    client: httpx.AsyncClient,
    embedding_nice: list[int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Over its quota for longer than a token takes to come back, so the test does not
    # depend on how fast this machine answers.
    monkeypatch.setattr(access, "OVER_QUOTA_SECONDS", 30.0)
    transport: Any = httpx.ASGITransport(app=app)
    keys = [await new_key(client, tenant) for tenant in ("acme", "globex")]
    a, b = (
        httpx.AsyncClient(transport=transport, base_url="http://t", headers=bearer(k)) for k in keys
    )
    query = {"query": "where does the user live", "user_id": "u"}
    normal = os.getpriority(os.PRIO_PROCESS, 0)
    async with a, b:
        assert (await b.post("/v1/memories/search", json=query)).status_code == 200  # loads
        assert (await a.post("/v1/memories/search", json=query)).status_code == 200
        assert embedding_nice == [normal] * 2, "within its quota, a key is served normally"
        assert (await a.post("/v1/memories/search", json=query)).status_code == 429
        await asyncio.sleep(1.2 / RATE)  # a token again (b's too), still over its quota
        assert (await a.post("/v1/memories/search", json=query)).status_code == 200
        assert embedding_nice[-1] == BACKGROUND_NICE, "the over-quota key's search was not niced"
        assert (await b.post("/v1/memories/search", json=query)).status_code == 200
        assert embedding_nice[-1] == normal, "another tenant paid for the flooding key"
        assert (await a.post("/v1/memories/search", json=query)).status_code == 429
    assert len(embedding_nice) == 4, "a refused request reached the embedder"


def test_a_key_is_over_quota_for_a_while_after_its_last_refusal() -> None:
    quotas = Quotas(RateLimiter(rate=1.0, burst=1), max_in_flight=0)
    assert quotas.refusal(7, now=100.0) is None
    assert not quotas.over_quota(7, now=100.0), "admitted within its quota"
    assert quotas.refusal(7, now=100.1) is not None
    assert quotas.over_quota(7, now=100.1)
    assert not quotas.over_quota(8, now=100.1), "another key pays for nothing"
    assert quotas.refusal(7, now=101.2) is None  # a token again: admitted, still over quota
    assert quotas.over_quota(7, now=101.2)
    assert not quotas.over_quota(7, now=100.1 + OVER_QUOTA_SECONDS)


def test_a_key_over_its_quota_is_served_one_request_at_a_time() -> None:
    quotas = Quotas(RateLimiter(rate=100.0, burst=2), max_in_flight=4)
    for now in (100.0, 100.0):
        assert quotas.refusal(7, now=now) is None
        quotas.enter(7)
    assert quotas.refusal(8, now=100.0) is None, "another key, its own bucket"
    quotas.enter(8)
    assert quotas.refusal(8, now=100.0) is None, "within its quota: up to the in-flight cap"
    refused = quotas.refusal(7, now=100.0)  # its burst of 2 is spent: over quota
    assert refused is not None and "MEMHUB_RATE_LIMIT" in refused[0]
    tokens_again = 100.0 + 0.05  # 5 tokens refilled, two requests still in flight
    refused = quotas.refusal(7, now=tokens_again)
    assert refused is not None and "one of its requests" in refused[0], "not serialised"
    quotas.leave(7)
    refused = quotas.refusal(7, now=tokens_again)
    assert refused is not None, "one is still in flight"
    quotas.leave(7)
    assert quotas.refusal(7, now=tokens_again) is None, "none in flight: admitted"
    quotas.enter(7)
    later = tokens_again + OVER_QUOTA_SECONDS + 0.1
    assert quotas.refusal(7, now=later) is None, "the penalty ends with the quiet period"
