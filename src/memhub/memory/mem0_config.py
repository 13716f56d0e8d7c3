"""Mem0's config dict (``vector_store`` / ``embedder`` / ``llm``) mapped onto memhub's settings.

A migrating user's config names the vector store Mem0 used (qdrant, chroma, ...). memhub keeps
its memories in PostgreSQL whatever the dict says, so such a section runs on memhub's own
database (``MEMHUB_DATABASE_URL``, else the embedded server) with one warning naming what is
ignored, rather than stopping code that only changed its import. A config with an
``embedder`` section keeps its memories in the embedding space named by the vector store's
``collection_name`` (Mem0's default: ``mem0``), beside the database's default space. Sections
memhub does not implement (``graph_store``, ``reranker``) are named the same way; nothing is
dropped silently.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any, Final

from memhub.config import MemhubSettings, postgres_url
from memhub.errors import ConfigurationError

__all__ = ["Mem0ConfigWarning", "settings_from_mem0_config"]

_VECTOR_STORES = ("pgvector", "supabase", "memhub")
_LLM_URL_KEYS = (
    "vllm_base_url",
    "ollama_base_url",
    "openai_base_url",
    "lmstudio_base_url",
    "base_url",
)
_EMBED_URL_KEYS = ("huggingface_base_url", "openai_base_url", "ollama_base_url", "base_url")


def _section(config: Mapping[str, Any], name: str) -> tuple[str | None, dict[str, Any]]:
    section = config.get(name)
    if section is None:
        return None, {}
    if not isinstance(section, Mapping) or "provider" not in section:
        raise ConfigurationError(f"config[{name!r}] must be {{'provider': ..., 'config': {{...}}}}")
    inner = section.get("config") or {}
    if not isinstance(inner, Mapping):
        raise ConfigurationError(f"config[{name!r}]['config'] must be a dict")
    return str(section["provider"]).lower(), {k: v for k, v in inner.items() if v is not None}


class Mem0ConfigWarning(UserWarning):
    """A part of a Mem0 config that memhub does not use (the rest is applied)."""


def _ignored(what: str, why: str) -> None:
    warnings.warn(f"Mem0 config: {what} is ignored: {why}", Mem0ConfigWarning, stacklevel=4)


def _database_url(provider: str, cfg: Mapping[str, Any]) -> str | None:
    if provider not in _VECTOR_STORES:
        _ignored(
            f"config['vector_store'] (provider {provider!r})",
            "memhub keeps memories in PostgreSQL with pgvector: MEMHUB_DATABASE_URL, else its "
            "embedded server in MEMHUB_DATA_DIR. To point at a server, use provider 'pgvector' "
            "with connection_string; to silence this, drop the section",
        )
        return None
    url = cfg.get("connection_string") or cfg.get("url")
    if url:
        return str(url)
    if "host" not in cfg and "dbname" not in cfg:
        return None  # no server named: the embedded one
    password = cfg.get("password")
    return postgres_url(
        str(cfg.get("host", "localhost")),
        cfg.get("port"),
        str(cfg.get("user", "postgres")),
        None if password is None else str(password),
        str(cfg.get("dbname", "postgres")),
    )


def _first(cfg: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    return next((str(cfg[k]) for k in keys if cfg.get(k)), None)


_KNOWN_KEYS: Final = frozenset(
    {
        "vector_store",
        "embedder",
        "llm",
        "version",
        "history_db_path",
        "custom_fact_extraction_prompt",
        "custom_instructions",
        "custom_update_memory_prompt",
        "graph_store",
        "reranker",
    }
)


def _embedder_values(embedder: str, embed_cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of Mem0's ``embedder`` section; local Hugging Face means bundled MiniLM."""
    values: dict[str, Any] = {}
    values["embedder"] = embedder
    values["embedder_model"] = embed_cfg.get("model")
    values["embedder_base_url"] = _first(embed_cfg, _EMBED_URL_KEYS)
    values["embedder_api_key"] = embed_cfg.get("api_key")
    values["embedder_dimension"] = embed_cfg.get("embedding_dims")
    if embedder == "huggingface" and values["embedder_base_url"] is None:
        # Mem0's local sentence-transformers model: memhub runs it in-process on onnxruntime
        # (a directory, a packaged model or a hub id; see docs/embedders.md).
        values["embedder"] = "minilm"
    return values


def settings_from_mem0_config(config: Mapping[str, Any]) -> MemhubSettings:
    """Settings for a Mem0-style config; unknown sections and providers are clear errors.

    The environment still fills what the dict leaves out, as with Mem0.
    """
    if not isinstance(config, Mapping):
        raise ConfigurationError("config must be a dict in Mem0's shape")
    unknown = sorted(set(config) - _KNOWN_KEYS)
    if unknown:
        raise ConfigurationError(f"unknown config keys: {', '.join(unknown)}")
    for section in ("graph_store", "reranker"):
        if config.get(section):
            _ignored(f"config[{section!r}]", "memhub does not implement it (docs/mem0.md)")
    values: dict[str, Any] = {}
    store, store_cfg = _section(config, "vector_store")
    if store is not None:
        values["database_url"] = _database_url(store, store_cfg)
    embedder, embed_cfg = _section(config, "embedder")
    if embedder is not None:
        values.update(_embedder_values(embedder, embed_cfg))
        # A collection with its own embedder is a space of its own (docs/embedders.md):
        # Mem0's default collection is "mem0".
        values["space"] = str(store_cfg.get("collection_name") or "mem0")
        values["space_prefers_default"] = True
        if values["embedder_dimension"] is None:
            values["embedder_dimension"] = store_cfg.get("embedding_model_dims")
    llm, llm_cfg = _section(config, "llm")
    if llm is not None:
        values["llm_provider"] = llm
        values["llm_model"] = llm_cfg.get("model")
        values["llm_base_url"] = _first(llm_cfg, _LLM_URL_KEYS)
        values["llm_api_key"] = llm_cfg.get("api_key")
    for key in ("custom_fact_extraction_prompt", "custom_instructions"):
        if config.get(key):
            values["custom_instructions"] = str(config[key])
    return MemhubSettings.from_env(**values)
