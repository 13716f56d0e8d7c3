"""Build an embedder from a provider name and a config dict, including Mem0/ARKOS-style keys.

Provider modules are imported only here, when asked for, so ``import memhub.embed`` stays
free of onnxruntime, tokenizers and openai.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from memhub.embed.base import Embedder
from memhub.errors import ConfigurationError

__all__ = ["DEFAULT_MODEL", "create_embedder", "known_providers"]

#: The in-process model of ``provider="default"`` (and of settings that name no embedder):
#: all-mpnet-base-v2 with int8 weights, 768 dimensions. Chosen by leave-one-conversation-out
#: recall on the dev conversations (0.753 against all-MiniLM-L6-v2's 0.718; docs/retrieval.md).
#: ``provider="minilm"`` keeps the smaller, faster all-MiniLM-L6-v2.
DEFAULT_MODEL = "all-mpnet-base-v2-int8"

_MINILM_IDS = frozenset({"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"})
_MINILM_DIMENSION = 384
_BASE_URL_KEYS = ("base_url", "openai_base_url", "ollama_base_url", "huggingface_base_url")
_DIMENSION_KEYS = ("dimension", "embedding_dims")
_MINILM_KEYS = frozenset({"threads", "batch_size", "max_length", "model", *_DIMENSION_KEYS})
#: A packaged model also takes the model cache it is built into and the data directory's
#: ``models`` folder, where memhub before the cache assembled it.
_LOCAL_KEYS = _MINILM_KEYS | {"models_dir", "model_cache"}
_SERVER_KEYS = frozenset(
    {"model", "api_key", "batch_size", "timeout", "max_retries", *_DIMENSION_KEYS, *_BASE_URL_KEYS}
)
#: Mem0's defaults for the providers that have a well-known one.
_DEFAULT_MODELS = {"openai": "text-embedding-3-small", "ollama": "nomic-embed-text"}
_OLLAMA_URL = "http://localhost:11434"


def create_embedder(provider: str, **config: Any) -> Embedder:
    """Create the embedder a provider name and its settings describe.

    Keys whose value is ``None`` or an empty mapping count as absent, so a dumped Mem0
    config (where every field exists) works. Other unknown keys are refused.

    Args:
        provider: ``"default"`` or ``"local"`` for the in-process :data:`DEFAULT_MODEL`,
            ``"minilm"`` or ``"onnx"`` for the in-process all-MiniLM-L6-v2; with ``model=``,
            any of these four runs any other in-process model: a
            sentence-transformers / Hugging Face directory (or an ``.onnx`` file in one), a
            packaged model (``"all-mpnet-base-v2"``, ``"all-mpnet-base-v2-int8"``), or a
            hub id fetched when the Hugging Face hub is reachable (``"local"`` is the same);
            ``"openai"``, ``"vllm"``, ``"ollama"``, ``"huggingface"`` or ``"tei"`` for an
            OpenAI-compatible server. ``"huggingface"`` without a base URL means the same
            in-process models.
        **config: Settings. For servers: ``model``, ``api_key``, ``base_url`` (or Mem0's
            ``openai_base_url`` / ``ollama_base_url`` / ``huggingface_base_url``),
            ``embedding_dims`` (or ``dimension``), ``batch_size``, ``timeout``,
            ``max_retries``. In-process: ``model``, ``threads``, ``batch_size``, ``max_length``,
            ``embedding_dims`` (checked against the model), ``model_cache`` (where packaged
            models are built, once per machine; default ``~/.cache/memhub/models``),
            ``models_dir`` (a data directory's ``models`` folder: a packaged model an earlier
            memhub built there is used in place).

    Returns:
        An embedder; nothing is loaded or contacted yet.

    Raises:
        ConfigurationError: Unknown provider or key, or settings that cannot work.
    """
    name = provider.strip().lower()
    builder = _BUILDERS.get(name)
    if builder is None:
        raise ConfigurationError(
            f"unknown embedding provider {provider!r}; known: {', '.join(known_providers())}"
        )
    settings = {key: value for key, value in config.items() if not _is_unset(value)}
    return builder(name, settings)


def known_providers() -> list[str]:
    """The provider names :func:`create_embedder` accepts, sorted."""
    return sorted(_BUILDERS)


def _is_unset(value: object) -> bool:
    return value is None or (isinstance(value, Mapping) and not value)


def _build_minilm(name: str, settings: dict[str, Any]) -> Embedder:
    model = settings.get("model")
    if model is not None and model not in _MINILM_IDS:
        return _build_local(name, settings)
    from memhub.embed.onnx_minilm import MiniLMEmbedder

    # MiniLM ships inside its own package: where other packaged models are built does not
    # concern it (the settings pass these whenever a model is named).
    settings.pop("models_dir", None)
    settings.pop("model_cache", None)
    _refuse_unknown(name, settings, _MINILM_KEYS)
    settings.pop("model", None)
    dimension = _pop_dimension(settings)
    if dimension is not None and dimension != _MINILM_DIMENSION:
        raise ConfigurationError(
            f"all-MiniLM-L6-v2 returns {_MINILM_DIMENSION} dimensions, not {dimension}"
        )
    return MiniLMEmbedder(**settings)


def _build_default(name: str, settings: dict[str, Any]) -> Embedder:
    settings.setdefault("model", DEFAULT_MODEL)
    return _build_minilm(name, settings)


def _build_local(name: str, settings: dict[str, Any]) -> Embedder:
    """A model directory, a packaged model or a hub id, on onnxruntime in-process."""
    from memhub.embed.local_model import LocalModelEmbedder, download_from_hub, looks_like_path
    from memhub.embed.packaged import PACKAGED_MODELS, prepare, recorded_name

    _refuse_unknown(name, settings, _LOCAL_KEYS)
    model = str(settings.pop("model"))
    models_dir = settings.pop("models_dir", None)
    cache = settings.pop("model_cache", None)
    dimension = _pop_dimension(settings)
    packaged = PACKAGED_MODELS.get(model)
    if packaged is not None:
        if cache is None:
            from memhub.config import default_model_cache

            cache = default_model_cache()
        earlier = None if models_dir is None else Path(models_dir)
        onnx = prepare(packaged, Path(cache), earlier)
        recorded = recorded_name(packaged, onnx, earlier)
        return LocalModelEmbedder(onnx, dimension=dimension, model_name=recorded, **settings)
    if looks_like_path(model):
        return LocalModelEmbedder(model, dimension=dimension, **settings)
    if "/" not in model:
        raise ConfigurationError(
            f"embedding model {model!r} is not a directory that exists, a packaged model "
            f"({', '.join(sorted(PACKAGED_MODELS))}) or a hub id like org/name"
        )
    return LocalModelEmbedder(
        download_from_hub(model), dimension=dimension, model_name=model, **settings
    )


def _build_server(name: str, settings: dict[str, Any]) -> Embedder:
    if name == "huggingface" and not any(key in settings for key in _BASE_URL_KEYS):
        return _build_minilm(name, settings)  # Mem0: a local sentence-transformers model
    from memhub.embed.openai_compat import OpenAIEmbedder

    _refuse_unknown(name, settings, _SERVER_KEYS)
    base_url = _pop_base_url(name, settings)
    model = settings.pop("model", None) or _DEFAULT_MODELS.get(name)
    if model is None:
        raise ConfigurationError(
            f"provider {name!r} needs model=, the name the server serves "
            "(it is recorded in the database)"
        )
    dimension = _pop_dimension(settings)
    # Only OpenAI's own API is known to accept "dimensions" (text-embedding-3-* shorten
    # their vectors); Mem0 sends it there too.
    send_dimensions = name == "openai" and dimension is not None
    return OpenAIEmbedder(
        model, base_url, dimension=dimension, send_dimensions=send_dimensions, **settings
    )


def _refuse_unknown(name: str, settings: Mapping[str, Any], allowed: frozenset[str]) -> None:
    unknown = sorted(set(settings) - allowed)
    if unknown:
        raise ConfigurationError(
            f"provider {name!r} does not take {', '.join(unknown)}; "
            f"it takes {', '.join(sorted(allowed))}"
        )


def _pop_dimension(settings: dict[str, Any]) -> int | None:
    values = {settings.pop(key) for key in _DIMENSION_KEYS if key in settings}
    if len(values) > 1:
        raise ConfigurationError(f"dimension and embedding_dims disagree: {sorted(values)}")
    return int(values.pop()) if values else None


def _pop_base_url(name: str, settings: dict[str, Any]) -> str | None:
    urls = {str(settings.pop(key)).rstrip("/") for key in _BASE_URL_KEYS if key in settings}
    if len(urls) > 1:
        raise ConfigurationError(f"several different base URLs given: {sorted(urls)}")
    url = urls.pop() if urls else None
    if name == "ollama":
        # Mem0's ollama_base_url is the server root; the OpenAI-compatible API is under /v1.
        url = url or _OLLAMA_URL
        return url if url.endswith("/v1") else f"{url}/v1"
    if url is None and name != "openai":
        raise ConfigurationError(
            f"provider {name!r} needs base_url=, the server's API root "
            "(e.g. http://localhost:8000/v1)"
        )
    return url


_BUILDERS: dict[str, Callable[[str, dict[str, Any]], Embedder]] = {
    "default": _build_default,
    "local": _build_default,
    "minilm": _build_minilm,
    "onnx": _build_minilm,
    "huggingface": _build_server,
    "ollama": _build_server,
    "openai": _build_server,
    "tei": _build_server,
    "vllm": _build_server,
}
