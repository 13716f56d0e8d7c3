"""Agents with long-term memory: ``Agent``, its runtime, tools and memory helpers.

Not imported by ``import memhub``; ``OpenAIChatModel`` (and so the ``openai`` SDK) is loaded
only when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memhub._lazy import lazy_names
from memhub.agent.agent import Agent, AgentChunk, AgentResult
from memhub.agent.config import AgentMemoryConfig, CallContext, Resolver, build_config_from_env
from memhub.agent.memory_flow import (
    MemoryClient,
    format_conversation,
    inject_memories,
    strip_memories,
)
from memhub.agent.memory_session import MemorySession
from memhub.agent.memory_tools import forget, remember, search_memory
from memhub.agent.model import ChatModel, ModelChunk, ModelResponse, ToolCall, ToolSpec, Usage
from memhub.agent.runtime import Runtime, create_runtime, register_resource
from memhub.agent.tools import Tool, ToolContext, ToolError, tool

if TYPE_CHECKING:
    from memhub.agent.openai_model import OpenAIChatModel

__all__ = [
    "Agent",
    "AgentChunk",
    "AgentMemoryConfig",
    "AgentResult",
    "CallContext",
    "ChatModel",
    "MemoryClient",
    "MemorySession",
    "ModelChunk",
    "ModelResponse",
    "OpenAIChatModel",
    "Resolver",
    "Runtime",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolError",
    "ToolSpec",
    "Usage",
    "build_config_from_env",
    "create_runtime",
    "forget",
    "format_conversation",
    "inject_memories",
    "register_resource",
    "remember",
    "search_memory",
    "strip_memories",
    "tool",
]


__getattr__, __dir__ = lazy_names(__name__, {"OpenAIChatModel": "memhub.agent.openai_model"})
