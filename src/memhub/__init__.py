"""memhub: a memory layer for LLM agents on PostgreSQL + pgvector.

Short-term memory keeps the conversation turn by turn; long-term memory keeps facts about a
user, found again by meaning and by words. ``import memhub`` loads no database driver or model:
the public names below are resolved on first use.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AIMessage": "memhub.messages",
    "AsyncMemory": "memhub.memory",
    "ConfigurationError": "memhub.errors",
    "Conflict": "memhub.errors",
    "Memory": "memhub.memory",
    "MemhubError": "memhub.errors",
    "MemhubSettings": "memhub.config",
    "MemoryNotFound": "memhub.errors",
    "Message": "memhub.messages",
    "ProviderError": "memhub.errors",
    "ProviderHTTPError": "memhub.errors",
    "ProviderOutputError": "memhub.errors",
    "StoreError": "memhub.errors",
    "StoreUnavailable": "memhub.errors",
    "SystemMessage": "memhub.messages",
    "ToolMessage": "memhub.messages",
    "UsageError": "memhub.errors",
    "UserMessage": "memhub.messages",
}

__all__ = [
    "AIMessage",
    "AsyncMemory",
    "ConfigurationError",
    "Conflict",
    "MemhubError",
    "MemhubSettings",
    "Memory",
    "MemoryNotFound",
    "Message",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderOutputError",
    "StoreError",
    "StoreUnavailable",
    "SystemMessage",
    "ToolMessage",
    "UsageError",
    "UserMessage",
    "__version__",
]

if TYPE_CHECKING:
    from memhub.config import MemhubSettings
    from memhub.errors import (
        ConfigurationError,
        Conflict,
        MemhubError,
        MemoryNotFound,
        ProviderError,
        ProviderHTTPError,
        ProviderOutputError,
        StoreError,
        StoreUnavailable,
        UsageError,
    )
    from memhub.memory import AsyncMemory, Memory
    from memhub.messages import AIMessage, Message, SystemMessage, ToolMessage, UserMessage


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memhub' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
