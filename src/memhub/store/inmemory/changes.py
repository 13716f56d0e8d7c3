"""The in-process store's model changes, by the rules of :mod:`memhub.store.postgres.changes`."""

from __future__ import annotations

from collections.abc import Mapping
from uuid import UUID

from memhub.errors import MemoryNotFound, NotRestorable
from memhub.store.inmemory.budget import by_model, count_model_changes
from memhub.store.inmemory.retire import restore_memory
from memhub.store.inmemory.rows import in_scope, utc_now
from memhub.store.inmemory.tables import Tables
from memhub.store.records import (
    HistoryEvent,
    MemoryRecord,
    ModelChange,
    Scope,
    Turn,
)

__all__ = [
    "count_model_changes",
    "model_changes",
    "restore",
    "session_turns",
    "undo_model_change",
]


def _undone(tables: Tables, change: HistoryEvent) -> bool:
    return any(
        e.memory_id == change.memory_id
        and e.event == "RESTORE"
        and e.id > change.id
        and (change.event != "UPDATE" or e.metadata.get("undoes") == change.id)
        for _, e in tables.history
    )


def model_changes(
    tables: Tables, scope: Scope, limit: int, before: int | None = None
) -> list[ModelChange]:
    found = [
        e
        for s, e in reversed(tables.history)
        if in_scope(scope, s) and by_model(e) and (before is None or e.id < before)
    ][: max(limit, 0)]
    return [
        ModelChange(
            id=e.id,
            memory_id=e.memory_id,
            event=e.event,
            before=e.old_memory,
            after=e.new_memory,
            actor=e.actor,
            reason=e.metadata.get("reason"),
            turn_ids=e.turn_ids,
            created_at=e.created_at,
            undone=_undone(tables, e),
            successor_id=(
                UUID(e.metadata["superseded_by"]) if "superseded_by" in e.metadata else None
            ),
        )
        for e in found
    ]


def session_turns(
    turns: Mapping[int, Turn], user_id: str, session_id: str | None
) -> set[int] | None:
    """The ids of one conversation's turns (None: no conversation named)."""
    if session_id is None:
        return None
    return {i for i, t in turns.items() if t.user_id == user_id and t.session_id == session_id}


def undo_model_change(
    tables: Tables, scope: Scope | None, change_id: int, actor: str
) -> MemoryRecord:
    change = next((e for s, e in tables.history if e.id == change_id and in_scope(scope, s)), None)
    if change is None:
        raise MemoryNotFound(f"no change {change_id} in this scope")
    if not by_model(change):
        raise NotRestorable(f"change {change_id} is not a model's change; nothing to undo")
    if _undone(tables, change):
        raise NotRestorable(f"change {change_id} is undone already")
    if change.event != "UPDATE":
        return restore_memory(tables, scope, change.memory_id, actor, undoes=change_id)
    return _reword_back(tables, change, actor)


def _reword_back(tables: Tables, change: HistoryEvent, actor: str) -> MemoryRecord:
    memory_id = change.memory_id
    mem = tables.memories.get(memory_id)
    if mem is None:
        raise NotRestorable(f"memory {memory_id} was erased; it cannot be restored")
    version_id = change.metadata.get("previous_version")
    version = None if version_id is None else tables.memories.get(UUID(version_id))
    if mem.valid_to is not None or mem.memory != change.new_memory or version is None:
        raise NotRestorable(
            f"memory {memory_id} changed after change {change.id} (its history shows how);"
            " undo the later changes first"
        )
    vector = version.unit if version.row is None else tables.vectors.get(version.row)
    now = utc_now()
    if not tables.rewrite(mem, version.memory, version.hash, vector, now, None):
        raise NotRestorable(
            f"change {change.id} cannot be undone: the earlier wording is current as another memory"
        )
    tables.change(mem, None, source_turn_ids=version.source_turn_ids)
    tables.detach(version, None)
    tables.event(
        mem, "RESTORE", change.new_memory, version.memory, actor, now, None, (),
        {"undoes": change.id},
    )  # fmt: skip
    return mem.record()


def restore(tables: Tables, scope: Scope | None, memory_id: UUID, actor: str) -> MemoryRecord:
    """``restore``: a version an UPDATE kept is restored as that UPDATE's undo (same id)."""
    version = tables.memories.get(memory_id)
    if version is not None and version.superseded_by is not None and in_scope(scope, version.scope):
        update = next(
            (
                e
                for _, e in reversed(tables.history)
                if e.memory_id == version.superseded_by
                and e.event == "UPDATE"
                and e.metadata.get("previous_version") == str(memory_id)
            ),
            None,
        )
        if update is not None:
            return undo_model_change(tables, scope, update.id, actor)
    return restore_memory(tables, scope, memory_id, actor)
