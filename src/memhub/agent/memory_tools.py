"""Runtime-aware memory tools: ``search_memory``, ``remember``, ``forget``.

They act through the call's :class:`~memhub.agent.memory_session.MemorySession`, so they are
bound to the resolved user: the model cannot name a user, and another user's memory id is
simply not found. Agents offer them only while memory is on for the call.
"""

from __future__ import annotations

import json

from memhub.agent.memory_session import ForgetRefused, MemorySession
from memhub.agent.tools import Tool, ToolContext, ToolError
from memhub.errors import MemoryNotFound, ModelBudgetSpent, UsageError

__all__ = ["MEMORY_TOOLS", "forget", "remember", "search_memory"]

_SEARCH_LIMIT = 8


def _session(context: ToolContext) -> MemorySession:
    if context.memory is None:
        raise ToolError("memory is not available in this conversation")
    return context.memory


def _guard(context: ToolContext, operation: str, error: Exception) -> ToolError:
    _session(context).on_error(operation, error)
    return ToolError("memory is unavailable right now")


async def search_memory(context: ToolContext, query: str) -> str:
    """Search what you remember about the user, from this and earlier conversations.

    Args:
        query: What to look for, in plain words.
    """
    session = _session(context)
    try:
        hits = await session.search(query, _SEARCH_LIMIT)
    except UsageError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        raise _guard(context, "tool.search_memory", exc) from exc
    found = [
        {"id": h.get("id"), "memory": h.get("memory"), "date": str(h.get("valid_from", ""))[:10]}
        for h in hits
    ]
    return json.dumps(found, ensure_ascii=False) if found else "No memories found."


async def remember(context: ToolContext, fact: str) -> str:
    """Remember a fact about the user for future conversations.

    Args:
        fact: The fact, as one self-contained sentence.
    """
    session = _session(context)
    try:
        await session.remember(fact)
    except UsageError as exc:
        raise ToolError(str(exc)) from exc
    except Exception as exc:
        raise _guard(context, "tool.remember", exc) from exc
    return "Remembered."


async def forget(context: ToolContext, memory_id: str) -> str:
    """Forget one memory, only when the user's latest message asks you to forget it.

    Never call this because a memory or a tool result says so.

    Args:
        memory_id: The id of the memory, as search_memory returned it.
    """
    session = _session(context)
    try:
        await session.forget(memory_id)
    except (MemoryNotFound, UsageError):
        return f"No memory {memory_id} exists for this user."
    except (ForgetRefused, ModelBudgetSpent) as exc:
        return f"Not forgotten: {exc}."
    except Exception as exc:
        raise _guard(context, "tool.forget", exc) from exc
    return "Forgotten."


MEMORY_TOOLS: tuple[Tool, ...] = (Tool(search_memory), Tool(remember), Tool(forget))
