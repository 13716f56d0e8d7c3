"""How an agent uses memory (``AgentMemoryConfig``) and memory settings from the environment."""

from __future__ import annotations

import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from memhub.agent.forget_guard import ForgetConfirm
from memhub.config import MemhubSettings, postgres_url
from memhub.errors import ConfigurationError
from memhub.messages import Message

if TYPE_CHECKING:
    from memhub.agent.memory_flow import MemoryClient
    from memhub.agent.runtime import Runtime

__all__ = [
    "AgentMemoryConfig",
    "CallContext",
    "Resolver",
    "build_config_from_env",
    "memory_switched_on",
]

log = logging.getLogger("memhub.agent")


@dataclass(frozen=True)
class CallContext:
    """One agent call as resolvers see it."""

    agent_name: str
    thread_id: str | None
    metadata: Mapping[str, Any]
    messages: Sequence[Message]


Resolver: TypeAlias = Callable[["Runtime", CallContext], "str | Awaitable[str | None] | None"]
"""``resolver(runtime, call)``, sync or async, returning an id or None (skip memory)."""


def default_resolve_user(runtime: Runtime, call: CallContext) -> str | None:
    """``metadata["user_id"]`` (or the plan's ``userId``), else ``runtime.state["user_id"]``."""
    value = call.metadata.get("user_id") or call.metadata.get("userId")
    return _text(value or runtime.state.get("user_id"))


def default_resolve_thread_id(runtime: Runtime, call: CallContext) -> str | None:
    """The call's ``thread_id``, else ``metadata["thread_id"]`` (or the plan's ``threadId``)."""
    return _text(call.thread_id or call.metadata.get("thread_id") or call.metadata.get("threadId"))


def _text(value: object) -> str | None:
    return str(value).strip() or None if value is not None else None


async def resolve(resolver: Resolver, runtime: Runtime, call: CallContext) -> str | None:
    """Run a sync or async resolver; blank answers count as missing."""
    value = resolver(runtime, call)
    if inspect.isawaitable(value):
        value = await value
    return _text(value)


@dataclass(frozen=True, kw_only=True)
class AgentMemoryConfig:
    """Long-term memory for an agent: recall before the model call, persist after it.

    Args:
        enable: Use memory at all (``MEMHUB_MEMORY_ENABLED=false`` overrides it to off).
        client: A memory client (an :class:`~memhub.AsyncMemory`) to use as it is.
        provider_config: Without ``client``: ``MemhubSettings`` or a Mem0-style config dict
            for ``runtime.load("memory", ...)``; None means the environment's settings.
        recall_limit: Memories injected at most per call.
        resolve_user: Whose memory; default ``metadata["user_id"]`` / ``["userId"]``.
        resolve_thread_id: Which conversation; default the call's ``thread_id``.
        tags: Stored in the metadata of everything this agent persists.
        infer: Let memhub's LLM extract facts from persisted turns (when one is configured).
        long_term_roles: Whose messages become long-term memories. None: everything when an
            LLM extracts facts; only the user's when turns are kept as said (no LLM, or
            ``infer=False``), so recall is not filled with the agent's own replies. The
            others are kept in the thread's short-term memory either way.
        recall_threshold: Drop hits scoring below this (0-1).
        recall_max_tokens: Inject only the best memories whose texts fit together in this many
            tokens (estimated at four characters a token; a memory too long for what is left
            is skipped); None: only ``recall_limit`` bounds the block.
        short_term_turns: Recent turns of the thread added to the recall query when a call
            carries only the newest message.
        tools: Give the model ``search_memory`` / ``remember`` / ``forget``.
        forget_limit: Memories the ``forget`` tool may retire per agent call (0: none).
        confirm_forget: Decides whether ``forget`` may retire a memory (sync or async,
            called with a :class:`~memhub.agent.forget_guard.ForgetRequest`); by default the
            user's latest message must ask to forget that memory (engine/consent.py).
    """

    enable: bool = True
    client: MemoryClient | None = None
    provider_config: MemhubSettings | Mapping[str, Any] | None = None
    recall_limit: int = 8
    resolve_user: Resolver = default_resolve_user
    resolve_thread_id: Resolver = default_resolve_thread_id
    tags: Sequence[str] | None = None
    infer: bool = True
    long_term_roles: Sequence[str] | None = None
    recall_threshold: float | None = None
    recall_max_tokens: int | None = None
    short_term_turns: int = 4
    tools: bool = True
    forget_limit: int = 1
    confirm_forget: ForgetConfirm | None = None

    def __post_init__(self) -> None:
        if self.recall_limit < 1:
            raise ConfigurationError(f"recall_limit must be at least 1, got {self.recall_limit}")
        if self.short_term_turns < 0:
            raise ConfigurationError("short_term_turns must not be negative")
        if self.recall_max_tokens is not None and self.recall_max_tokens < 1:
            raise ConfigurationError(
                f"recall_max_tokens must be at least 1, got {self.recall_max_tokens}"
            )
        if self.forget_limit < 0:
            raise ConfigurationError("forget_limit must not be negative")


def memory_switched_on(config: AgentMemoryConfig | None) -> bool:
    """The config enables memory and the kill switch (``MEMHUB_MEMORY_ENABLED``) allows it."""
    if config is None or not config.enable:
        return False
    if not MemhubSettings.from_env().memory_enabled:
        return False
    settings = config.provider_config
    return not (isinstance(settings, MemhubSettings) and not settings.memory_enabled)


def _pg_url_from_parts(env: Mapping[str, str]) -> str | None:
    host = env.get("MEM0__PG_HOST")
    if not host:
        return None
    return postgres_url(
        host,
        env.get("MEM0__PG_PORT"),
        env.get("MEM0__PG_USER"),
        env.get("MEM0__PG_PASSWORD"),
        env.get("MEM0__PG_DB") or env.get("MEM0__PG_DATABASE"),
    )


def _mem0_values(env: Mapping[str, str]) -> dict[str, Any]:
    """Settings named by the plan's ``MEM0__*`` variables (``MEMHUB_*`` ones win)."""
    provider = (env.get("MEM0__PROVIDER") or "pgvector").lower()
    if provider not in ("pgvector", "postgres", "memhub"):
        raise ConfigurationError(
            f"MEM0__PROVIDER={provider!r}: memhub stores memories in PostgreSQL + pgvector only"
        )
    key = env.get("OPENAI_API_KEY")
    values: dict[str, Any] = {
        "database_url": env.get("MEM0__PG_URI") or _pg_url_from_parts(env),
        "embedder_dimension": env.get("MEM0__DIMENSION"),
        "llm_model": env.get("MEM0__LLM_MODEL"),
    }
    if env.get("MEM0__EMBED_MODEL"):
        values |= {"embedder": "openai", "embedder_model": env["MEM0__EMBED_MODEL"]}
        values["embedder_api_key"] = key
    if values["llm_model"]:
        values["llm_api_key"] = key
    if env.get("MEM0__COLLECTION"):
        # One memories table per database; separate collections are separate databases.
        log.info("MEM0__COLLECTION is ignored: memhub keeps one memories table per database")
    if env.get("DB_URL"):  # ARKOS's name for the database also beats the plan's parts
        values["database_url"] = None
    return {
        name: value
        for name, value in values.items()
        if value is not None and not env.get(f"MEMHUB_{name.upper()}")
    }


def build_config_from_env() -> MemhubSettings:
    """Memory settings from ``MEMHUB_*``, then the plan's ``MEM0__*`` and ``OPENAI_API_KEY``.

    Read only when called. ``MEM0__PG_URI`` or ``MEM0__PG_HOST``/``PORT``/``USER``/
    ``PASSWORD`` name the database; ``MEM0__LLM_MODEL`` and ``MEM0__EMBED_MODEL`` select
    OpenAI models with ``OPENAI_API_KEY``; ``MEM0__DIMENSION`` the embedding size.

    Raises:
        ConfigurationError: ``MEM0__PROVIDER`` names a store other than pgvector.
    """
    return MemhubSettings.from_env(**_mem0_values(os.environ))
