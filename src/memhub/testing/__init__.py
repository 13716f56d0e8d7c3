"""Test doubles that ship with memhub, for its own tests and for users' tests of their code.

Names load on first use, so ``python -m memhub.testing.openai_server`` runs that module once.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memhub.testing.openai_server import (
        DelayedReply,
        HTTPErrorReply,
        RawReply,
        RecordedRequest,
        Reply,
        ScriptedOpenAIServer,
        deterministic_embedding,
        tool_call,
    )

__all__ = [
    "DelayedReply",
    "HTTPErrorReply",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAIServer",
    "deterministic_embedding",
    "tool_call",
]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'memhub.testing' has no attribute {name!r}")
    value = getattr(import_module("memhub.testing.openai_server"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
