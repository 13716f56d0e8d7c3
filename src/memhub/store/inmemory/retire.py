"""The in-process store's retired memories, by the rules of :mod:`memhub.store.postgres.retire`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from memhub.errors import MemoryNotFound, ModelBudgetSpent, NotRestorable
from memhub.store.inmemory.budget import count_model_changes
from memhub.store.inmemory.rows import MemoryRow, in_scope, utc_now
from memhub.store.inmemory.tables import Tables, Undo
from memhub.store.records import MemoryRecord, ModelBudget, RetiredMemory, Scope

__all__ = ["purge_retired", "restore_memory", "retire", "retire_memory", "retired_memories"]


def retire(
    tables: Tables,
    mem: MemoryRow,
    actor: str,
    reason: str,
    turn_ids: Sequence[int],
    now: datetime,
    undo: Undo,
    metadata: dict[str, str] | None = None,
) -> None:
    """Close and mark a current memory, with its RETIRE event."""
    tables.change(mem, undo, valid_to=now, retired_at=now, updated_at=now)
    tables.event(
        mem, "RETIRE", mem.memory, None, actor, now, undo, turn_ids,
        {"reason": reason, **(metadata or {})},
    )  # fmt: skip


def retire_memory(
    tables: Tables,
    scope: Scope | None,
    memory_id: UUID,
    actor: str,
    reason: str,
    turn_ids: Sequence[int],
    budget: ModelBudget | None = None,
) -> MemoryRecord:
    mem = tables.memories.get(memory_id)
    if mem is None or not in_scope(scope, mem.scope) or mem.valid_to is not None:
        raise MemoryNotFound(f"no current memory {memory_id} in this scope")
    record = mem.record()
    user_id = record.scope.user_id
    if budget is not None and user_id is not None:
        spent = count_model_changes(tables, user_id, budget.since)
        if spent >= budget.limit:
            raise ModelBudgetSpent(budget.refusal(spent))
    retire(tables, mem, actor, reason, turn_ids, utc_now(), None)
    return record


def restore_memory(
    tables: Tables, scope: Scope | None, memory_id: UUID, actor: str, undoes: int | None = None
) -> MemoryRecord:
    mem = tables.memories.get(memory_id)
    if mem is None or not in_scope(scope, mem.scope):
        if any(e.memory_id == memory_id and in_scope(scope, s) for s, e in tables.history):
            raise NotRestorable(
                f"memory {memory_id} was erased (deleted or purged); it cannot be restored"
            )
        raise MemoryNotFound(f"no memory {memory_id} in this scope")
    if mem.retired_at is None and mem.superseded_by is None:
        raise NotRestorable(
            f"memory {memory_id} is current; only a retired or superseded memory can be restored"
        )
    now = utc_now()
    meta: dict[str, str | int] = {} if undoes is None else {"undoes": undoes}
    replaced = None
    if mem.retired_at is None and mem.superseded_by is not None:
        replaced = _current_successor(tables, mem.superseded_by)
    holder = tables.holder(mem.key)
    if holder is not None and (replaced is None or holder != replaced.id):
        raise NotRestorable(f"memory {memory_id} cannot be restored: an equal memory is current")
    if replaced is not None:
        retire(tables, replaced, actor, f"restored {memory_id}", (), now, None)
        meta["retired"] = str(replaced.id)
    tables.change(mem, None, valid_to=None, retired_at=None, superseded_by=None, updated_at=now)
    tables.event(mem, "RESTORE", None, mem.memory, actor, now, None, (), meta)
    return mem.record()


def _current_successor(tables: Tables, first: UUID) -> MemoryRow | None:
    seen: set[UUID] = set()
    at: UUID | None = first
    while at is not None and at not in seen:
        seen.add(at)
        mem = tables.memories.get(at)
        if mem is None:
            return None
        if mem.valid_to is None:
            return mem
        at = mem.superseded_by
    return None


def retired_memories(tables: Tables, scope: Scope, limit: int) -> list[RetiredMemory]:
    rows = [m for m in tables.memories.values() if m.retired_at and in_scope(scope, m.scope)]
    rows.sort(key=lambda m: m.id)
    rows.sort(key=lambda m: m.retired_at or now_floor(), reverse=True)
    found = []
    for mem in rows[: max(limit, 0)]:
        events = [e for _, e in tables.history if e.memory_id == mem.id and e.event == "RETIRE"]
        last = events[-1] if events else None
        assert mem.retired_at is not None
        found.append(
            RetiredMemory(
                record=mem.record(),
                retired_at=mem.retired_at,
                actor=None if last is None else last.actor,
                reason=None if last is None else last.metadata.get("reason"),
                turn_ids=() if last is None else last.turn_ids,
            )
        )
    return found


def now_floor() -> datetime:
    return datetime.min.replace(tzinfo=utc_now().tzinfo)


def purge_retired(tables: Tables, before: datetime, limit: int) -> int:
    due = sorted(
        (m for m in tables.memories.values() if m.retired_at is not None and m.retired_at < before),
        key=lambda m: m.retired_at or now_floor(),
    )[: max(limit, 0)]
    now = utc_now()
    for mem in due:
        tables.detach(mem, None)
        tables.event(mem, "PURGE", None, None, "retention", now, None)
    return len(due)
