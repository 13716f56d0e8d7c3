"""Test doubles that ship with memhub, for its own tests and for users' tests of their code.

Names load on first use, so ``python -m memhub.testing.openai_server`` runs that module once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memhub._lazy import lazy_names

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


__getattr__, __dir__ = lazy_names(__name__, _HOMES, listed=__all__)
