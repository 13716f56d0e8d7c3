"""memhub's settings: explicit objects, filled from the environment only by ``from_env()``.

Every variable is ``MEMHUB_<FIELD>``; ARKOS's ``DB_URL`` and the agent-kit plan's ``MEM0__*``
variables are honoured as fallbacks so both seeds run unchanged.
"""

from __future__ import annotations

import os
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Literal, Self
from urllib.parse import quote

from pydantic import AliasChoices, Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

__all__ = [
    "EnvSettings",
    "MemhubSettings",
    "default_data_dir",
    "default_model_cache",
    "postgres_url",
    "settings_error_line",
]

# Set only while from_env() builds an object: explicit construction never sees the environment.
_READING_ENVIRONMENT: ContextVar[bool] = ContextVar("memhub_reading_environment", default=False)


def postgres_url(
    host: str,
    port: int | str | None = None,
    user: str | None = None,
    password: str | None = None,
    dbname: str | None = None,
) -> str:
    """A ``postgresql://`` URL from its parts, each percent-encoded (``/``, ``@``, ``:`` too).

    The one builder behind Mem0's ``host``/``port``/... config and the ``MEM0__PG_*`` variables.
    """
    auth = quote(user or "postgres", safe="")
    if password:
        auth += ":" + quote(password, safe="")
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host  # IPv6
    database = quote(dbname or "postgres", safe="")
    return f"postgresql://{auth}@{host}:{port or 5432}/{database}"


def default_data_dir() -> Path:
    """Per-user data directory (XDG): ``$XDG_DATA_HOME/memhub`` or ``~/.local/share/memhub``."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "memhub"


def default_model_cache() -> Path:
    """Built embedding models, shared by every data directory (XDG):
    ``$XDG_CACHE_HOME/memhub/models`` or ``~/.cache/memhub/models``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memhub" / "models"


class EnvSettings(BaseSettings):
    """Settings that read the environment in :meth:`from_env` and nowhere else.

    ``Cls(field=...)`` uses the values given and the defaults, whatever ``MEMHUB_*`` holds, so
    a developer's environment cannot leak into an object a program or a test builds.
    """

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The arguments given, plus the environment inside :meth:`from_env` only."""
        if _READING_ENVIRONMENT.get():
            return (init_settings, env_settings)
        return (init_settings,)

    @classmethod
    def from_env(cls, **overrides: Any) -> Self:
        """Settings from the environment; explicit, non-None ``overrides`` win."""
        explicit = {key: value for key, value in overrides.items() if value is not None}
        token = _READING_ENVIRONMENT.set(True)
        try:
            return cls(**explicit)
        finally:
            _READING_ENVIRONMENT.reset(token)


class MemhubSettings(EnvSettings):
    """All of memhub's knobs; ``MEMHUB_*`` and the seeds' variables are read by :meth:`from_env`.

    Built directly, an object holds its defaults and the values given, nothing else (the
    default ``data_dir`` still follows XDG, as every per-user directory does). API keys are
    :class:`~pydantic.SecretStr`: ``repr(settings)`` and logs show ``**********``, and
    ``settings.llm_api_key.get_secret_value()`` gives the key.
    """

    model_config = SettingsConfigDict(
        env_prefix="MEMHUB_", extra="ignore", populate_by_name=True, validate_default=True
    )

    # -- database ----------------------------------------------------------------------
    database_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MEMHUB_DATABASE_URL", "DB_URL", "MEM0__PG_URI"),
        description="PostgreSQL URL; unset: embedded server; `memory://`: in-process store.",
    )
    data_dir: Path = Field(default_factory=default_data_dir, description="Embedded server home.")
    database_name: str = Field(
        default="memhub", description="Database created on the embedded server."
    )
    pgbouncer: bool = Field(
        default=False,
        description="The URL goes through PgBouncer in transaction mode: no prepared statements"
        " or session state; migrations only checked unless MEMHUB_DIRECT_DATABASE_URL is set.",
    )
    direct_database_url: str | None = Field(
        default=None,
        description="PostgreSQL itself (not the pooler), used for migrations and for the"
        " session that listens for key revocations.",
    )
    read_database_url: str | None = Field(
        default=None,
        description="Streaming replicas (space-separated URLs) for search, get and list.",
    )
    read_your_writes_wait: float = Field(
        default=1.0,
        ge=0,
        description="Seconds a read waits for a replica to replay this process's last write"
        " to the scope before it reads the primary instead.",
    )
    pool_min_size: int = Field(default=1, ge=0)
    pool_max_size: int = Field(default=10, ge=1)
    connect_timeout: float = Field(
        default=5.0, gt=0, description="Seconds to wait for a connection."
    )
    statement_timeout_ms: int = Field(default=30_000, ge=0, description="0 disables it.")
    idle_in_transaction_timeout_ms: int = Field(
        default=30_000,
        ge=0,
        description="A session idle inside a transaction this long is ended by PostgreSQL and"
        " its locks released (a worker frozen mid-transaction must not block the queue);"
        " 0 disables it.",
    )

    # -- limits ------------------------------------------------------------------------
    max_id_length: int = Field(default=255, ge=1, description="ARKOS's VARCHAR(255) ids.")
    max_text_chars: int = Field(default=32_000, ge=1)
    max_metadata_bytes: int = Field(default=16_384, ge=2, description="Metadata as JSON.")
    max_metadata_depth: int = Field(default=8, ge=1, description="Nesting of metadata.")
    max_filter_depth: int = Field(default=10, ge=1, description="Nesting of AND/OR/NOT.")
    max_filter_conditions: int = Field(default=100, ge=1, description="Conditions per filter.")
    max_filter_in_values: int = Field(
        default=1000, ge=1, description="Values of all in / nin lists of one filter together."
    )
    # At least 100: the default limit of search, get_all and the server's lists.
    max_search_results: int = Field(default=1000, ge=100, description="Largest search limit.")
    max_page_size: int = Field(
        default=10_000, ge=100, description="Largest get_all / list limit (a page of memories)."
    )

    # -- embedder ----------------------------------------------------------------------
    embedder: str = Field(
        default="default",
        description="default (all-mpnet-base-v2 int8) | minilm | openai | vllm | ollama | tei",
    )
    embedder_model: str | None = None
    model_cache: Path = Field(
        default_factory=default_model_cache,
        description="Where built embedding models are kept, once per machine.",
    )
    embedder_base_url: str | None = None
    embedder_api_key: SecretStr | None = None
    embedder_dimension: int | None = None
    embedder_threads: int = Field(default=1, ge=1)
    space: str | None = Field(
        default=None,
        pattern=r"^[\w.:/@+-]{1,128}$",
        description="The embedding space (docs/embedders.md): unset, the database's default"
        " space; a name, a space of its own with its own embedder, created on first use.",
    )
    space_prefers_default: bool = Field(
        default=False,
        description="Use the default space instead of `space` when the default space already"
        " records this embedder (set for the spaces Mem0 collections and LangGraph indexes"
        " name, so memories they kept there before spaces existed stay found).",
    )

    # -- reranker (search(rerank=...)); none configured means no second pass -----------
    reranker: str | None = Field(default=None, description="cross-encoder | tei | cohere | vllm")
    """What re-orders search's fused top candidates (docs/retrieval.md); unset: nothing."""
    reranker_model: str | None = None
    """cross-encoder: its directory; cohere / vllm: the model name sent."""
    reranker_base_url: str | None = None
    """tei / cohere / vllm / jina: the server root, ``/rerank`` is appended."""
    reranker_api_key: SecretStr | None = None
    """Bearer token for the rerank server."""
    rerank_candidates: int = Field(default=20, ge=1, le=200)
    """How many of the fused best results the reranker re-orders."""

    # -- LLM (consolidation); no base URL and no model means no LLM ----------------------
    llm_provider: str = "openai_compatible"
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: SecretStr | None = None
    llm_timeout: float = Field(default=60.0, gt=0)
    llm_max_retries: int = Field(default=3, ge=0, description="HTTP retries on 429/5xx/timeouts.")
    llm_structured_output: Literal["auto", "json_schema", "json_object", "none"] | None = Field(
        default=None,
        description="How JSON answers are enforced; unset: what the provider is known to"
        " support (`auto`: JSON schema, stepping down once if the server rejects it).",
    )
    llm_context_tokens: int = Field(
        default=4096,
        ge=1024,
        description="The model's context window: each consolidation prompt and its reply fit"
        " in it; turns that would not are sent in several calls.",
    )
    llm_check_replacements: bool = Field(
        default=True,
        description="Ask the model, for each new fact, whether it replaces the closest stored"
        " fact (one short call each); a yes supersedes it, under the same guard.",
    )
    llm_fill_gaps: bool = Field(
        default=True,
        description="Ask the model one short question about each user turn whose statements"
        " no fact of the consolidation call covers; its facts pass the same guards.",
    )
    custom_instructions: str | None = Field(
        default=None, description="What to remember and what never to store (consolidation)."
    )

    # -- background worker -------------------------------------------------------------
    worker: Literal["thread", "off"] = Field(
        default="thread", description="`thread`: ingest in-process; `off`: run `memhub worker`."
    )
    worker_batch_size: int = Field(default=64, ge=1)
    worker_concurrency: int | None = Field(
        default=None,
        ge=1,
        description="Batches in flight per worker; unset: 1 in-process, one per CPU in"
        " `memhub worker`.",
    )
    worker_poll_interval: float = Field(default=0.5, gt=0)
    job_max_attempts: int = Field(default=5, ge=1)
    consolidation_delay: float = Field(
        default=2.0, ge=0, description="Seconds turns wait so one LLM call covers several."
    )
    max_turns_per_call: int = Field(default=40, ge=1)
    job_lease_seconds: float = Field(
        default=60.0, gt=0, description="A claim's lease; a dead worker's jobs rerun after it."
    )
    worker_shutdown_grace: float = Field(
        default=10.0, ge=0, description="Seconds in-flight work gets to finish on shutdown."
    )
    wait_timeout: float = Field(
        default=30.0, gt=0, description="Longest add(wait=True) waits for its own turns."
    )
    recall_wait_timeout: float = Field(
        default=3.0, ge=0, description="Longest recall waits for its own turns' ingestion."
    )
    job_retry_base_seconds: float = Field(
        default=1.0, gt=0, description="First retry delay; doubles per attempt (max 5 min)."
    )
    retired_retention_days: float = Field(
        default=30.0,
        ge=0,
        description="Days a memory a model retired stays restorable; the worker then erases it.",
    )
    model_changes_per_day: int = Field(
        default=10,
        ge=0,
        description="Memories of one user that models (consolidation, agents, MCP, LangGraph)"
        " may retire, supersede or reword in any 24 hours, counted from the history in the"
        " store; what exceeds it is refused, logged and counted. 0: models change nothing.",
    )
    model_changes_per_run: int = Field(
        default=5,
        ge=0,
        description="Of those, how many consolidation may make citing the turns of one"
        " conversation (session) in 24 hours; the per-call caps bound agents and MCP.",
    )
    exit_timeout: float = Field(
        default=5.0,
        ge=0,
        description="At interpreter exit, longest a Memory never closed spends finishing the"
        " ingestion it queued; what is left is handed back to the queue for the next worker.",
    )
    search_wait_timeout: float = Field(
        default=2.0,
        ge=0,
        description="Longest a search waits for the turns this object added to that scope to"
        " be embedded (found by meaning); never for others' work or the LLM. 0: no wait.",
    )
    # -- what a search returns by default (each call may say otherwise: docs/retrieval.md) --
    search_max_tokens: int | None = Field(
        default=None,
        ge=1,
        description="Cap on a search's results' total length (about four characters a token)"
        " when the call gives no max_tokens; unset: no cap.",
    )
    search_excerpt_tokens: int = Field(
        default=192,
        ge=0,
        description="The longest text one search result returns (about four characters a"
        " token) when the call gives no excerpt_tokens: a longer memory returns its sentences"
        " sharing most of the query's words; 0: whole.",
    )
    search_min_score_ratio: float = Field(
        default=0.0,
        ge=0.0,
        le=1.0,
        description="Leave out results scoring below this share of the query's best score"
        " when the call gives no min_score_ratio or threshold; 0: keep all.",
    )

    # -- agent ---------------------------------------------------------------------------
    memory_enabled: bool = Field(
        default=True, validation_alias=AliasChoices("MEMHUB_MEMORY_ENABLED", "MEM0_ENABLED")
    )

    @field_validator("data_dir", "model_cache", mode="before")
    @classmethod
    def _expand(cls, value: Any) -> Any:
        return Path(value).expanduser() if isinstance(value, str | Path) else value

    @property
    def llm_configured(self) -> bool:
        """True when an LLM endpoint is set, so consolidation can run."""
        return bool(self.llm_model and (self.llm_base_url or self.llm_api_key))


def settings_error_line(exc: ValidationError, prefix: str = "MEMHUB_") -> str:
    """One ``memhub:`` line naming each refused variable, for a command to print and exit.

    The values are never repeated: a refused secret (an API key) must not reach a terminal
    or a log.
    """
    problems = []
    for error in exc.errors(include_input=False, include_url=False):
        loc = error.get("loc") or ("?",)
        name = str(loc[0])
        variable = name if name.isupper() else prefix + name.upper()
        problems.append(f"{variable}: {error.get('msg', 'invalid')}")
    return "memhub: invalid setting " + "; ".join(problems)
