"""The PostgreSQL store: every SQL module behind one object, errors translated at its edge."""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any
from uuid import UUID

from memhub.config import MemhubSettings
from memhub.filters import Filter
from memhub.store import pg_conversations, pg_jobs, pg_memories
from memhub.store.database import Database, acquire_database, release_database
from memhub.store.errors import translate_errors
from memhub.store.pg_jobs import PgJobBatch
from memhub.store.protocol import Vector
from memhub.store.records import (
    DEFAULT_TEXT_RANKING,
    Candidate,
    HistoryEvent,
    Job,
    Lane,
    MemoryRecord,
    NewJob,
    NewTurn,
    Scope,
    TextRanking,
    Turn,
)

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

    async def ensure_embedding_space(self, model_name: str, dimension: int) -> None:
        with translate_errors("checking the embedding space"):
            async with self.database.connection() as conn:
                await pg_memories.ensure_embedding_space(conn, model_name, dimension)

    # -- conversations --------------------------------------------------------------------
    async def append_turns(self, turns: Sequence[NewTurn], job: NewJob | None) -> list[int]:
        with translate_errors("storing conversation turns"):
            async with self.database.connection() as conn:
                return await pg_conversations.append_turns(conn, turns, job)

    async def recent_turns(self, user_id: str, session_id: str, limit: int) -> list[Turn]:
        with translate_errors("reading conversation turns"):
            async with self.database.connection() as conn:
                return await pg_conversations.recent_turns(conn, user_id, session_id, limit)

    # -- memories -------------------------------------------------------------------------
    async def search_candidates(
        self,
        scope: Scope,
        text_query: str,
        vector: Vector,
        k: int,
        filters: Filter | None,
        include_superseded: bool,
        ranking: TextRanking = DEFAULT_TEXT_RANKING,
    ) -> list[Candidate]:
        with translate_errors("searching memories"):
            async with self.database.connection() as conn:
                return await pg_memories.search_candidates(
                    conn,
                    scope,
                    text_query,
                    vector,
                    k,
                    filters,
                    include_superseded,
                    ranking=ranking,
                )

    async def get_memory(self, scope: Scope | None, memory_id: UUID) -> MemoryRecord | None:
        with translate_errors("reading a memory"):
            async with self.database.connection() as conn:
                return await pg_memories.get_memory(conn, scope, memory_id)

    async def list_memories(
        self, scope: Scope, filters: Filter | None, limit: int, include_superseded: bool
    ) -> list[MemoryRecord]:
        with translate_errors("listing memories"):
            async with self.database.connection() as conn:
                return await pg_memories.list_memories(
                    conn, scope, filters, limit, include_superseded
                )

    async def update_memory(
        self,
        scope: Scope | None,
        memory_id: UUID,
        text: str,
        hash_: str,
        vector: Vector,
        metadata: dict[str, Any] | None,
        actor: str,
    ) -> MemoryRecord:
        with translate_errors("updating a memory"):
            async with self.database.connection() as conn:
                return await pg_memories.update_memory(
                    conn, scope, memory_id, text, hash_, vector, metadata, actor
                )

    async def delete_memory(self, scope: Scope | None, memory_id: UUID, actor: str) -> None:
        with translate_errors("deleting a memory"):
            async with self.database.connection() as conn:
                await pg_memories.delete_memory(conn, scope, memory_id, actor)

    async def delete_all(self, scope: Scope) -> int:
        with translate_errors("deleting a scope"):
            async with self.database.connection() as conn:
                return await pg_memories.delete_all(conn, scope)

    async def history(self, scope: Scope | None, memory_id: UUID) -> list[HistoryEvent]:
        with translate_errors("reading memory history"):
            async with self.database.connection() as conn:
                return await pg_memories.history(conn, scope, memory_id)

    async def reset(self) -> None:
        with translate_errors("resetting the store"):
            async with self.database.connection() as conn:
                await pg_memories.reset(conn)

    # -- jobs -----------------------------------------------------------------------------
    def claim_jobs(self, limit: int, lane: Lane) -> AbstractAsyncContextManager[PgJobBatch]:
        return pg_jobs.claim_jobs(self.database, limit, lane)

    async def fail_jobs(
        self, job_ids: Sequence[int], error: str, retry_at: datetime, max_attempts: int
    ) -> int:
        with translate_errors("recording a failed job"):
            async with self.database.connection() as conn:
                return await pg_jobs.fail_jobs(conn, job_ids, error, retry_at, max_attempts)

    async def pending_jobs(self, scope: Scope | None = None) -> int:
        with translate_errors("counting jobs"):
            async with self.database.connection() as conn:
                return await pg_jobs.pending_jobs(conn, scope)

    async def list_jobs(self, status: str, limit: int) -> list[Job]:
        with translate_errors("listing jobs"):
            async with self.database.connection() as conn:
                return await pg_jobs.list_jobs(conn, status, limit)

    async def requeue_parked(self, job_ids: Sequence[int] | None) -> int:
        with translate_errors("requeueing jobs"):
            async with self.database.connection() as conn:
                return await pg_jobs.requeue_parked(conn, job_ids)

    async def usage_stats(self) -> dict[str, float]:
        with translate_errors("reading LLM usage"):
            async with self.database.connection() as conn:
                return await pg_jobs.usage_stats(conn)
