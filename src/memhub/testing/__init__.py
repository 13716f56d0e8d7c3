"""Test doubles that ship with memhub, for its own tests and for users' tests of their code."""

from __future__ import annotations

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
