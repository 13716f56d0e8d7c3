"""Retire and restore: what a model removes stays recoverable until the user erases it.

A model's removal (consolidation's DELETE, an agent's ``forget``, an MCP client's
``delete_memory``) retires a memory: it leaves every read, its history gains a ``RETIRE``
event naming the actor and the reason, and :meth:`RetirementMethods.restore` brings it back.
The worker purges retired memories after ``MEMHUB_RETIRED_RETENTION_DAYS``; ``delete`` and
``delete_all`` (the user's own erase) remove them at once.

Every change a model made (retire, supersede, reword) is listed by
:meth:`RetirementMethods.model_changes` and undone by :meth:`RetirementMethods.undo_change`;
models may change at most ``MEMHUB_MODEL_CHANGES_PER_DAY`` memories of one user in 24 hours.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from memhub.errors import ModelBudgetSpent, UsageError
from memhub.memory.core import MemoryCore, parse_memory_id
from memhub.memory.inputs import check_limit, scope_of
from memhub.memory.results import MemoryItem, memory_item
from memhub.store.records import ModelBudget, ModelChange, RetiredMemory, is_model_actor
from memhub.telemetry import record_guard

__all__ = ["RetirementMethods", "change_item", "retired_item"]

log = logging.getLogger("memhub.guard")


def retired_item(retired: RetiredMemory) -> dict[str, Any]:
    """A retired memory as the listing shows it: the memory, when, by whom and why."""
    return {
        **memory_item(retired.record),
        "retired_at": retired.retired_at.isoformat(),
        "retired_by": retired.actor,
        "reason": retired.reason,
        "turn_ids": list(retired.turn_ids),
    }


def change_item(change: ModelChange) -> dict[str, Any]:
    """A model change as the list shows it: what, by whom, why, when, and before / after."""
    return {
        "id": change.id,
        "memory_id": str(change.memory_id),
        "event": change.event,
        "before": change.before,
        "after": change.after,
        "actor": change.actor,
        "reason": change.reason,
        "turn_ids": list(change.turn_ids),
        "created_at": change.created_at.isoformat(),
        "undone": change.undone,
        "successor_id": None if change.successor_id is None else str(change.successor_id),
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
            ModelBudgetSpent: ``actor`` is a model (not ``"user"``) and models already changed
                ``MEMHUB_MODEL_CHANGES_PER_DAY`` memories of the user in 24 hours.
        """
        scope = self._optional_scope(user_id, agent_id, run_id)
        services = await self._services()
        budget = None
        if is_model_actor(actor):  # the memory's user's budget, counted where it is spent
            budget = ModelBudget.of_the_last_day(self.settings.model_changes_per_day)
        try:
            record = await services.store.retire_memory(
                scope, parse_memory_id(memory_id), actor[:100], reason[:500], budget=budget
            )
        except ModelBudgetSpent as exc:
            log.warning("retire of %s by %s refused: %s", memory_id, actor, exc)
            record_guard(f"{actor.split(':')[0]}.budget", "over_budget")
            raise
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
        Restoring the earlier wording a model's UPDATE kept rewords the memory back under its
        own id (as :meth:`undo_change` of that UPDATE does).

        Raises:
            MemoryNotFound: no such memory in the scope (another scope's id included).
            NotRestorable: it was erased (deleted by the user, or purged), it is current,
                or an equal memory is current now.
        """
        scope = self._optional_scope(user_id, agent_id, run_id)
        services = await self._services()
        record = await services.store.restore_memory(scope, parse_memory_id(memory_id), "user")
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
        services = await self._services()
        found = await services.store.retired_memories(scope, limit)
        return {"results": [retired_item(r) for r in found]}

    async def model_changes(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        before: int | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """Every change a model made to the scope's memories, newest first.

        Retires, supersessions and rewordings (UPDATE) by consolidation, agents' ``forget``,
        MCP's ``delete_memory`` and LangGraph's ``delete``; a person's own changes are not
        listed. Each item: ``id`` (what :meth:`undo_change` takes), ``memory_id``, ``event``
        (RETIRE, SUPERSEDE or UPDATE), ``before`` and ``after`` (the text), ``actor``,
        ``reason``, ``turn_ids`` (the turns cited), ``created_at``, ``undone`` and
        ``successor_id`` (a SUPERSEDE's new fact).

        Args:
            user_id: With agent_id / run_id: whose changes (at least one is required).
            agent_id: See user_id.
            run_id: See user_id.
            limit: At most this many (up to ``MEMHUB_MAX_PAGE_SIZE``).
            before: Only changes with a smaller ``id``: the next page after the last item.
        """
        scope = scope_of(self.limits, user_id, agent_id, run_id)
        limit = check_limit(limit, maximum=self.limits.max_page_size)
        if before is not None and (isinstance(before, bool) or not isinstance(before, int)):
            raise UsageError(f"before must be a change id (an integer), got {before!r}")
        services = await self._services()
        found = await services.store.model_changes(scope, limit, before)
        return {"results": [change_item(c) for c in found]}

    async def undo_change(
        self,
        change_id: int,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryItem:
        """Undo one model change listed by :meth:`model_changes`, under the same memory id.

        A retire is restored; a supersession reopens the old fact and retires its successor;
        a rewording (UPDATE) gets its earlier text back. The memory's history gains a
        ``RESTORE`` event whose metadata names the change (``undoes``).

        Raises:
            MemoryNotFound: no such change in the scope (another scope's included).
            NotRestorable: not a model's change, undone already, the memory was erased or
                changed again since (undo the later change first), or an equal memory is
                current now.
        """
        if isinstance(change_id, bool) or not isinstance(change_id, int):
            raise UsageError(f"change_id must be an integer, got {change_id!r}")
        scope = self._optional_scope(user_id, agent_id, run_id)
        services = await self._services()
        record = await services.store.undo_model_change(scope, change_id, "user")
        return memory_item(record)
