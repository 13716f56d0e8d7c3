"""An LLM or embedding server nothing answers at is named once, in a warning, when memhub
opens; the call that opened it still works. Servers that answer (memhub.testing's scripted
one) get no warning."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.memory.reachability import can_connect, warn_unreachable
from memhub.memory.services import acquire_services, release_services
from memhub.testing import ScriptedOpenAIServer


@pytest.fixture
def nothing_listens() -> Iterator[str]:
    """``http://127.0.0.1:PORT/v1`` on a port held bound but not listening: connects fail."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/v1"


def warnings_about(caplog: pytest.LogCaptureFixture, url: str) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and url in r.getMessage()
    ]


async def test_an_unreachable_llm_is_named_once_and_the_call_works(
    settings: MemhubSettings, nothing_listens: str, caplog: pytest.LogCaptureFixture
) -> None:
    with_llm = settings.model_copy(update={"llm_base_url": nothing_listens, "llm_model": "m"})
    async with AsyncMemory(settings=with_llm) as memory:
        added = await memory.add("I like green tea", user_id="ada", infer=False)
        assert added["results"]  # opening with an unreachable LLM fails nothing
        services = await acquire_services(with_llm)  # the memory's own: shared
        try:
            assert services.probe is not None
            (warned,) = await services.probe
        finally:
            await release_services(services)
    assert warned.url == nothing_listens
    (line,) = warnings_about(caplog, nothing_listens)
    assert "the LLM at" in line and "MEMHUB_LLM_BASE_URL" in line

    # Other services on the same server (other settings), and a second check: no second line.
    again = with_llm.model_copy(update={"worker_batch_size": 7})
    async with AsyncMemory(settings=again) as other:
        await other.open()
    assert await warn_unreachable([warned]) == []
    assert len(warnings_about(caplog, nothing_listens)) == 1


async def test_an_unreachable_embedding_server_is_named_even_when_closed_at_once(
    settings: MemhubSettings, nothing_listens: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A script that opens and closes straight away: close lets the bounded check finish."""
    remote = settings.model_copy(
        update={
            "embedder": "vllm",
            "embedder_base_url": nothing_listens,
            "embedder_model": "e5",
            "embedder_dimension": 16,
        }
    )
    services = await acquire_services(remote)
    await release_services(services)  # the last user: closes the services
    assert services.probe is not None and services.probe.done()
    assert [one.what for one in services.probe.result()] == ["embedder"]
    (line,) = warnings_about(caplog, nothing_listens)
    assert "MEMHUB_EMBEDDER_BASE_URL" in line


async def test_servers_that_answer_get_no_warning(
    settings: MemhubSettings, caplog: pytest.LogCaptureFixture
) -> None:
    with ScriptedOpenAIServer() as server:
        both = settings.model_copy(
            update={
                "llm_base_url": server.base_url,
                "llm_model": "m",
                "embedder": "vllm",
                "embedder_base_url": server.base_url,
                "embedder_model": "scripted",
                "embedder_dimension": 16,
            }
        )
        services = await acquire_services(both)
        try:
            assert services.probe is not None
            assert await services.probe == []
        finally:
            await release_services(services)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


async def test_a_host_name_is_tried_at_each_of_its_addresses(nothing_listens: str) -> None:
    """``localhost`` may resolve to ::1 first while the server listens on 127.0.0.1 only."""
    with ScriptedOpenAIServer() as server:
        assert await can_connect(server.base_url.replace("127.0.0.1", "localhost"))
    assert not await can_connect(nothing_listens.replace("127.0.0.1", "localhost"))
    assert not await can_connect("http://no-such-host.invalid/v1")
