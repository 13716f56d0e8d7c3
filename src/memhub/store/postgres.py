"""The PostgreSQL store: every SQL module behind one object, errors translated at its edge."""

from __future__ import annotations

from collections.abc import Sequence

from memhub.config import MemhubSettings
from memhub.store import pg_conversations
from memhub.store.database import Database, acquire_database, release_database
from memhub.store.errors import translate_errors
from memhub.store.records import NewJob, NewTurn, Turn

__all__ = ["PostgresStore"]


class PostgresStore:
    """memhub's data in one PostgreSQL database (with pgvector)."""

    def __init__(self, database: Database) -> None:
        self.database = database
        self._closed = False

    @classmethod
    async def open(cls, settings: MemhubSettings) -> PostgresStore:
        """Connect (starting the embedded server if no URL is set) and migrate."""
        return cls(await acquire_database(settings))

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            await release_database(self.database)

    # -- conversations --------------------------------------------------------------------
    async def append_turns(self, turns: Sequence[NewTurn], job: NewJob | None) -> list[int]:
        with translate_errors("storing conversation turns"):
            async with self.database.connection() as conn:
                return await pg_conversations.append_turns(conn, turns, job)

    async def recent_turns(self, user_id: str, session_id: str, limit: int) -> list[Turn]:
        with translate_errors("reading conversation turns"):
            async with self.database.connection() as conn:
                return await pg_conversations.recent_turns(conn, user_id, session_id, limit)
