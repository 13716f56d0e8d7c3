"""The storage contract the engine relies on; PostgreSQL and the in-process store implement it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from memhub.store.records import NewJob, NewTurn, Turn

__all__ = ["ConversationStore"]


class ConversationStore(Protocol):
    """Short-term memory: turns in order, per user and session."""

    async def append_turns(self, turns: Sequence[NewTurn], job: NewJob | None) -> list[int]:
        """Store ``turns`` and ``job`` atomically; returns the new turn ids in order."""
        ...

    async def recent_turns(self, user_id: str, session_id: str, limit: int) -> list[Turn]:
        """The last ``limit`` turns of the session, oldest first."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...
