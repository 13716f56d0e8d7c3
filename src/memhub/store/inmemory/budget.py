"""The budget of model changes in memory: one user's changes by models (see the PostgreSQL
back end's ``budget`` module; here the store's lock makes a count and its change one step)."""

from __future__ import annotations

from collections.abc import Set
from datetime import datetime

from memhub.store.inmemory.tables import Tables
from memhub.store.records import MODEL_CHANGE_EVENTS, HistoryEvent, is_model_actor

__all__ = ["by_model", "count_model_changes"]


def by_model(event: HistoryEvent) -> bool:
    return event.event in MODEL_CHANGE_EVENTS and is_model_actor(event.actor)


def count_model_changes(
    tables: Tables,
    user_id: str,
    since: datetime,
    session_turns: Set[int] | None = None,
) -> int:
    """``session_turns``: only changes citing one of these turns (a conversation's)."""
    return sum(
        s.user_id == user_id
        and e.created_at >= since
        and by_model(e)
        and "along_with" not in e.metadata
        and (session_turns is None or not session_turns.isdisjoint(e.turn_ids))
        for s, e in tables.history
    )
