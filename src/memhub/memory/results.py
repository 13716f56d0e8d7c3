"""Mem0-shaped result dictionaries, typed, so code written for Mem0 reads them unchanged."""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from memhub.store.records import HistoryEvent, MemoryRecord, PassageHit

__all__ = ["HistoryItem", "MemoryItem", "PassageItem", "history_item", "memory_item"]


class PassageItem(TypedDict):
    """Which part of a long memory a search result returns: characters ``[start, end)`` of
    the whole text, ``length`` characters long (``get(id)`` returns it whole)."""

    start: int
    end: int
    length: int


class MemoryItem(TypedDict):
    """One memory as Mem0 returns it, plus memhub's validity interval and ``kind``.

    ``kind`` is ``"episode"`` (a turn as it was said; it has a ``role``) or ``"fact"``
    (what an LLM extracted, or a procedural summary; no role).
    """

    id: str
    memory: str
    kind: str
    hash: str
    metadata: dict[str, Any]
    created_at: str
    updated_at: str | None
    valid_from: str
    valid_to: str | None
    score: NotRequired[float]
    user_id: NotRequired[str]
    agent_id: NotRequired[str]
    run_id: NotRequired[str]
    memory_type: NotRequired[str]
    superseded_by: NotRequired[str]
    role: NotRequired[str]
    passage: NotRequired[PassageItem]


class HistoryItem(TypedDict):
    """One change of a memory, as Mem0's ``history()`` lists it."""

    id: str
    memory_id: str
    event: str
    old_memory: str | None
    new_memory: str | None
    actor: str | None
    turn_ids: list[int]
    created_at: str
    is_deleted: bool
    # memhub's: the links an event made (``superseded_by``, ``previous_version``, ``retired``)
    # and a RETIRE's ``reason``
    metadata: dict[str, Any]


def memory_item(
    record: MemoryRecord, score: float | None = None, passage: PassageHit | None = None
) -> MemoryItem:
    """``record`` as Mem0 returns it; with ``passage`` (a search hit on a memory longer than
    the embedder's window), ``memory`` is that passage and ``passage`` says where it is."""
    item = MemoryItem(
        id=str(record.id),
        memory=record.memory if passage is None else record.memory[passage.start : passage.end],
        kind=record.kind,
        hash=record.hash,
        metadata=dict(record.metadata),
        created_at=record.created_at.isoformat(),
        updated_at=None if record.updated_at is None else record.updated_at.isoformat(),
        valid_from=record.valid_from.isoformat(),
        valid_to=None if record.valid_to is None else record.valid_to.isoformat(),
    )
    if score is not None:
        item["score"] = round(score, 6)
    if record.scope.user_id is not None:
        item["user_id"] = record.scope.user_id
    if record.scope.agent_id is not None:
        item["agent_id"] = record.scope.agent_id
    if record.scope.run_id is not None:
        item["run_id"] = record.scope.run_id
    if record.memory_type is not None:
        item["memory_type"] = record.memory_type
    if record.superseded_by is not None:
        item["superseded_by"] = str(record.superseded_by)
    if record.role is not None:  # the column decides (migration 0025 moved older rows' role)
        item["role"] = record.role
    if passage is not None:
        item["passage"] = PassageItem(
            start=passage.start, end=passage.end, length=len(record.memory)
        )
    return item


def history_item(event: HistoryEvent) -> HistoryItem:
    return HistoryItem(
        id=str(event.id),
        memory_id=str(event.memory_id),
        event=event.event,
        old_memory=event.old_memory,
        new_memory=event.new_memory,
        actor=event.actor,
        turn_ids=list(event.turn_ids),
        created_at=event.created_at.isoformat(),
        is_deleted=event.event == "DELETE",
        metadata=dict(event.metadata),
    )
