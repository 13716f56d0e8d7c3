"""create_llm's Mem0-style config mapping, and the lazy import of the openai SDK."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

import memhub.llm
from memhub.errors import ConfigurationError
from memhub.llm import create_llm
from memhub.llm.openai_compat import OpenAICompatibleLLM


def build(provider: str, **config: Any) -> OpenAICompatibleLLM:
    llm = create_llm(provider, **config)
    assert isinstance(llm, OpenAICompatibleLLM)
    return llm


@pytest.mark.parametrize(
    ("provider", "url"),
    [
        ("vllm", "http://localhost:8000/v1"),
        ("ollama", "http://localhost:11434/v1"),
        ("lmstudio", "http://localhost:1234/v1"),
        ("llamacpp", "http://localhost:8080/v1"),
        ("llama_cpp", "http://localhost:8080/v1"),
        ("llama-cpp", "http://localhost:8080/v1"),
        ("openai", "https://api.openai.com/v1"),
    ],
)
def test_default_base_urls(provider: str, url: str) -> None:
    assert build(provider, model="m", api_key="k").base_url == url


@pytest.mark.parametrize(
    ("provider", "key", "given", "expected"),
    [
        ("ollama", "ollama_base_url", "http://gpu:11434", "http://gpu:11434/v1"),
        ("ollama", "ollama_base_url", "http://gpu:11434/", "http://gpu:11434/v1"),
        ("ollama", "base_url", "http://gpu:11434/v1", "http://gpu:11434/v1"),
        ("vllm", "vllm_base_url", "http://gpu:9000/v1", "http://gpu:9000/v1"),
        ("lmstudio", "lmstudio_base_url", "http://pc:1234/v1", "http://pc:1234/v1"),
        ("openai", "openai_base_url", "https://proxy.example/v1", "https://proxy.example/v1"),
        ("openai_compatible", "base_url", "http://x:1/v1", "http://x:1/v1"),
    ],
)
def test_base_url_keys(provider: str, key: str, given: str, expected: str) -> None:
    assert build(provider, model="m", **{key: given}).base_url == expected


def test_settings_are_passed_through() -> None:
    llm = build(
        "vllm",
        model="Qwen/Qwen2.5-7B-Instruct",
        temperature=0.2,
        max_tokens=512,
        timeout=12.5,
        structured_output="json_object",
    )
    assert llm.model_name == "Qwen/Qwen2.5-7B-Instruct"
    assert llm.temperature == 0.2
    assert llm.chat.max_tokens == 512
    assert llm.chat.timeout == 12.5
    assert llm.structured_output == "json_object"


def test_none_values_mean_defaults() -> None:
    llm = build("ollama", model="m", api_key=None, temperature=None, max_tokens=None)
    assert llm.temperature == 0.0
    assert llm.chat.max_tokens is None


def test_unknown_provider_lists_known_ones() -> None:
    with pytest.raises(ConfigurationError, match=r"unknown LLM provider 'anthropic'.*ollama"):
        create_llm("anthropic", model="m")


def test_unknown_key_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match="top_k"):
        create_llm("ollama", model="m", top_k=5)


def test_model_is_required() -> None:
    with pytest.raises(ConfigurationError, match="needs a model"):
        create_llm("vllm")


def test_openai_compatible_needs_a_base_url() -> None:
    with pytest.raises(ConfigurationError, match="needs base_url"):
        create_llm("openai_compatible", model="m")


def test_conflicting_base_urls_are_rejected() -> None:
    with pytest.raises(ConfigurationError, match="conflicting"):
        create_llm("vllm", model="m", base_url="http://a/v1", vllm_base_url="http://b/v1")


def test_openai_needs_an_api_key() -> None:
    with pytest.raises(ConfigurationError, match="api_key"):
        create_llm("openai", model="gpt-4o-mini")


def test_adapter_is_reachable_lazily_from_the_package() -> None:
    assert memhub.llm.OpenAICompatibleLLM is OpenAICompatibleLLM
    with pytest.raises(AttributeError):
        _ = memhub.llm.NoSuchThing


@pytest.mark.parametrize("module", ["memhub.llm", "memhub.testing"])
def test_import_does_not_load_the_openai_sdk(module: str) -> None:
    code = f"import sys, {module}; sys.exit('openai' in sys.modules)"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr or f"importing {module} imported openai"


@pytest.mark.parametrize(
    ("provider", "auto"),
    [
        ("vllm", False),
        ("ollama", False),
        ("lmstudio", False),
        ("llamacpp", True),
        ("openai_compatible", True),
    ],
)
def test_structured_output_is_chosen_per_provider(provider: str, auto: bool) -> None:
    # llama.cpp's own server takes JSON schemas and llama-cpp-python's does not: "auto" steps
    # down once; the others are known to take json_schema (LM Studio refuses json_object).
    llm = create_llm(provider, model="m", base_url="http://127.0.0.1:9/v1")
    assert llm.structured_output == "json_schema"
    assert llm._auto is auto  # type: ignore[attr-defined]
    explicit = create_llm(
        provider, model="m", base_url="http://127.0.0.1:9/v1", structured_output="none"
    )
    assert explicit.structured_output == "none"
