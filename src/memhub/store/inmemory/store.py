"""The ``memory://`` store: memhub's data in this process, for notebooks and unit tests.

It behaves as :class:`memhub.store.postgres.store.PostgresStore` does (the rules are in its SQL),
with exact cosine search in numpy and the full-text approximation of
:mod:`memhub.store.inmemory.text`. Nothing outlives the object.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
import dataclasses
from collections.abc import AsyncIterator, Mapping, Sequence, Set
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar
from uuid import UUID

from memhub.config import MemhubSettings
from memhub.errors import ConfigurationError, Conflict, MemoryNotFound, StoreError, UsageError
from memhub.filters import Filter
from memhub.store.inmemory import changes as inmemory_changes
from memhub.store.inmemory import retire as inmemory_retire
from memhub.store.inmemory.batch import InMemoryBatch, UsageRow
from memhub.store.inmemory.jobs import JobQueue, ScopeLocks
from memhub.store.inmemory.keys import InMemoryKeys
from memhub.store.inmemory.rows import as_utc, check_text, in_scope, jsonb, utc_now
from memhub.store.inmemory.tables import Tables
from memhub.store.protocol import Vector
from memhub.store.records import (
    DEFAULT_TEXT_RANKING,
    JOB_TURN_IDS,
    HistoryEvent,
    IdempotencyKey,
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
    TextHits,
    TextRanking,
    TextToEmbed,
    Turn,
    updated_metadata,
    usage_summary,
    utc_wall_time,
)

__all__ = ["InMemoryBatch", "InMemoryStore"]

T = TypeVar("T")


class InMemoryStore(InMemoryKeys):
    """memhub's data in this process's memory; the ``memory://`` URL selects it."""

    def __init__(self, space: str | None = None) -> None:
        super().__init__()
        self.space = space  # named in refusals; a memory:// store shares nothing anyway
        # memhub's async core runs on one event loop and no critical section awaits, so the
        # lock only keeps whole operations apart (and keeps them whole should one ever await).
        self.lock = asyncio.Lock()
        self.tables = Tables()
        self.jobs = JobQueue()
        self._model: str | None = None
        self._open: set[InMemoryBatch] = set()
        self._cursors: dict[str, str | None] = {}
        self._scope_locks = ScopeLocks()
        self._clear()

    def _clear(self) -> None:
        self.tables.clear()
        self.jobs.clear()
        self._turns: dict[int, Turn] = {}
        self._next_turn = 1
        # Where each turn stands, as migration 0029 keeps it: (the session's first turn id,
        # its position from 1), set when it is added and kept after an erase; and the latest
        # turn still held of each (user, session), which the next turn follows.
        self._places: dict[int, tuple[int, int]] = {}
        self._session_last: dict[tuple[str, str], int] = {}
        self._usage: list[UsageRow] = []
        self._idempotency: dict[tuple[str, str], tuple[str, tuple[int, ...]]] = {}

    @classmethod
    async def open(cls, settings: MemhubSettings) -> InMemoryStore:
        """A new, empty store (the settings' URL is not used: ``memory://`` has no address);
        every one is an embedding space of its own, named after the settings' ``space``."""
        return cls(settings.space)

    async def aclose(self) -> None:
        """Nothing to release; the data lives as long as the object."""

    async def ensure_embedding_space(self, model_name: str, dimension: int) -> None:
        async with self.lock:
            vectors = self.tables.vectors
            if self._model is None:
                self._model, vectors.dim = model_name, dimension
                vectors.clear()
            elif self._model != model_name or vectors.dim != dimension:
                where = "this store" if self.space is None else f"space {self.space!r}"
                raise ConfigurationError(
                    f"{where} holds {vectors.dim}-dimensional vectors of {self._model!r}, "
                    f"but the configured embedder is {model_name!r} ({dimension} dimensions); "
                    "configure the recorded model, or run `memhub reembed` to re-embed every "
                    "memory with the new one"
                )

    # -- conversations --------------------------------------------------------------------
    async def append_turns(
        self,
        turns: Sequence[NewTurn],
        job: NewJob | None,
        idempotency: IdempotencyKey | None = None,
    ) -> list[int]:
        action = "storing conversation turns"
        for t in turns:
            check_text(action, 255, user_id=t.user_id, session_id=t.session_id, agent_id=t.agent_id)
            check_text(action, 50, role=t.role)
            check_text(action, message=t.message)
        metadata = [None if t.metadata is None else jsonb(t.metadata, action) for t in turns]
        payload: dict[str, Any] = {}
        if job is not None:
            check_text(action, 255, **job.scope.as_dict())
            check_text(action, kind=job.kind)
            payload = jsonb(job.payload.to_json(), action)
        now = utc_now()
        async with self.lock:
            if idempotency is not None:
                first = self._idempotency.get((idempotency.owner, idempotency.key))
                if first is not None:
                    if first[0] != idempotency.fingerprint:
                        raise UsageError(
                            f"idempotency key {idempotency.key!r} was already used for a"
                            " different request"
                        )
                    return list(first[1])
            ids = list(range(self._next_turn, self._next_turn + len(turns)))
            self._next_turn += len(turns)
            for turn_id, t, meta in zip(ids, turns, metadata, strict=True):
                said_at = utc_wall_time(t.created_at or now)
                self._turns[turn_id] = Turn(
                    turn_id, t.user_id, t.session_id, t.role, t.message, t.agent_id, meta, said_at
                )
                self._place(turn_id, (t.user_id, t.session_id))
            if job is not None:
                wanted = [i for i, t in zip(ids, turns, strict=True) if t.long_term]
                self.jobs.add(job, {**payload, JOB_TURN_IDS: wanted}, now)
                for turn_id, t in zip(ids, turns, strict=True):
                    if t.memory is not None:
                        self.tables.add_pending(job.scope, self._turns[turn_id], t.memory, now)
            if idempotency is not None:
                self._idempotency[(idempotency.owner, idempotency.key)] = (
                    idempotency.fingerprint,
                    tuple(ids),
                )
        return ids

    async def recent_turns(self, user_id: str, session_id: str, limit: int) -> list[Turn]:
        async with self.lock:
            rows = [
                t
                for t in self._turns.values()
                if t.user_id == user_id and t.session_id == session_id
            ]
            return [_copy_turn(t) for t in rows[-limit:]] if limit > 0 else []

    def _turns_by_ids(self, ids: Sequence[int]) -> list[Turn]:
        """The turns with these ids, in id order (call under the lock)."""
        return [_copy_turn(self._turns[i]) for i in sorted(set(ids)) if i in self._turns]

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
        async with self.lock:
            return self.tables.text_hits(
                scope, text_query, k, filters, include_superseded, ranking, self._turns_around
            )

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
        # Exact scoring over the scope: the PostgreSQL work caps of ``ranking`` do not apply.
        async with self.lock:
            found = self.tables.vector_candidates(
                scope, vector, k, filters, include_superseded, hits, ranking, self._turns_around
            )
            return self._with_previous_turns(found)

    def _with_previous_turns(self, found: list[RawCandidate]) -> list[RawCandidate]:
        """Each candidate with the turn said before its first source turn in that session
        (call under the lock)."""
        firsts = {c.record.source_turn_ids[0] for c in found if c.record.source_turn_ids}
        before = self._previous_turns(firsts)
        return [
            dataclasses.replace(
                c,
                previous_turn_id=before.get(c.record.source_turn_ids[0])
                if c.record.source_turn_ids
                else None,
            )
            for c in found
        ]

    def _previous_turns(self, firsts: Set[int]) -> dict[int, int | None]:
        """The turn said just before each of ``firsts`` in its session (None: the first)
        (call under the lock)."""
        around = self._session_turns(firsts)
        before: dict[int, int | None] = {}
        for first, (session, at) in around.items():
            before[first] = session[at - 1] if at > 0 else None
        return before

    def _place(self, turn_id: int, session: tuple[str, str]) -> None:
        """Give a turn just added its place: after the session's latest turn still held, or
        first of a new one (call under the lock)."""
        last = self._session_last.get(session)
        if last is None:
            self._places[turn_id] = (turn_id, 1)
        else:
            first, position = self._places[last]
            self._places[turn_id] = (first, position + 1)
        self._session_last[session] = turn_id

    def _turns_around(self, firsts: Set[int], n: int) -> dict[int, list[int]]:
        """The turns placed within ``n`` positions before and after each of ``firsts`` in its
        session, as PostgreSQL reads them: an erased turn's place stays, empty or not (call
        under the lock)."""
        wanted = {self._places[f][0] for f in firsts if f in self._places}
        placed: dict[int, dict[int, int]] = {}  # session -> position -> turn
        for turn_id, (session, position) in self._places.items():
            if session in wanted:
                placed.setdefault(session, {})[position] = turn_id
        around: dict[int, list[int]] = {}
        for first in firsts:
            if first in self._places:
                session, at = self._places[first]
                near = range(at - n, at + n + 1)
                around[first] = [
                    placed[session][p] for p in near if p != at and p in placed[session]
                ]
        return around

    def _session_turns(self, firsts: Set[int]) -> dict[int, tuple[list[int], int]]:
        """For each of ``firsts`` the store holds: its session's turn ids in order, and its
        position among them. One pass over the stored turns (call under the lock)."""
        ids: dict[tuple[str, str], list[int]] = {
            (t.user_id, t.session_id): [] for i, t in self._turns.items() if i in firsts
        }
        for i, t in self._turns.items():  # ids grow with insertion, so each list is sorted
            if (key := (t.user_id, t.session_id)) in ids:
                ids[key].append(i)
        found: dict[int, tuple[list[int], int]] = {}
        for first in firsts:
            turn = self._turns.get(first)
            if turn is not None:
                session = ids[(turn.user_id, turn.session_id)]
                found[first] = (session, bisect.bisect_left(session, turn.id))
        return found

    async def get_memory(self, scope: Scope | None, memory_id: UUID) -> MemoryRecord | None:
        async with self.lock:
            mem = self.tables.memories.get(memory_id)
            found = (
                mem is not None
                and in_scope(scope, mem.scope)
                and mem.retired_at is None
                and not mem.expired(utc_now())
            )
            return mem.record() if mem is not None and found else None

    async def texts_to_embed(self, scope: Scope, ids: Sequence[UUID]) -> list[TextToEmbed]:
        async with self.lock:
            held = [self.tables.memories.get(i) for i in set(ids)]
            return [
                TextToEmbed(m.id, m.memory, m.hash)
                for m in sorted((m for m in held if m is not None), key=lambda m: m.id)
                if m.row is None and in_scope(scope, m.scope)
            ]

    async def memories_for_turns(self, scope: Scope, turn_ids: Sequence[int]) -> list[MemoryRecord]:
        wanted = set(turn_ids)
        async with self.lock:
            rows = [  # as PostgreSQL's: current rows, expired or not (add's own answer)
                m
                for m in self.tables.eligible(scope, None, True)
                if m.valid_to is None and wanted.intersection(m.source_turn_ids)
            ]
            rows.sort(key=lambda m: (m.created_at, str(m.id)))
            return [m.record() for m in rows]

    async def list_memories(
        self, scope: Scope, filters: Filter | None, limit: int, include_superseded: bool
    ) -> list[MemoryRecord]:
        async with self.lock:
            rows = self.tables.eligible(scope, filters, include_superseded)
            rows.sort(key=lambda m: m.id)
            rows.sort(key=lambda m: m.created_at, reverse=True)  # ORDER BY created_at DESC, id
            return [m.record() for m in rows[: max(limit, 0)]]

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
        action = "updating a memory"
        async with self.lock:
            mem = self.tables.located(scope, memory_id)
            if mem.retired_at is not None:
                raise MemoryNotFound(f"no memory {memory_id} in this scope")
            meta = jsonb(
                updated_metadata(
                    mem.metadata, metadata, merge=merge_metadata, role_column=mem.role is not None
                ),
                action,
            )
            old_text, now = mem.memory, utc_now()
            if text is not None and not self.tables.rewrite(
                mem, text, hash_ or "", vector, now, None, passages
            ):
                raise Conflict(f"{action}: it would duplicate an existing row")
            mem.metadata = meta
            if mem.memory != old_text:  # history is of text, as Mem0's is
                self.tables.event(mem, "UPDATE", old_text, mem.memory, actor, now, None)
            return mem.record()

    async def delete_memory(self, scope: Scope | None, memory_id: UUID, actor: str) -> None:
        async with self.lock:
            mem = self.tables.located(scope, memory_id)
            versions = [
                m
                for m in self.tables.memories.values()
                if m.superseded_by == memory_id and m.valid_to == m.valid_from
            ]
            for gone in (mem, *versions):
                self.tables.detach(gone, None)
            self.tables.event(mem, "DELETE", mem.memory, None, actor, utc_now(), None)

    async def set_expiry(
        self, scope: Scope | None, memory_ids: Sequence[UUID], expires_at: datetime | None
    ) -> None:
        async with self.lock:
            for memory_id in memory_ids:
                mem = self.tables.memories.get(memory_id)
                if mem is not None and in_scope(scope, mem.scope):
                    mem.expires_at = None if expires_at is None else as_utc(expires_at, utc_now())

    async def purge_expired(self, limit: int) -> int:
        async with self.lock:
            now = utc_now()
            gone = [m for m in self.tables.memories.values() if m.expired(now)][:limit]
            for mem in gone:
                self.tables.detach(mem, None)
                self.tables.event(mem, "DELETE", mem.memory, None, "expiry", now, None)
            return len(gone)

    async def delete_all(self, scope: Scope) -> int:
        if scope.is_empty():  # PostgreSQL fails on the turns' empty WHERE and deletes nothing
            raise StoreError("deleting a scope: the scope sets no id")
        async with self._scope_locks.hold([scope]), self.lock:
            self.jobs.delete_scope(scope)  # first: a worker's apply then finds its lease gone
            removed = self.tables.delete_scope(scope)
            self._usage = [u for u in self._usage if not in_scope(scope, u.scope)]
            # Turns carry the run id as their session id (see memhub.engine.ingest).
            ids = {"user_id": "user_id", "agent_id": "agent_id", "run_id": "session_id"}
            wanted = {ids[key]: value for key, value in scope.as_dict().items()}
            self._turns = {
                i: t
                for i, t in self._turns.items()
                if not all(getattr(t, column) == value for column, value in wanted.items())
            }
            self._session_last = {}
            for i, t in self._turns.items():  # ids grow with insertion: the last one wins
                self._session_last[(t.user_id, t.session_id)] = i
            return removed

    async def history(self, scope: Scope | None, memory_id: UUID) -> list[HistoryEvent]:
        async with self.lock:
            return [
                dataclasses.replace(e, metadata=copy.deepcopy(e.metadata))
                for e in self.tables.chain_history(scope, memory_id)
            ]

    async def retire_memory(
        self,
        scope: Scope | None,
        memory_id: UUID,
        actor: str,
        reason: str,
        turn_ids: Sequence[int] = (),
        budget: ModelBudget | None = None,
    ) -> MemoryRecord:
        async with self.lock:
            return inmemory_retire.retire_memory(
                self.tables, scope, memory_id, actor, reason, turn_ids, budget
            )

    async def restore_memory(
        self, scope: Scope | None, memory_id: UUID, actor: str
    ) -> MemoryRecord:
        async with self.lock:
            return inmemory_changes.restore(self.tables, scope, memory_id, actor)

    async def model_changes(
        self, scope: Scope, limit: int, before: int | None = None
    ) -> list[ModelChange]:
        async with self.lock:
            return inmemory_changes.model_changes(self.tables, scope, limit, before)

    async def count_model_changes(
        self, user_id: str, since: datetime, session_id: str | None = None
    ) -> int:
        async with self.lock:
            turns = inmemory_changes.session_turns(self._turns, user_id, session_id)
            return inmemory_changes.count_model_changes(self.tables, user_id, since, turns)

    async def undo_model_change(
        self, scope: Scope | None, change_id: int, actor: str
    ) -> MemoryRecord:
        async with self.lock:
            return inmemory_changes.undo_model_change(self.tables, scope, change_id, actor)

    async def retired_memories(self, scope: Scope, limit: int) -> list[RetiredMemory]:
        async with self.lock:
            return inmemory_retire.retired_memories(self.tables, scope, limit)

    async def purge_retired(self, before: datetime, limit: int) -> int:
        async with self.lock:
            return inmemory_retire.purge_retired(self.tables, before, limit)

    async def reset(self) -> None:
        async with self.lock:
            # TRUNCATE waits for open batches and then removes what they wrote: dooming them
            # (their later writes are undone at their end) ends in the same state.
            for batch in self._open:
                batch.undo.clear()
                batch.doomed = True
            self._clear()

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
        async with self.lock:
            after = None if owners is not None else self._cursors.get(lane.name)
            jobs, cursor = self.jobs.claim(
                lane, limit, lease, utc_now(), after, turns=turns, only=owners
            )
            if owners is None:
                self._cursors[lane.name] = cursor
            return jobs

    @asynccontextmanager
    async def apply_jobs(
        self, jobs: Sequence[Job], owner: str, read_set: Mapping[UUID, str]
    ) -> AsyncIterator[InMemoryBatch]:
        async with self._scope_locks.hold([job.scope for job in jobs]):
            async with self.lock:
                lost = self.jobs.holds([job.id for job in jobs], owner)
                if lost:
                    raise Conflict(f"lease of jobs {lost} lost (erased, or reclaimed after expiry)")
                changed = [str(k) for k, v in read_set.items() if self.tables.current_hash(k) != v]
                if changed:
                    raise Conflict(f"facts {changed} changed since they were read")
                batch = InMemoryBatch(self.lock, self.tables, list(jobs), utc_now(), self._turns)
                self._open.add(batch)
            committed = False
            try:
                yield batch
                async with self.lock:
                    self._finish(batch, commit=True)
                    committed = True
            finally:
                if not committed:
                    # Synchronous and without the lock: no critical section awaits, so none is
                    # interrupted, and the batch is undone even while this task is cancelled.
                    self._finish(batch, commit=False)

    def _finish(self, batch: InMemoryBatch, commit: bool) -> None:
        batch.open = False
        self._open.discard(batch)
        if commit and not batch.failed and not batch.doomed:
            self.jobs.remove(batch.completed)
            until = batch.now + timedelta(seconds=30)
            for job_id, done in batch.progressed.items():
                self.jobs.set_progress(job_id, done, until)
            for job, payload, run_after, join in batch.enqueued:
                self.jobs.add(job, payload, batch.now, run_after, join)
            self._usage.extend(batch.usage)
        else:
            for undo in reversed(batch.undo):
                undo()

    async def release_jobs(
        self,
        job_ids: Sequence[int],
        owner: str,
        error: str | None,
        retry_at: datetime,
        max_attempts: int,
    ) -> int:
        async with self.lock:
            when = as_utc(retry_at, retry_at)
            return self.jobs.release(job_ids, owner, error, when, max_attempts)

    async def extend_leases(self, job_ids: Sequence[int], owner: str, seconds: float) -> int:
        async with self.lock:
            return self.jobs.extend(job_ids, owner, utc_now() + timedelta(seconds=seconds))

    async def leased_job_ids(self, owner: str) -> list[int]:
        async with self.lock:
            return self.jobs.leased_by(owner)

    async def turns_by_ids(self, ids: Sequence[int]) -> list[Turn]:
        async with self.lock:
            return self._turns_by_ids(ids)

    async def pending_turn_jobs(
        self, scope: Scope, turn_ids: Sequence[int], kinds: Sequence[str] | None
    ) -> int:
        async with self.lock:
            return self.jobs.pending_for_turns(scope, turn_ids, kinds)

    async def pending_jobs(self, scope: Scope | None = None) -> int:
        async with self.lock:
            return self.jobs.pending(scope)

    async def job_counts(self) -> dict[str, int]:
        async with self.lock:
            return self.jobs.counts()

    async def list_jobs(self, status: str, limit: int) -> list[Job]:
        async with self.lock:
            return self.jobs.listed(status, limit)

    async def requeue_parked(self, job_ids: Sequence[int] | None) -> int:
        async with self.lock:
            return self.jobs.requeue(job_ids, utc_now())

    async def usage_stats(self) -> dict[str, float]:
        """LLM calls and tokens of consolidation, in total and per turn."""
        async with self.lock:
            calls = sum(u.calls for u in self._usage)
            prompt = sum(u.prompt_tokens for u in self._usage)
            completion = sum(u.completion_tokens for u in self._usage)
            turns = sum(u.turns for u in self._usage)
        return usage_summary(calls, prompt, completion, turns)

    async def refresh_statistics(self) -> None:
        """Nothing to refresh: the in-process store has no query planner."""


def _copy_turn(turn: Turn) -> Turn:
    return dataclasses.replace(turn, metadata=copy.deepcopy(turn.metadata))
