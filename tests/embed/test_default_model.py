"""memhub's default embedding model, all-mpnet-base-v2 int8, end to end on the real model.

The rest of the suite embeds with all-MiniLM-L6-v2 (tests/fix_env.py); these tests build the
default once per module into a model cache of the module's (joined from its five part
packages, graph written from the safetensors weights without torch, quantised) and check what a user without any embedder
setting gets, and that a database made with the earlier default keeps working and moves.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memhub import AsyncMemory
from memhub.config import MemhubSettings
from memhub.embed import create_embedder
from memhub.embed.factory import DEFAULT_MODEL
from memhub.embed.packaged import PACKAGED_MODELS
from memhub.errors import ConfigurationError
from memhub.memory.reembed import reembed

#: What a database records for the default's vectors: the name and the build (per-row int8).
RECORDED = PACKAGED_MODELS[DEFAULT_MODEL].recorded_name

pytestmark = pytest.mark.default_model

FACTS = [
    "My sister moved to Lisbon last spring.",
    "I adopted a grey cat called Miso.",
    "Our team ships the billing service on Fridays.",
]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One data directory for the module, with its model cache beside it: built once."""
    return tmp_path_factory.mktemp("default-model")


def _settings(db_url: str, data_dir: Path, **values: str) -> MemhubSettings:
    return MemhubSettings(
        database_url=db_url, data_dir=data_dir, model_cache=data_dir / "cache", **values
    )


async def test_the_default_is_all_mpnet_base_v2_int8(data_dir: Path) -> None:
    embedder = create_embedder(
        "default", model_cache=data_dir / "cache", models_dir=data_dir / "models"
    )
    vectors = await embedder.embed(["Where does my sister live?", *FACTS])
    await embedder.aclose()

    assert (embedder.model_name, embedder.dimension) == (RECORDED, 768)
    assert RECORDED == "all-mpnet-base-v2-int8+rows"
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # The question is closest to its answer: a broken graph would not rank it first.
    assert int(np.argmax(vectors[1:] @ vectors[0])) == 0
    # Built into the cache, not the data directory, keeping only what runs.
    assert not (data_dir / "models").exists()
    (built,) = (data_dir / "cache").glob("all-mpnet-base-v2-int8-*")
    kept = {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()}
    assert "all-mpnet-base-v2/onnx/model_qint8.onnx" in kept
    assert "all-mpnet-base-v2/tokenizer.json" in kept
    assert not {"all-mpnet-base-v2/model.safetensors", "all-mpnet-base-v2/onnx/model.onnx"} & kept
    assert sum((built / name).stat().st_size for name in kept) < 300_000_000


async def test_no_setting_means_the_default_model(db_url: str, data_dir: Path) -> None:
    async with AsyncMemory(settings=_settings(db_url, data_dir)) as memory:
        for fact in FACTS:
            await memory.add(fact, user_id="ana", infer=False)
        found = await memory.search("Which pet do I have?", user_id="ana", limit=1)

    assert found["results"][0]["memory"] == FACTS[1]
    assert await _recorded_model(db_url, data_dir) == RECORDED


async def test_a_minilm_database_keeps_its_model_then_moves_and_back(
    db_url: str, data_dir: Path
) -> None:
    minilm = _settings(db_url, data_dir, embedder="minilm")
    async with AsyncMemory(settings=minilm) as memory:
        for fact in FACTS:
            await memory.add(fact, user_id="ana", infer=False)

    # No embedder setting: the database's model is used, not refused.
    async with AsyncMemory(settings=_settings(db_url, data_dir)) as memory:
        found = await memory.search("Where does my sister live?", user_id="ana", limit=1)
    assert found["results"][0]["memory"] == FACTS[0]
    assert await _recorded_model(db_url, data_dir) == "all-MiniLM-L6-v2"

    # `memhub reembed` without a setting moves it to the default, and back with one.
    assert await reembed(_settings(db_url, data_dir)) == len(FACTS)
    assert await _recorded_model(db_url, data_dir) == RECORDED
    async with AsyncMemory(settings=_settings(db_url, data_dir)) as memory:
        found = await memory.search("Who ships on Fridays?", user_id="ana", limit=1)
    assert found["results"][0]["memory"] == FACTS[2]

    assert await reembed(minilm) == len(FACTS)
    assert await _recorded_model(db_url, data_dir) == "all-MiniLM-L6-v2"
    async with AsyncMemory(settings=minilm) as memory:
        found = await memory.search("Which pet do I have?", user_id="ana", limit=1)
    assert found["results"][0]["memory"] == FACTS[1]


async def test_vectors_of_the_build_before_are_refused_then_moved(
    db_url: str, data_dir: Path
) -> None:
    """A database whose vectors the build before made (onnxruntime's dynamic int8, recorded
    under the bare name) is not mixed with the new build's: it is refused, naming reembed,
    and `memhub reembed` moves it."""
    async with AsyncMemory(settings=_settings(db_url, data_dir)) as memory:
        await memory.add(FACTS[0], user_id="ana", infer=False)
    await _record_model(db_url, data_dir, DEFAULT_MODEL)

    with pytest.raises(ConfigurationError, match="memhub reembed"):
        async with AsyncMemory(settings=_settings(db_url, data_dir)) as memory:
            await memory.search("Where does my sister live?", user_id="ana")

    assert await reembed(_settings(db_url, data_dir)) == 1
    assert await _recorded_model(db_url, data_dir) == RECORDED
    async with AsyncMemory(settings=_settings(db_url, data_dir)) as memory:
        found = await memory.search("Where does my sister live?", user_id="ana", limit=1)
    assert found["results"][0]["memory"] == FACTS[0]


async def _record_model(db_url: str, data_dir: Path, model: str) -> None:
    import psycopg

    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        await conn.execute(
            "UPDATE memhub_settings SET value = %s WHERE key = 'embedding_model'", (model,)
        )


async def _recorded_model(db_url: str, data_dir: Path) -> str | None:
    from memhub.store import open_store
    from memhub.store.protocol import BulkStore

    store = await open_store(_settings(db_url, data_dir, embedder="minilm"))
    try:
        assert isinstance(store, BulkStore)
        return (await store.embedding_space()).model
    finally:
        await store.aclose()
