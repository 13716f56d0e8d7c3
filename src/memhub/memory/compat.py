"""Mem0's two call styles in one place: 1.x (``user_id=``, ``limit=``) and 2.x (``filters=``,
``top_k=``), resolved to memhub's scope, filters and limit before any I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any
from uuid import UUID

from memhub.errors import UsageError
from memhub.memory.inputs import parse_timestamp
from memhub.messages import Message
from memhub.store.records import JobPayload, NewJob

__all__ = [
    "QUEUED_MESSAGE",
    "as_of_filters",
    "pick_limit",
    "queued_answer",
    "queued_facts",
    "queued_memories",
    "split_scope",
]

_SCOPE_KEYS = ("user_id", "agent_id", "run_id")
QUEUED_MESSAGE = "Memory processing has been queued for background execution"


def split_scope(
    user_id: str | None,
    agent_id: str | None,
    run_id: str | None,
    filters: Mapping[str, Any] | None,
) -> tuple[dict[str, str | None], dict[str, Any] | None]:
    """The scope ids (from the arguments, or Mem0 2.x's ``filters``) and the other filters.

    A scope id given both ways must agree; one given in ``filters`` as anything but a plain
    value (an operator, a list) is refused, because a scope is one owner, never a query.
    """
    ids: dict[str, str | None] = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
    if filters is None:
        return ids, None
    if not isinstance(filters, Mapping):
        raise UsageError(f"filters must be a dict, got {type(filters).__name__}")
    rest = dict(filters)
    for key in _SCOPE_KEYS:
        if key not in rest:
            continue
        value = rest.pop(key)
        if not isinstance(value, str):
            raise UsageError(f"filters[{key!r}] must be one id (a string), got {value!r}")
        if ids[key] is not None and ids[key] != value:
            raise UsageError(f"{key} given twice with different values: {ids[key]!r}, {value!r}")
        ids[key] = value
    return ids, rest or None


def pick_limit(limit: object, top_k: object, default: int) -> object:
    """``top_k`` (Mem0 2.x) or ``limit`` (1.x); both at once must agree."""
    if limit is not None and top_k is not None and limit != top_k:
        raise UsageError(f"limit={limit!r} and top_k={top_k!r} disagree; pass one")
    if top_k is not None:
        return top_k
    return default if limit is None else limit


def as_of_filters(as_of: datetime | str | float, filters: dict[str, Any] | None) -> dict[str, Any]:
    """``filters`` narrowed to memories valid at ``as_of``: from ``valid_from`` to ``valid_to``.

    A superseded fact was true from when it was said until its successor was said; a fact
    still current has no end.
    """
    try:
        moment = parse_timestamp(as_of)
    except UsageError:
        moment = None
    if moment is None:
        raise UsageError(
            f"as_of must be a datetime, an ISO 8601 string or a Unix time, got {as_of!r}"
        )
    valid = [
        {"valid_from": {"lte": moment}},
        {"OR": [{"valid_to": None}, {"valid_to": {"gt": moment}}]},
    ]
    return {"AND": [*valid, filters]} if filters else {"AND": valid}


def queued_memories(
    memory_ids: Sequence[UUID], messages: Sequence[Message], turn_ids: list[int]
) -> dict[str, Any]:
    """``add()``'s answer when each message becomes one memory: its id is already final."""
    results = [
        {
            "id": str(memory_id),
            "memory": message.content,
            "event": "ADD",
            "actor_id": getattr(message, "name", None),
            "role": message.role,
            "status": "PENDING",
        }
        for memory_id, message in zip(memory_ids, messages, strict=True)
        if message.content.strip()  # the worker skips empty turns
    ]
    return {"results": results, "status": "PENDING", "queued_turn_ids": turn_ids}


def queued_facts(event_id: str, turn_ids: list[int]) -> dict[str, Any]:
    """``add()``'s answer when an LLM will extract facts later: Mem0's asynchronous mode."""
    event = {"message": QUEUED_MESSAGE, "status": "PENDING", "event_id": event_id}
    return {"results": [event], "status": "PENDING", "queued_turn_ids": turn_ids}


def queued_answer(
    job: NewJob | None,
    one_per_turn: bool,
    payload: JobPayload,
    memory_ids: Sequence[UUID],
    messages: Sequence[Message],
    turn_ids: list[int],
) -> dict[str, Any]:
    """``add()``'s answer without ``wait``: the memories stored, or the facts to come."""
    if job is None:
        return {"results": [], "status": "DONE", "queued_turn_ids": turn_ids}
    if not one_per_turn:
        return queued_facts(str(payload.event_id), turn_ids)
    return queued_memories(memory_ids, messages, turn_ids)
