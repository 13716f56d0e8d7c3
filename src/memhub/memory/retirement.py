"""Retire and restore: what a model removes stays recoverable until the user erases it.

A model's removal (consolidation's DELETE, an agent's ``forget``, an MCP client's
``delete_memory``) retires a memory: it leaves every read, its history gains a ``RETIRE``
event naming the actor and the reason, and :meth:`RetirementMethods.restore` brings it back.
The worker purges retired memories after ``MEMHUB_RETIRED_RETENTION_DAYS``; ``delete`` and
``delete_all`` (the user's own erase) remove them at once.
"""

from __future__ import annotations

import uuid
from typing import Any

from memhub.memory.core import MemoryCore, parse_memory_id
from memhub.memory.inputs import check_limit, scope_of
from memhub.memory.results import MemoryItem, memory_item
from memhub.store.records import RetiredMemory

__all__ = ["RetirementMethods", "retired_item"]


def retired_item(retired: RetiredMemory) -> dict[str, Any]:
    """A retired memory as the listing shows it: the memory, when, by whom and why."""
    return {
        **memory_item(retired.record),
        "retired_at": retired.retired_at.isoformat(),
        "retired_by": retired.actor,
        "reason": retired.reason,
        "turn_ids": list(retired.turn_ids),
    }


class RetirementMethods(MemoryCore):
    """``retire``, ``restore`` and the listing of retired memories."""

    async def retire(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        actor: str = "user",
        reason: str = "retired",
    ) -> MemoryItem:
        """Take a current memory out of every read, restorably (history ``RETIRE``).

        What agents' and MCP's ``forget`` do; ``delete`` erases instead.

        Args:
            memory_id: The memory.
            user_id: With agent_id / run_id: only inside this scope.
            agent_id: See user_id.
            run_id: See user_id.
            actor: Who retires it (shown in its history).
            reason: Why (shown in its history and in :meth:`retired`).

        Raises:
            MemoryNotFound: no current memory with that id in the scope.
        """
        scope = self._optional_scope(user_id, agent_id, run_id)
        engine = await self._services()
        record = await engine.store.retire_memory(
            scope, parse_memory_id(memory_id), actor[:100], reason[:500]
        )
        return memory_item(record)

    async def restore(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryItem:
        """Bring back a retired memory, or a superseded one in place of its successor.

        Restoring a superseded fact makes it current again and retires the fact that
        replaced it (the current end of its chain), so one of them is current, not both.

        Raises:
            MemoryNotFound: no such memory in the scope (another scope's id included).
            NotRestorable: it was erased (deleted by the user, or purged), it is current,
                or an equal memory is current now.
        """
        scope = self._optional_scope(user_id, agent_id, run_id)
        engine = await self._services()
        record = await engine.store.restore_memory(scope, parse_memory_id(memory_id), "user")
        return memory_item(record)

    async def retired(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
    ) -> dict[str, list[dict[str, Any]]]:
        """The scope's retired memories, most recently retired first: what ``restore`` takes.

        Each item is a memory plus ``retired_at``, ``retired_by``, ``reason`` and the
        ``turn_ids`` cited for it.
        """
        scope = scope_of(self.limits, user_id, agent_id, run_id)
        limit = check_limit(limit, maximum=self.limits.max_page_size)
        engine = await self._services()
        found = await engine.store.retired_memories(scope, limit)
        return {"results": [retired_item(r) for r in found]}
