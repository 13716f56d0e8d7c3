"""The in-process store's apply phase: writes undone on rollback, the rest kept until commit."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar
from uuid import UUID

from memhub.errors import MemoryNotFound, StoreError, UsageError
from memhub.store.inmemory.changes import count_model_changes, session_turns
from memhub.store.inmemory.retire import retire
from memhub.store.inmemory.rows import as_utc, in_scope, jsonb
from memhub.store.inmemory.tables import Tables
from memhub.store.protocol import Vector
from memhub.store.records import (
    FORGET_REASON,
    FilledVector,
    Job,
    NewJob,
    NewMemory,
    Scope,
    Turn,
)

__all__ = ["InMemoryBatch", "UsageRow"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True)
class UsageRow:
    """One consolidation's LLM cost, as ``memory_llm_usage`` keeps it."""

    scope: Scope
    calls: int
    prompt_tokens: int
    completion_tokens: int
    turns: int


class InMemoryBatch:
    """The apply phase of leased jobs: memory writes apply at once and are undone on rollback;
    completions, follow-up jobs and usage apply when the context ends normally.

    The scopes' locks are held throughout, so ``delete_all`` of those scopes waits for it.
    """

    def __init__(
        self,
        lock: asyncio.Lock,
        tables: Tables,
        jobs: list[Job],
        now: datetime,
        turns: Mapping[int, Turn] | None = None,
    ) -> None:
        self.jobs = jobs
        self.now = now  # PostgreSQL's now() inside the transaction
        self.undo: list[Callable[[], None]] = []
        self.completed: list[int] = []
        self.progressed: dict[int, int] = {}
        self.enqueued: list[tuple[NewJob, dict[str, Any], datetime | None, bool]] = []
        self.usage: list[UsageRow] = []
        self.open = True
        self.failed = False  # a failed write dooms the batch, as it aborts a transaction
        self.doomed = False  # reset() ran meanwhile: whatever the batch wrote goes too
        self._lock = lock
        self._tables = tables
        self._turns: Mapping[int, Turn] = turns if turns is not None else {}

    async def _run(self, op: Callable[[], T]) -> T:
        if not self.open:
            raise StoreError("this job batch is closed")
        if self.failed:
            raise StoreError("current transaction is aborted, commands ignored until its end")
        async with self._lock:
            try:
                return op()
            except MemoryNotFound:
                raise  # raised before any SQL fails: the transaction goes on
            except (StoreError, UsageError):  # PostgreSQL aborts the transaction on either
                self.failed = True
                raise

    async def insert_memories(self, memories: Sequence[NewMemory], actor: str) -> list[UUID | None]:
        tables = self._tables
        return await self._run(
            lambda: [tables.insert(m, actor, self.now, self.undo) for m in memories]
        )

    async def fill_vectors(self, filled: Sequence[FilledVector]) -> int:
        tables = self._tables
        return await self._run(lambda: sum(tables.fill_vector(f, self.undo) for f in filled))

    async def complete(self, job_ids: Sequence[int]) -> None:
        await self._run(lambda: self.completed.extend(job_ids))

    async def progress(self, job_id: int, done: int) -> None:
        await self._run(lambda: self.progressed.__setitem__(job_id, done))

    async def enqueue(self, job: NewJob, run_after: datetime | None, join_window: bool) -> None:
        payload = jsonb(job.payload.to_json(), "queueing a job")
        when = None if run_after is None else as_utc(run_after, run_after)
        await self._run(lambda: self.enqueued.append((job, payload, when, join_window)))

    async def refine(
        self,
        scope: Scope,
        memory_id: UUID,
        text: str,
        hash_: str,
        vector: Vector,
        turn_ids: Sequence[int],
    ) -> bool:
        def op() -> bool:
            tables = self._tables
            mem = tables.located(scope, memory_id)
            old_text, old_turns = mem.memory, mem.source_turn_ids
            version = tables.version_of(mem, self.now)
            if not tables.rewrite(mem, text, hash_, vector, self.now, self.undo):
                return False  # PostgreSQL's unique violation, caught in a savepoint
            tables.attach(version, self.undo)
            tables.change(mem, self.undo, source_turn_ids=old_turns + tuple(turn_ids))
            tables.event(
                mem,
                "UPDATE",
                old_text,
                text,
                "consolidation",
                self.now,
                self.undo,
                turn_ids,
                {"previous_version": str(version.id)},
            )
            return True

        return await self._run(op)

    async def supersede(
        self, scope: Scope, old_id: UUID, new: NewMemory, closed_at: datetime
    ) -> UUID:
        tables = self._tables
        return await self._run(
            lambda: tables.supersede(scope, old_id, new, closed_at, self.now, self.undo)
        )

    async def forget(
        self, scope: Scope, memory_id: UUID, turn_ids: Sequence[int], reason: str = FORGET_REASON
    ) -> None:
        def op() -> None:
            tables = self._tables
            mem = tables.located(scope, memory_id)
            retire(tables, mem, "consolidation", reason, turn_ids, self.now, self.undo)

        await self._run(op)

    async def retire_episodes(
        self, scope: Scope, turn_ids: Sequence[int], reason: str, along_with: UUID
    ) -> int:
        def op() -> int:
            tables, wanted = self._tables, set(turn_ids)
            episodes = sorted(
                (
                    m
                    for m in tables.memories.values()
                    if in_scope(scope, m.scope)
                    and m.role is not None
                    and m.valid_to is None
                    and wanted.intersection(m.source_turn_ids)
                ),
                key=lambda m: m.id,
            )
            meta = {"along_with": str(along_with)}
            for mem in episodes:
                retire(tables, mem, "consolidation", reason, turn_ids, self.now, self.undo, meta)
            return len(episodes)

        return await self._run(op)

    async def count_model_changes(
        self, user_id: str, since: datetime, session_id: str | None = None
    ) -> int:
        turns = session_turns(self._turns, user_id, session_id)
        return await self._run(lambda: count_model_changes(self._tables, user_id, since, turns))

    async def record_usage(
        self,
        scope: Scope,
        model: str,
        usage: dict[str, int],
        turns: int,
        jobs: int,
        operations: dict[str, int],
    ) -> None:
        row = UsageRow(
            scope, usage["calls"], usage["prompt_tokens"], usage["completion_tokens"], turns
        )
        await self._run(lambda: self.usage.append(row))
