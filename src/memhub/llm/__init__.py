"""Language models for memhub: the ``LLM`` contract, its adapters, and ``create_llm``.

Importing this package does not import the ``openai`` SDK; the adapter loads it when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memhub._lazy import lazy_names
from memhub.errors import ConfigurationError
from memhub.llm.base import (
    LLM,
    BaseLLM,
    ChatMessage,
    Completion,
    OutputSchema,
    StructuredResult,
    UnusableAnswerError,
    Usage,
)
from memhub.llm.parsing import extract_json, parse_structured, strip_reasoning

if TYPE_CHECKING:
    from memhub.llm.openai_compat import OpenAICompatibleLLM

__all__ = [
    "LLM",
    "BaseLLM",
    "ChatMessage",
    "Completion",
    "OpenAICompatibleLLM",
    "OutputSchema",
    "StructuredResult",
    "UnusableAnswerError",
    "Usage",
    "create_llm",
    "extract_json",
    "parse_structured",
    "strip_reasoning",
]

# provider -> default base URL (None: OpenAI's own; "": the caller must give one).
_DEFAULT_BASE_URLS: dict[str, str | None] = {
    "openai": None,
    "vllm": "http://localhost:8000/v1",
    "ollama": "http://localhost:11434/v1",
    "lmstudio": "http://localhost:1234/v1",
    "llamacpp": "http://localhost:8080/v1",
    "llama_cpp": "http://localhost:8080/v1",
    "openai_compatible": "",
}
# What each provider is known to enforce. "auto" asks for a JSON schema and steps down once
# per client when the server rejects it: llama.cpp's own server takes json_schema, while
# llama-cpp-python 0.3's takes only json_object; a generic server may take either or neither.
_STRUCTURED_OUTPUT: dict[str, str] = {
    "openai": "json_schema",
    "vllm": "json_schema",
    "ollama": "json_schema",
    "lmstudio": "json_schema",
    "llamacpp": "auto",
    "llama_cpp": "auto",
    "openai_compatible": "auto",
}
# Mem0 names the URL after the provider; any of these is accepted for any provider.
_BASE_URL_KEYS = (
    "base_url",
    "openai_base_url",
    "vllm_base_url",
    "ollama_base_url",
    "lmstudio_base_url",
    "llamacpp_base_url",
)
_PASSED_THROUGH = (
    "model",
    "api_key",
    "temperature",
    "max_tokens",
    "timeout",
    "max_retries",
    "structured_output",
)


def create_llm(provider: str, **config: Any) -> LLM:
    """Build an LLM from a Mem0-style provider name and config.

    Example:
        ``create_llm("ollama", model="qwen2.5:7b", ollama_base_url="http://gpu:11434")``

    Args:
        provider: One of ``openai``, ``vllm``, ``ollama``, ``lmstudio``, ``llamacpp``
            (or ``llama_cpp``), ``openai_compatible``.
        **config: ``model`` (required), ``api_key``, a base URL as ``base_url`` or
            ``<provider>_base_url``, ``temperature``, ``max_tokens``, ``timeout``,
            ``max_retries``, ``structured_output`` (unset: what the provider is known to
            support, see ``_STRUCTURED_OUTPUT``).

    Returns:
        An ``OpenAICompatibleLLM``: every supported server speaks the OpenAI protocol.

    Raises:
        ConfigurationError: Unknown provider or key, missing model or base URL.
    """
    key = provider.lower().replace("-", "_")
    if key not in _DEFAULT_BASE_URLS:
        raise ConfigurationError(
            f"unknown LLM provider {provider!r}; known: {', '.join(sorted(_DEFAULT_BASE_URLS))}"
        )
    unknown = sorted(set(config) - set(_BASE_URL_KEYS) - set(_PASSED_THROUGH))
    if unknown:
        raise ConfigurationError(
            f"unknown LLM config key(s) {unknown}; accepted: "
            f"{', '.join((*_PASSED_THROUGH, *_BASE_URL_KEYS))}"
        )
    if not config.get("model"):
        raise ConfigurationError(f"LLM provider {provider!r} needs a model, e.g. model='...'")
    settings = {name: config[name] for name in _PASSED_THROUGH if config.get(name) is not None}
    settings["base_url"] = _base_url(key, config)
    settings.setdefault("structured_output", _STRUCTURED_OUTPUT[key])

    from memhub.llm.openai_compat import OpenAICompatibleLLM  # keeps `import memhub` light

    return OpenAICompatibleLLM(**settings)


def _base_url(provider: str, config: dict[str, Any]) -> str | None:
    given = {config[name] for name in _BASE_URL_KEYS if config.get(name)}
    if len(given) > 1:
        raise ConfigurationError(f"conflicting LLM base URLs given: {sorted(given)}")
    url: str | None = given.pop() if given else _DEFAULT_BASE_URLS[provider]
    if url == "":
        raise ConfigurationError(
            f"LLM provider {provider!r} needs base_url, e.g. 'http://localhost:8000/v1'"
        )
    if url is not None and provider == "ollama":
        # Mem0's ollama_base_url is the server root; the OpenAI-compatible API is under /v1.
        url = url.rstrip("/")
        if not url.endswith("/v1"):
            url += "/v1"
    return url


__getattr__, __dir__ = lazy_names(__name__, {"OpenAICompatibleLLM": "memhub.llm.openai_compat"})
