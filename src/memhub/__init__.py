"""memhub: a memory layer for LLM agents on PostgreSQL + pgvector.

Short-term memory keeps the conversation turn by turn; long-term memory keeps facts about a
user, found again by meaning and by words. ``import memhub`` loads no database driver or model:
the public names below are resolved on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memhub._lazy import lazy_names

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "AIMessage": "memhub.messages",
    "AsyncMemory": "memhub.memory",
    "ConfigurationError": "memhub.errors",
    "Conflict": "memhub.errors",
    "Embedder": "memhub.embed",
    "FusionConfig": "memhub.engine.fusion",
    "HistoryItem": "memhub.memory.results",
    "Memory": "memhub.memory",
    "MemhubError": "memhub.errors",
    "MemhubSettings": "memhub.config",
    "MemoryItem": "memhub.memory.results",
    "MemoryNotFound": "memhub.errors",
    "Message": "memhub.messages",
    "ModelBudgetSpent": "memhub.errors",
    "NotRestorable": "memhub.errors",
    "PRESETS": "memhub.engine.fusion",
    "ProviderError": "memhub.errors",
    "ProviderHTTPError": "memhub.errors",
    "ProviderOutputError": "memhub.errors",
    "SearchConfig": "memhub.engine.search_config",
    "StatementTimeout": "memhub.errors",
    "StoreError": "memhub.errors",
    "StoreUnavailable": "memhub.errors",
    "SystemMessage": "memhub.messages",
    "ToolMessage": "memhub.messages",
    "UsageError": "memhub.errors",
    "UserMessage": "memhub.messages",
}

__all__ = [
    "PRESETS",
    "AIMessage",
    "AsyncMemory",
    "ConfigurationError",
    "Conflict",
    "Embedder",
    "FusionConfig",
    "HistoryItem",
    "MemhubError",
    "MemhubSettings",
    "Memory",
    "MemoryItem",
    "MemoryNotFound",
    "Message",
    "ModelBudgetSpent",
    "NotRestorable",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderOutputError",
    "SearchConfig",
    "StatementTimeout",
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
    from memhub.embed import Embedder
    from memhub.engine.fusion import PRESETS, FusionConfig
    from memhub.engine.search_config import SearchConfig
    from memhub.errors import (
        ConfigurationError,
        Conflict,
        MemhubError,
        MemoryNotFound,
        ModelBudgetSpent,
        NotRestorable,
        ProviderError,
        ProviderHTTPError,
        ProviderOutputError,
        StatementTimeout,
        StoreError,
        StoreUnavailable,
        UsageError,
    )
    from memhub.memory import AsyncMemory, Memory
    from memhub.memory.results import HistoryItem, MemoryItem
    from memhub.messages import AIMessage, Message, SystemMessage, ToolMessage, UserMessage


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS, listed=__all__)
