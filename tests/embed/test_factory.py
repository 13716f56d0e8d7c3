"""create_embedder: provider names, Mem0/ARKOS config keys, and a light package import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import memhub.embed
import memhub.embed.packaged
from memhub.embed import Embedder, MiniLMEmbedder, OpenAIEmbedder, create_embedder
from memhub.embed.factory import DEFAULT_MODEL
from memhub.embed.packaged import PackagedModel
from memhub.errors import ConfigurationError


@pytest.mark.parametrize("provider", ["minilm", "onnx", "MiniLM "])
def test_minilm_names_give_minilm(provider: str) -> None:
    embedder = create_embedder(provider, threads=2, batch_size=16)

    assert isinstance(embedder, MiniLMEmbedder)
    assert isinstance(embedder, Embedder)


@pytest.mark.parametrize("provider", ["default", "local", "Default "])
def test_default_names_give_the_default_model(
    provider: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Building the real default is tests/embed/test_default_model.py's; here only the choice.
    asked: list[str] = []

    def prepare(model: PackagedModel, cache: Path, earlier: Path | None) -> Path:
        asked.append(model.name)
        raise ConfigurationError("stop here")

    monkeypatch.setattr(memhub.embed.packaged, "prepare", prepare)
    with pytest.raises(ConfigurationError, match="stop here"):
        create_embedder(provider, models_dir=tmp_path)

    assert asked == [DEFAULT_MODEL] == ["all-mpnet-base-v2-int8"]


@pytest.mark.parametrize(
    "model", [None, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"]
)
def test_huggingface_without_url_is_the_local_minilm(model: str | None) -> None:
    embedder = create_embedder("huggingface", model=model, embedding_dims=384, model_kwargs={})

    assert isinstance(embedder, MiniLMEmbedder)


def test_huggingface_other_local_model_is_fetched_or_clearly_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # no hub here: nothing listens
    with pytest.raises(ConfigurationError, match="cannot fetch the embedding model"):
        create_embedder("huggingface", model="BAAI/bge-small-en-v1.5")


def test_minilm_with_another_dimension_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="384"):
        create_embedder("minilm", embedding_dims=768)


async def test_huggingface_with_url_is_tei() -> None:
    embedder = create_embedder(
        "huggingface", huggingface_base_url="http://tei:3000/v1", model="bge", embedding_dims=384
    )

    assert isinstance(embedder, OpenAIEmbedder)
    assert _base_url(embedder) == "http://tei:3000/v1/"
    assert embedder.model_name == "bge"
    assert embedder.dimension == 384
    await embedder.aclose()


@pytest.mark.parametrize(
    ("config", "expected_url"),
    [
        ({}, "http://localhost:11434/v1/"),
        ({"ollama_base_url": "http://gpu:11434"}, "http://gpu:11434/v1/"),
        ({"ollama_base_url": "http://gpu:11434/"}, "http://gpu:11434/v1/"),
        ({"ollama_base_url": "http://gpu:11434/v1"}, "http://gpu:11434/v1/"),
    ],
)
async def test_ollama_base_url_gets_v1(config: dict[str, Any], expected_url: str) -> None:
    embedder = create_embedder("ollama", **config)

    assert _base_url(embedder) == expected_url
    assert embedder.model_name == "nomic-embed-text"
    await embedder.aclose()


async def test_openai_keys_and_dimensions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    embedder = create_embedder(
        "openai",
        openai_base_url="https://proxy.example/v1",
        api_key="sk-test",
        embedding_dims=512,
        http_client_proxies=None,
    )

    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.model_name == "text-embedding-3-small"
    assert embedder.dimension == 512
    assert embedder._send_dimensions  # OpenAI's text-embedding-3-* shorten on request
    assert embedder._client.api_key == "sk-test"
    await embedder.aclose()


async def test_vllm_needs_url_and_model() -> None:
    with pytest.raises(ConfigurationError, match="base_url"):
        create_embedder("vllm", model="intfloat/e5-small-v2")
    with pytest.raises(ConfigurationError, match="model="):
        create_embedder("vllm", base_url="http://localhost:8000/v1")

    embedder = create_embedder("vllm", base_url="http://localhost:8000/v1", model="e5")
    assert isinstance(embedder, OpenAIEmbedder)
    assert not embedder._send_dimensions
    await embedder.aclose()


def test_conflicting_base_urls_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="base URLs"):
        create_embedder(
            "tei", base_url="http://a/v1", huggingface_base_url="http://b/v1", model="m"
        )


def test_unknown_key_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="vertex_credentials_json"):
        create_embedder("openai", vertex_credentials_json="/x.json")


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(ConfigurationError) as caught:
        create_embedder("gemini")

    message = str(caught.value)
    for name in ["default", "huggingface", "minilm", "ollama", "onnx", "openai", "tei", "vllm"]:
        assert name in message
    assert memhub.embed.known_providers() == sorted(memhub.embed.known_providers())


def test_package_all_is_exact() -> None:
    for name in memhub.embed.__all__:
        assert getattr(memhub.embed, name) is not None
    with pytest.raises(AttributeError):
        _ = memhub.embed.NoSuchThing


def test_import_loads_no_runtime_or_sdk() -> None:
    code = (
        "import sys, memhub.embed\n"
        "heavy = {'onnxruntime', 'tokenizers', 'openai'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )

    assert result.stdout.strip() == "[]"


def _base_url(embedder: Embedder) -> str:
    assert isinstance(embedder, OpenAIEmbedder)
    return str(embedder._client.base_url)
