"""Rerankers as providers (memhub.rerank): built by name, once per services, and a wrong
configuration said when the memory opens."""

from __future__ import annotations

from pathlib import Path

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.errors import ConfigurationError
from memhub.memory.core import services_of
from memhub.rerank import HttpReranker, Reranker, known_rerankers, reranker_from_settings
from memhub.testing import FakeEmbedder


def test_no_name_is_no_reranker() -> None:
    assert reranker_from_settings(MemhubSettings()) is None
    assert reranker_from_settings(MemhubSettings(reranker=" none ")) is None


@pytest.mark.parametrize("kind", ["tei", "cohere", "vllm", "jina"])
def test_a_served_reranker_is_built_for_its_shape(kind: str) -> None:
    options = {"reranker_base_url": "http://127.0.0.1:9/v1", "reranker_model": "m"}
    built = reranker_from_settings(MemhubSettings(reranker=kind, **options))
    assert isinstance(built, HttpReranker) and isinstance(built, Reranker)
    assert repr(built) == (
        f"HttpReranker('http://127.0.0.1:9/v1/rerank', api={'tei' if kind == 'tei' else 'cohere'!r}"
        ", model='m')"
    )
    assert kind in known_rerankers()


@pytest.mark.parametrize(
    ("kind", "options", "said"),
    [
        ("cross-encoder", {}, "needs MEMHUB_RERANKER_MODEL"),
        ("tei", {}, "needs MEMHUB_RERANKER_BASE_URL"),
        ("colbert", {}, "unknown reranker 'colbert'"),
    ],
)
def test_a_wrong_configuration_is_named(kind: str, options: dict[str, str], said: str) -> None:
    with pytest.raises(ConfigurationError, match=said):
        reranker_from_settings(MemhubSettings(reranker=kind, **options))


async def test_memory_objects_sharing_services_share_one_reranker(
    settings: MemhubSettings,
) -> None:
    configured = settings.model_copy(
        update={"reranker": "tei", "reranker_base_url": "http://127.0.0.1:9"}
    )
    embedder = FakeEmbedder()
    async with (
        AsyncMemory(settings=configured, embedder=embedder) as first,
        AsyncMemory(settings=configured, embedder=embedder) as second,
    ):
        built = (await services_of(first)).reranker
        assert isinstance(built, HttpReranker)
        assert (await services_of(second)).reranker is built
    async with AsyncMemory(settings=settings, embedder=embedder) as plain:
        assert (await services_of(plain)).reranker is None


async def test_a_wrong_reranker_fails_the_open_not_a_later_search(
    settings: MemhubSettings, tmp_path: Path
) -> None:
    missing = settings.model_copy(
        update={"reranker": "cross-encoder", "reranker_model": str(tmp_path / "none")}
    )
    with pytest.raises(ConfigurationError, match="does not exist"):
        async with AsyncMemory(settings=missing, embedder=FakeEmbedder()) as memory:
            await memory.open()
