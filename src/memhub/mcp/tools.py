"""The MCP tools: thin, user-scoped calls into one shared :class:`AsyncMemory`.

Every tool acts inside one user's scope, by-id tools included, so a client that knows
another user's memory id still cannot read or delete it. memhub's typed errors become tool
errors whose message the model can act on; anything else is logged and reported generically.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from memhub.errors import MemhubError, MemoryNotFound, StoreUnavailable
from memhub.mcp._sdk import Context, ToolError
from memhub.mcp.config import MCPConfig
from memhub.memory import AsyncMemory

__all__ = [
    "TOOLS",
    "ChatMessage",
    "ServerState",
    "add_memory",
    "delete_memory",
    "get_memory_history",
    "list_memories",
    "search_memories",
]

log = logging.getLogger("memhub.mcp")


@dataclass
class ServerState:
    """What the server's lifespan holds: one memory for the server's life, and its options."""

    memory: AsyncMemory
    config: MCPConfig


class ChatMessage(BaseModel):
    """One message of a conversation to remember."""

    role: Literal["user", "assistant", "system"] = "user"
    content: str


UserId = Annotated[
    str | None,
    Field(description="Whose memories; may be omitted when the server has a default user."),
]
MemoryId = Annotated[str, Field(description="The memory's id, as search or list returned it.")]
Ctx = Context[ServerState, Any]


def _state(ctx: Ctx) -> ServerState:
    return ctx.request_context.lifespan_context


def _user(state: ServerState, user_id: str | None) -> str:
    chosen = user_id if user_id is not None else state.config.default_user_id
    if chosen is None:
        raise ToolError(
            "user_id is required: pass the user whose memories to use "
            "(or start the server with MEMHUB_MCP_USER_ID / --user-id)"
        )
    return chosen


@contextlib.contextmanager
def _tool_errors(what: str) -> Iterator[None]:
    try:
        yield
    except MemoryNotFound as exc:
        raise ToolError(str(exc)) from exc
    except StoreUnavailable as exc:
        log.warning("%s: database unavailable: %s", what, exc)
        raise ToolError("the memory database is unavailable; try again later") from exc
    except MemhubError as exc:  # UsageError, ConfigurationError, ProviderError, StoreError
        log.info("%s failed: %s", what, exc)
        raise ToolError(str(exc)) from exc


async def search_memories(
    query: Annotated[str, Field(description="What to look for, in natural language.")],
    ctx: Ctx,
    user_id: UserId = None,
    limit: Annotated[int, Field(description="At most this many memories (1-100).")] = 10,
) -> dict[str, Any]:
    """Search a user's long-term memories by meaning and by words; best matches first."""
    state = _state(ctx)
    user = _user(state, user_id)
    if not 1 <= limit <= 100:
        raise ToolError(f"limit must be between 1 and 100, got {limit}")
    with _tool_errors("search_memories"):
        found = await state.memory.search(query, user_id=user, limit=limit)
    return {"results": found["results"]}


async def add_memory(
    ctx: Ctx,
    text: Annotated[str | None, Field(description="A fact or note to remember.")] = None,
    messages: Annotated[
        list[ChatMessage] | None,
        Field(description="Or: conversation messages to extract memories from."),
    ] = None,
    user_id: UserId = None,
    metadata: Annotated[
        dict[str, Any] | None, Field(description="Optional JSON object stored with the memory.")
    ] = None,
) -> dict[str, Any]:
    """Remember a fact (text) or what a conversation (messages) says about the user."""
    state = _state(ctx)
    user = _user(state, user_id)
    if (text is None) == (messages is None):
        raise ToolError("pass exactly one of text or messages")
    payload: Any = text if messages is None else [m.model_dump() for m in messages]
    with _tool_errors("add_memory"):
        # Read-your-writes for the common case: waits for this call's own turns only, up to
        # add_wait_seconds; the turns are durable whatever happens then.
        added = await state.memory.add(payload, user_id=user, metadata=metadata, wait=True)
    turns = len(added.get("queued_turn_ids", []))
    if added.get("timed_out"):
        return {"status": "queued", "turns": turns, "message": "stored; searchable shortly"}
    return {"status": "stored", "turns": turns, "message": "stored and searchable"}


async def list_memories(
    ctx: Ctx,
    user_id: UserId = None,
    limit: Annotated[int, Field(description="At most this many memories (1-1000).")] = 50,
) -> dict[str, Any]:
    """A user's current memories, newest first."""
    state = _state(ctx)
    user = _user(state, user_id)
    if not 1 <= limit <= 1000:
        raise ToolError(f"limit must be between 1 and 1000, got {limit}")
    with _tool_errors("list_memories"):
        found = await state.memory.get_all(user_id=user, limit=limit)
    return {"results": found["results"]}


async def delete_memory(memory_id: MemoryId, ctx: Ctx, user_id: UserId = None) -> dict[str, Any]:
    """Forget one memory of the user (its history keeps a DELETE event)."""
    state = _state(ctx)
    user = _user(state, user_id)
    with _tool_errors("delete_memory"):
        await state.memory.delete(memory_id, user_id=user)
    return {"deleted": memory_id}


async def get_memory_history(
    memory_id: MemoryId, ctx: Ctx, user_id: UserId = None
) -> dict[str, Any]:
    """Every change of one of the user's memories, oldest first (added, updated, deleted)."""
    state = _state(ctx)
    user = _user(state, user_id)
    with _tool_errors("get_memory_history"):
        events = await state.memory.history(memory_id, user_id=user)
    return {"history": events}


TOOLS = (search_memories, add_memory, list_memories, delete_memory, get_memory_history)
"""The tools every memhub MCP server registers, in this order."""
