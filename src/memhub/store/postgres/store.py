"""The PostgreSQL store: every SQL module behind one object, errors translated at its edge.

It meets :class:`Store` and, beside it, :class:`OpsStore` (operator views) and
:class:`BulkStore` (``memhub import`` and ``memhub reembed``), which ``memory://`` lacks.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from memhub.config import MemhubSettings
from memhub.filters import Filter
from memhub.store.api_keys import ApiKey
from memhub.store.postgres import (
    bulk_import as pg_import,
)
from memhub.store.postgres import (
    changes as pg_changes,
)
from memhub.store.postgres import (
    consolidation as pg_consolidation,
)
from memhub.store.postgres import (
    conversations as pg_conversations,
)
from memhub.store.postgres import (
    erase as pg_erase,
)
from memhub.store.postgres import (
    jobs as pg_jobs,
)
from memhub.store.postgres import (
    key_listener as pg_key_listener,
)
from memhub.store.postgres import (
    keys as pg_keys,
)
from memhub.store.postgres import (
    memories as pg_memories,
)
from memhub.store.postgres import (
    ops as pg_ops,
)
from memhub.store.postgres import (
    reembed as pg_reembed,
)
from memhub.store.postgres import (
    retire as pg_retire,
)
from memhub.store.postgres import (
    search as pg_search,
)
from memhub.store.postgres import (
    space as pg_space,
)
from memhub.store.postgres import (
    users as pg_users,
)
from memhub.store.postgres.apply import PgJobBatch, apply_jobs
from memhub.store.postgres.database import AsyncConn, Database, acquire_database, release_database
from memhub.store.postgres.errors import translate_errors
from memhub.store.postgres.replicas import ReadRouter
from memhub.store.protocol import Embed, Vector
from memhub.store.records import (
    DEFAULT_TEXT_RANKING,
    DailyUsage,
    EmbeddingSpace,
    HistoryEvent,
    IdempotencyKey,
    ImportBatch,
    ImportCursor,
    Job,
    Lane,
    Lease,
    MemoryRecord,
    ModelBudget,
    ModelChange,
    NewJob,
    NewTurn,
    Passage,
    RawCandidate,
    RetiredMemory,
    Scope,
    ScopeRow,
    TextHits,
    TextRanking,
    TextToEmbed,
    Turn,
    UserRow,
)

__all__ = ["PostgresStore"]

T = TypeVar("T")


@asynccontextmanager
async def _search_settings(conn: AsyncConn, pooled: bool) -> AsyncIterator[None]:
    # Behind PgBouncer no session setting survives, so the search's own transaction sets
    # what database._configure_connection sets per connection otherwise.
    if not pooled:
        yield
        return
    async with conn.transaction():
        await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        yield


class PostgresStore:
    """memhub's data in one PostgreSQL database (with pgvector)."""

    def __init__(self, database: Database, settings: MemhubSettings | None = None) -> None:
        self.database = database
        self._closed = False
        self._cursors: dict[str, str | None] = {}  # per lane: the owner the last claim ended at
        settings = settings or database.settings
        replicas = (settings.read_database_url or "").split()
        self.reads = ReadRouter(database, settings, replicas) if replicas else None

    @classmethod
    async def open(cls, settings: MemhubSettings) -> PostgresStore:
        """Connect (starting the embedded server if no URL is set) and migrate."""
        return cls(await acquire_database(settings), settings)

    @asynccontextmanager
    async def _connect(self, action: str) -> AsyncIterator[AsyncConn]:
        """A pooled connection whose failures surface as memhub errors naming ``action``."""
        with translate_errors(action):
            async with self.database.connection() as conn:
                yield conn

    async def _read(
        self, action: str, scope: Scope | None, work: Callable[[AsyncConn], Awaitable[T]]
    ) -> T:
        """``work`` on a replica when replicas are configured (read-your-writes), else ours."""
        with translate_errors(action):
            if self.reads is not None:
                return await self.reads.run(scope, work)
            async with self.database.connection() as conn:
                return await work(conn)

    async def _wrote(self, conn: AsyncConn, scope: Scope | None) -> None:
        if self.reads is not None:
            await self.reads.note_write(conn, scope)

    async def aclose(self) -> None:
        if not self._closed:
            self._closed = True
            if self.reads is not None:
                await self.reads.close()
            await release_database(self.database)

    async def ensure_embedding_space(self, model_name: str, dimension: int) -> None:
        async with self._connect("checking the embedding space") as conn:
            space = self.database.settings.space
            await pg_space.ensure_embedding_space(conn, model_name, dimension, space)

    # -- conversations --------------------------------------------------------------------
    async def append_turns(
        self,
        turns: Sequence[NewTurn],
        job: NewJob | None,
        idempotency: IdempotencyKey | None = None,
    ) -> list[int]:
        async with self._connect("storing conversation turns") as conn:
            ids = await pg_conversations.append_turns(conn, turns, job, idempotency)
            if turns:
                first = turns[0]
                await self._wrote(conn, Scope(user_id=first.user_id, agent_id=first.agent_id))
            return ids

    async def recent_turns(self, user_id: str, session_id: str, limit: int) -> list[Turn]:
        async with self._connect("reading conversation turns") as conn:
            return await pg_conversations.recent_turns(conn, user_id, session_id, limit)

    # -- memories -------------------------------------------------------------------------
    async def text_hits(
        self,
        scope: Scope,
        text_query: str,
        k: int,
        filters: Filter | None,
        include_superseded: bool,
        ranking: TextRanking = DEFAULT_TEXT_RANKING,
    ) -> TextHits:
        # On its own pooled connection: it runs while the query is still being embedded.
        def text(conn: AsyncConn) -> Awaitable[TextHits]:
            return pg_search.text_hits(
                conn, scope, text_query, k, filters, include_superseded, ranking
            )

        return await self._read("searching memories", scope, text)

    async def vector_candidates(
        self,
        scope: Scope,
        vector: Vector,
        k: int,
        filters: Filter | None,
        include_superseded: bool,
        hits: TextHits,
        ranking: TextRanking = DEFAULT_TEXT_RANKING,
    ) -> list[RawCandidate]:
        pooled = self.database.settings.pgbouncer

        async def search(conn: AsyncConn) -> list[RawCandidate]:
            async with _search_settings(conn, pooled):
                return await pg_search.vector_candidates(
                    conn, scope, vector, k, filters, include_superseded, hits, ranking
                )

        return await self._read("searching memories", scope, search)

    async def get_memory(self, scope: Scope | None, memory_id: UUID) -> MemoryRecord | None:
        return await self._read(
            "reading a memory", scope, lambda conn: pg_memories.get_memory(conn, scope, memory_id)
        )

    async def texts_to_embed(self, scope: Scope, ids: Sequence[UUID]) -> list[TextToEmbed]:
        async with self._connect("reading memories to embed") as conn:
            return await pg_memories.texts_to_embed(conn, scope, ids)

    async def memories_for_turns(self, scope: Scope, turn_ids: Sequence[int]) -> list[MemoryRecord]:
        async with self._connect("reading memories of turns") as conn:
            return await pg_memories.memories_for_turns(conn, scope, turn_ids)

    async def list_memories(
        self, scope: Scope, filters: Filter | None, limit: int, include_superseded: bool
    ) -> list[MemoryRecord]:
        return await self._read(
            "listing memories",
            scope,
            lambda conn: pg_memories.list_memories(conn, scope, filters, limit, include_superseded),
        )

    async def update_memory(
        self,
        scope: Scope | None,
        memory_id: UUID,
        text: str | None,
        hash_: str | None,
        vector: Vector | None,
        metadata: dict[str, Any] | None,
        actor: str,
        *,
        merge_metadata: bool = False,
        passages: Sequence[Passage] = (),
    ) -> MemoryRecord:
        async with self._connect("updating a memory") as conn:
            updated = await pg_memories.update_memory(
                conn,
                scope,
                memory_id,
                text,
                hash_,
                vector,
                metadata,
                actor,
                merge_metadata,
                passages,
            )
            await self._wrote(conn, scope)
            return updated

    async def delete_memory(self, scope: Scope | None, memory_id: UUID, actor: str) -> None:
        async with self._connect("deleting a memory") as conn:
            await pg_memories.delete_memory(conn, scope, memory_id, actor)
            await self._wrote(conn, scope)

    async def set_expiry(
        self, scope: Scope | None, memory_ids: Sequence[UUID], expires_at: datetime | None
    ) -> None:
        async with self._connect("setting when memories expire") as conn:
            await pg_memories.set_expiry(conn, scope, memory_ids, expires_at)
            await self._wrote(conn, scope)

    async def purge_expired(self, limit: int) -> int:
        async with self._connect("purging expired memories") as conn:
            return await pg_memories.purge_expired(conn, limit)

    async def delete_all(self, scope: Scope) -> int:
        async with self._connect("deleting a scope") as conn:
            if self.database.space_schema is None:  # the default space erases every space
                deleted = await pg_erase.delete_all_spaces(conn, scope)
            else:
                deleted = await pg_erase.delete_all(conn, scope)
            await self._wrote(conn, scope)
            return deleted

    async def history(self, scope: Scope | None, memory_id: UUID) -> list[HistoryEvent]:
        async with self._connect("reading memory history") as conn:
            return await pg_memories.history(conn, scope, memory_id)

    async def retire_memory(
        self,
        scope: Scope | None,
        memory_id: UUID,
        actor: str,
        reason: str,
        turn_ids: Sequence[int] = (),
        budget: ModelBudget | None = None,
    ) -> MemoryRecord:
        async with self._connect("retiring a memory") as conn:
            retired = await pg_retire.retire_memory(
                conn, scope, memory_id, actor, reason, turn_ids, budget
            )
            await self._wrote(conn, scope)
            return retired

    async def restore_memory(
        self, scope: Scope | None, memory_id: UUID, actor: str
    ) -> MemoryRecord:
        async with self._connect("restoring a memory") as conn:
            restored = await pg_changes.restore(conn, scope, memory_id, actor)
            await self._wrote(conn, scope)
            return restored

    async def model_changes(
        self, scope: Scope, limit: int, before: int | None = None
    ) -> list[ModelChange]:
        return await self._read(
            "reading model changes",
            scope,
            lambda conn: pg_changes.model_changes(conn, scope, limit, before),
        )

    async def count_model_changes(
        self, user_id: str, since: datetime, session_id: str | None = None
    ) -> int:
        async with self._connect("counting model changes") as conn:
            return await pg_changes.count_model_changes(conn, user_id, since, session_id)

    async def undo_model_change(
        self, scope: Scope | None, change_id: int, actor: str
    ) -> MemoryRecord:
        async with self._connect("undoing a model change") as conn:
            restored = await pg_changes.undo_model_change(conn, scope, change_id, actor)
            await self._wrote(conn, scope)
            return restored

    async def retired_memories(self, scope: Scope, limit: int) -> list[RetiredMemory]:
        return await self._read(
            "reading retired memories",
            scope,
            lambda conn: pg_retire.retired_memories(conn, scope, limit),
        )

    async def purge_retired(self, before: datetime, limit: int) -> int:
        async with self._connect("purging retired memories") as conn:
            return await pg_retire.purge_retired(conn, before, limit)

    async def reset(self) -> None:
        async with self._connect("resetting the store") as conn:
            await pg_memories.reset(conn)
            await self._wrote(conn, None)

    # -- jobs -----------------------------------------------------------------------------
    async def claim_jobs(
        self,
        lane: Lane,
        limit: int,
        lease: Lease,
        *,
        turns: int | None = None,
        owners: Sequence[str] | None = None,
    ) -> list[Job]:
        after = None if owners is not None else self._cursors.get(lane.name)
        jobs, cursor = await pg_jobs.claim_jobs(
            self.database, lane, limit, lease, after, turns=turns, only=owners
        )
        if owners is None:
            self._cursors[lane.name] = cursor
        return jobs

    def apply_jobs(
        self, jobs: Sequence[Job], owner: str, read_set: Mapping[UUID, str]
    ) -> AbstractAsyncContextManager[PgJobBatch]:
        return apply_jobs(self.database, jobs, owner, read_set)

    async def release_jobs(
        self,
        job_ids: Sequence[int],
        owner: str,
        error: str | None,
        retry_at: datetime,
        max_attempts: int,
    ) -> int:
        async with self._connect("releasing jobs") as conn:
            return await pg_jobs.release_jobs(conn, job_ids, owner, error, retry_at, max_attempts)

    async def extend_leases(self, job_ids: Sequence[int], owner: str, seconds: float) -> int:
        async with self._connect("extending job leases") as conn:
            return await pg_jobs.extend_leases(conn, job_ids, owner, seconds)

    async def leased_job_ids(self, owner: str) -> list[int]:
        async with self._connect("reading job leases") as conn:
            return await pg_jobs.leased_job_ids(conn, owner)

    async def turns_by_ids(self, ids: Sequence[int]) -> list[Turn]:
        async with self._connect("reading conversation turns") as conn:
            return await pg_conversations.turns_by_ids(conn, ids)

    async def pending_turn_jobs(
        self, scope: Scope, turn_ids: Sequence[int], kinds: Sequence[str] | None
    ) -> int:
        async with self._connect("counting jobs") as conn:
            pending = await pg_jobs.pending_turn_jobs(conn, scope, turn_ids, kinds)
            if pending == 0:  # a wait for these turns is over: the scope's reads must see them
                await self._wrote(conn, scope)
            return pending

    async def pending_jobs(self, scope: Scope | None = None) -> int:
        async with self._connect("counting jobs") as conn:
            pending = await pg_jobs.pending_jobs(conn, scope)
            if pending == 0:  # a wait for this scope's jobs is over: its reads must see them
                await self._wrote(conn, scope)
            return pending

    async def job_counts(self) -> dict[str, int]:
        async with self._connect("counting jobs") as conn:
            return await pg_jobs.job_counts(conn)

    async def list_jobs(self, status: str, limit: int) -> list[Job]:
        async with self._connect("listing jobs") as conn:
            return await pg_jobs.list_jobs(conn, status, limit)

    async def requeue_parked(self, job_ids: Sequence[int] | None) -> int:
        async with self._connect("requeueing jobs") as conn:
            return await pg_jobs.requeue_parked(conn, job_ids)

    async def usage_stats(self) -> dict[str, float]:
        async with self._connect("reading LLM usage") as conn:
            return await pg_consolidation.usage_stats(conn)

    async def refresh_statistics(self) -> None:
        # Right after a bulk import the planner still believes the table is small and sorts
        # every row of a scope by distance instead of using HNSW (25 ms measured at 10k
        # memories, cold); autovacuum would only notice a minute or more later.
        async with self._connect("refreshing planner statistics") as conn:
            await conn.execute("ANALYZE memories, memory_passages")

    # -- operator views (OpsStore) --------------------------------------------------------
    async def list_users(
        self, *, prefix: str | None, after: str | None, limit: int, offset: int = 0
    ) -> list[UserRow]:
        async with self._connect("listing users") as conn:
            return await pg_users.list_users(
                conn, prefix=prefix, after=after, limit=limit, offset=offset
            )

    async def list_scopes(self, *, prefix: str | None, limit: int) -> list[ScopeRow]:
        async with self._connect("listing scopes") as conn:
            return await pg_users.list_scopes(conn, prefix=prefix, limit=limit)

    async def memory_owner(self, memory_id: UUID) -> dict[str, str | None] | None:
        async with self._connect("finding a memory's owner") as conn:
            return await pg_users.memory_owner(conn, memory_id)

    async def queued_jobs_with_prefix(self, prefix: str, cap: int) -> int:
        async with self._connect("counting a tenant's queued jobs") as conn:
            return await pg_jobs.queued_jobs_with_prefix(conn, prefix, cap)

    async def queue_by_kind(self) -> dict[str, dict[str, int]]:
        async with self._connect("reading job statistics") as conn:
            return await pg_jobs.queue_by_kind(conn)

    async def usage_per_day(self, days: int) -> list[DailyUsage]:
        async with self._connect("reading job statistics") as conn:
            return await pg_ops.usage_per_day(conn, days)

    async def ping(self) -> None:
        async with self._connect("checking health") as conn:
            await pg_ops.ping(conn)

    # -- bulk work (BulkStore) ------------------------------------------------------------
    async def reserve_turn_ids(self, count: int) -> list[int]:
        async with self._connect("importing a batch") as conn:
            return await pg_import.reserve_turn_ids(conn, count)

    async def write_import(self, batch: ImportBatch) -> list[int]:
        async with self._connect("importing a batch") as conn:
            return await pg_import.write_batch(conn, batch)

    async def queued_jobs_among(
        self, job_ids: Sequence[int] | None = None, owners: Sequence[str] | None = None
    ) -> int:
        async with self._connect("counting queued jobs") as conn:
            return await pg_jobs.queued_jobs_among(conn, job_ids, owners)

    async def import_cursor(self, source: str) -> ImportCursor | None:
        async with self._connect("reading the import cursor") as conn:
            return await pg_import.read_cursor(conn, source)

    async def reset_import_cursor(self, source: str) -> None:
        async with self._connect("resetting the import cursor") as conn:
            await pg_import.reset_cursor(conn, source)

    async def embedding_space(self) -> EmbeddingSpace:
        async with self._connect("re-embedding memories") as conn:
            return await pg_reembed.recorded_space(conn)

    async def count_memories(self) -> int:
        async with self._connect("re-embedding memories") as conn:
            return await pg_reembed.count_memories(conn)

    async def prepare_reembed(self, model: str, dimension: int) -> bool:
        async with self._connect("re-embedding memories") as conn:
            return await pg_reembed.prepare(conn, model, dimension)

    async def reembed_pending(self) -> int:
        async with self._connect("re-embedding memories") as conn:
            return await pg_reembed.count_pending(conn)

    async def reembed_pass(
        self, embed: Embed, batch: int, on_batch: Callable[[int], None] | None = None
    ) -> int:
        async with self._connect("re-embedding memories") as conn:
            return await pg_reembed.catch_up(conn, embed, batch, on_batch)

    async def build_reembed_index(self) -> None:
        async with self._connect("re-embedding memories") as conn:
            await pg_reembed.build_index(conn)

    async def swap_embeddings(self, model: str, dimension: int, embed: Embed) -> int:
        async with self._connect("re-embedding memories") as conn:
            return await pg_reembed.swap(conn, model, dimension, embed)

    # -- API keys -------------------------------------------------------------------------
    async def create_key(self, name: str, tenant: str | None, is_admin: bool) -> tuple[ApiKey, str]:
        async with self._connect("creating an API key") as conn:
            return await pg_keys.create_key(conn, name, tenant, is_admin)

    async def list_keys(self, include_revoked: bool, tenant: str | None = None) -> list[ApiKey]:
        async with self._connect("listing API keys") as conn:
            return await pg_keys.list_keys(conn, include_revoked, tenant)

    async def revoke_key(self, key_id: int, tenant: str | None = None) -> ApiKey | None:
        async with self._connect("revoking an API key") as conn:
            return await pg_keys.revoke_key(conn, key_id, tenant)

    async def find_active_key(self, key: str) -> ApiKey | None:
        async with self._connect("checking an API key") as conn:
            return await pg_keys.find_active_key(conn, key)

    async def watch_key_changes(self, changed: Callable[[int | None], None]) -> None:
        await pg_key_listener.watch_key_changes(self.database, changed)

    async def list_tenants(self) -> dict[str, int]:
        async with self._connect("listing tenants") as conn:
            return await pg_keys.list_tenants(conn)

    async def bootstrap_admin_key(self) -> str | None:
        async with self._connect("creating the first admin key") as conn:
            return await pg_keys.bootstrap_admin_key(conn)
