"""Test doubles that ship with memhub, for its own tests and for users' tests of their code.

Names load on first use, so ``python -m memhub.testing.openai_server`` runs that module once.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memhub.testing.fake_embedder import FakeEmbedder
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

_HOMES = {
    "FakeEmbedder": "memhub.testing.fake_embedder",
    **dict.fromkeys(
        (
            "DelayedReply",
            "HTTPErrorReply",
            "RawReply",
            "RecordedRequest",
            "Reply",
            "ScriptedOpenAIServer",
            "deterministic_embedding",
            "tool_call",
        ),
        "memhub.testing.openai_server",
    ),
}

__all__ = [
    "DelayedReply",
    "FakeEmbedder",
    "HTTPErrorReply",
    "RawReply",
    "RecordedRequest",
    "Reply",
    "ScriptedOpenAIServer",
    "deterministic_embedding",
    "tool_call",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memhub.testing' has no attribute {name!r}")
    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
