"""The storage contract, one small protocol per concern; PostgreSQL and ``memory://`` meet it.

Everything a store returns is a plain record from :mod:`memhub.store.records`; every scope
argument narrows by each of its ids that is set, and no method reaches outside its scope.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from typing import Any, Protocol, runtime_checkable
from uuid import UUID

import numpy as np
import numpy.typing as npt

from memhub.filters import Filter
from memhub.store.api_keys import ApiKey
from memhub.store.records import (
    DEFAULT_TEXT_RANKING,
    FORGET_REASON,
    DailyUsage,
    EmbeddedText,
    EmbeddingSpace,
    FilledVector,
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
    NewMemory,
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

__all__ = [
    "BulkStore",
    "ConsolidationWrites",
    "Embed",
    "JobBatch",
    "JobStore",
    "KeyStore",
    "MemoryStore",
    "OpsStore",
    "Store",
    "TurnStore",
    "Vector",
]

Vector = npt.NDArray[np.float32]
#: Texts in, one :class:`EmbeddedText` per text out: its vector and, for a text longer than
#: the embedder's window, its passages (``memhub.engine.passages.embed_texts``).
Embed = Callable[[list[str]], Awaitable[Sequence[EmbeddedText]]]


class ConsolidationWrites(Protocol):
    """What the apply phase writes to memories: facts added, refined, superseded, forgotten.

    Only reachable inside :meth:`JobStore.apply_jobs`, so every write is checked against the
    leases and the facts the work read, and lands in the batch's one transaction.
    """

    async def insert_memories(self, memories: Sequence[NewMemory], actor: str) -> list[UUID | None]:
        """Insert memories and their ADD history; None where an equal current memory exists."""
        ...

    async def refine(
        self,
        scope: Scope,
        memory_id: UUID,
        text: str,
        hash_: str,
        vector: Vector,
        turn_ids: Sequence[int],
    ) -> bool:
        """UPDATE a fact in place (history UPDATE); False if the new text already exists."""
        ...

    async def supersede(
        self, scope: Scope, old_id: UUID, new: NewMemory, closed_at: datetime
    ) -> UUID:
        """Close a fact at ``closed_at`` and add its successor; returns the successor's id."""
        ...

    async def forget(
        self, scope: Scope, memory_id: UUID, turn_ids: Sequence[int], reason: str = FORGET_REASON
    ) -> None:
        """Retire a fact the user asked to forget (history RETIRE; ``restore`` undoes it)."""
        ...

    async def retire_episodes(
        self, scope: Scope, turn_ids: Sequence[int], reason: str, along_with: UUID
    ) -> int:
        """Retire the current episodes (memories with a role) of ``scope`` that came from
        ``turn_ids``, with the fact ``along_with`` a granted forget retired; returns how many.

        Each gets a RETIRE event (actor ``consolidation``, metadata ``along_with``): listed
        and restorable, and not counted again in the budget (the forget was).
        """
        ...

    async def count_model_changes(
        self, user_id: str, since: datetime, session_id: str | None = None
    ) -> int:
        """:meth:`MemoryStore.count_model_changes`, inside the apply's transaction."""
        ...

    async def record_usage(
        self,
        scope: Scope,
        model: str,
        usage: dict[str, int],
        turns: int,
        jobs: int,
        operations: dict[str, int],
    ) -> None:
        """Account one consolidation's LLM cost."""
        ...


class JobBatch(ConsolidationWrites, Protocol):
    """The apply phase of leased jobs: their results, written in one short transaction.

    :meth:`JobStore.apply_jobs` opens it after checking the lease and the facts the work read;
    leaving the context normally commits, an exception rolls everything back.
    """

    jobs: list[Job]

    async def fill_vectors(self, filled: Sequence[FilledVector]) -> int:
        """Store the vectors (and passages) of memories written without one; a memory that
        has a vector already, or whose text changed since it was read (its hash), or that was
        deleted, is left as it is. Returns how many were filled."""
        ...

    async def complete(self, job_ids: Sequence[int]) -> None:
        """Remove finished jobs from the queue."""
        ...

    async def progress(self, job_id: int, done: int) -> None:
        """Record that the first ``done`` turns of a job are stored (large jobs go in parts)."""
        ...

    async def enqueue(self, job: NewJob, run_after: datetime | None, join_window: bool) -> None:
        """Queue a follow-up job, committed with the batch.

        With ``join_window``, it becomes ready with the owner's earliest queued, unleased job
        of the same kind, if there is one, rather than at ``run_after``.
        """
        ...


class TurnStore(Protocol):
    """Short-term memory: the conversation turns, in ARKOS's ``conversation_context``."""

    async def append_turns(
        self,
        turns: Sequence[NewTurn],
        job: NewJob | None,
        idempotency: IdempotencyKey | None = None,
    ) -> list[int]:
        """Store ``turns`` and ``job`` atomically; returns the new turn ids in order.

        With ``idempotency``, a key stored before returns its first call's ids and writes
        nothing; the same key with a different fingerprint raises :class:`UsageError`.
        """
        ...

    async def recent_turns(self, user_id: str, session_id: str, limit: int) -> list[Turn]:
        """The last ``limit`` turns of the session, oldest first."""
        ...

    async def turns_by_ids(self, ids: Sequence[int]) -> list[Turn]:
        """Stored turns by id, in id order (missing ids are skipped)."""
        ...


class MemoryStore(Protocol):
    """Long-term memories: hybrid search, CRUD with a history event for every change."""

    async def text_hits(
        self,
        scope: Scope,
        text_query: str,
        k: int,
        filters: Filter | None,
        include_superseded: bool,
        ranking: TextRanking = DEFAULT_TEXT_RANKING,
    ) -> TextHits:
        """Up to ``k`` best memories by full text: a search's first step.

        It needs no vector, so a search runs it while the query is being embedded
        (:mod:`memhub.engine.retrieve`), then hands it to :meth:`vector_candidates`.
        """
        ...

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
        """Up to ``k`` nearest memories by vector and the memories of ``hits``, merged.

        Each with the signals it has, unranked, in any order: the engine ranks them
        (:func:`memhub.engine.retrieve.rank`). A text hit no longer in the scope (deleted or
        superseded since :meth:`text_hits`) is left out.
        """
        ...

    async def get_memory(self, scope: Scope | None, memory_id: UUID) -> MemoryRecord | None: ...

    async def texts_to_embed(self, scope: Scope, ids: Sequence[UUID]) -> list[TextToEmbed]:
        """Those of the memories ``ids`` of ``scope`` that have no vector yet, current or not."""
        ...

    async def memories_for_turns(self, scope: Scope, turn_ids: Sequence[int]) -> list[MemoryRecord]:
        """The scope's current memories made from any of these turns, oldest first."""
        ...

    async def list_memories(
        self,
        scope: Scope,
        filters: Filter | None,
        limit: int,
        include_superseded: bool,
    ) -> list[MemoryRecord]:
        """Newest first."""
        ...

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
        """Change a memory's text and/or metadata in place, with an UPDATE history event.

        ``text`` None keeps the text (and hash and vector); a new text loses the old one's
        passages and gets ``passages``, when it is longer than the embedder's window
        (``vector`` is then the first's). ``metadata`` replaces the
        caller's keys, or with ``merge_metadata`` is merged into them; memhub's own keys
        (:data:`OWN_METADATA_KEYS`) keep their values either way (:func:`updated_metadata`).
        Another current memory of the scope with the new text raises :class:`Conflict`.
        """
        ...

    async def delete_memory(self, scope: Scope | None, memory_id: UUID, actor: str) -> None:
        """Remove a memory, keeping a DELETE history event with its last text."""
        ...

    async def history(self, scope: Scope | None, memory_id: UUID) -> list[HistoryEvent]: ...

    async def retire_memory(
        self,
        scope: Scope | None,
        memory_id: UUID,
        actor: str,
        reason: str,
        turn_ids: Sequence[int] = (),
        budget: ModelBudget | None = None,
    ) -> MemoryRecord:
        """Take a current memory out of every read, restorably (history RETIRE).

        What a model removes is retired, never erased; :class:`MemoryNotFound` unless the
        memory is a current one of ``scope``. With a ``budget`` (a model retires), the
        memory's user's model changes are counted in the same transaction and
        :class:`ModelBudgetSpent` raised, nothing changed, once they reach it.
        """
        ...

    async def restore_memory(
        self, scope: Scope | None, memory_id: UUID, actor: str
    ) -> MemoryRecord:
        """Make a retired or superseded memory current again (history RESTORE).

        A superseded one replaces the current end of its chain, which is retired; the earlier
        wording a model's UPDATE kept is restored as that UPDATE's undo (the memory keeps its
        id). Raises :class:`MemoryNotFound` (no such memory in ``scope``) or
        :class:`NotRestorable` (erased, current already, or an equal memory is current).
        """
        ...

    async def retired_memories(self, scope: Scope, limit: int) -> list[RetiredMemory]:
        """The scope's retired memories, most recently retired first."""
        ...

    async def model_changes(
        self, scope: Scope, limit: int, before: int | None = None
    ) -> list[ModelChange]:
        """What models retired, superseded and reworded in ``scope``, newest first.

        Read from ``memory_history`` (RETIRE, SUPERSEDE and UPDATE events of an actor that is
        not a person, :func:`memhub.store.records.is_model_actor`); ``before``: only changes
        with a smaller id (the next page).
        """
        ...

    async def count_model_changes(
        self, user_id: str, since: datetime, session_id: str | None = None
    ) -> int:
        """How many memories of ``user_id`` models changed since ``since`` (the budget's count);
        ``session_id``: only changes citing a turn of that conversation."""
        ...

    async def undo_model_change(
        self, scope: Scope | None, change_id: int, actor: str
    ) -> MemoryRecord:
        """Undo one model change, bringing back the same memory id (history RESTORE ``undoes``).

        A retire or supersession is restored as :meth:`restore_memory` does; an UPDATE gets
        its earlier wording back. Raises :class:`MemoryNotFound` (no such change in ``scope``)
        or :class:`NotRestorable` (not a model's change, undone already, erased, changed
        since, or an equal memory is current).
        """
        ...

    async def purge_retired(self, before: datetime, limit: int) -> int:
        """Erase up to ``limit`` memories (of any scope) retired before ``before``."""
        ...

    async def set_expiry(
        self, scope: Scope | None, memory_ids: Sequence[UUID], expires_at: datetime | None
    ) -> None:
        """Set (None: clear) when these memories of ``scope`` expire (a LangGraph TTL)."""
        ...

    async def purge_expired(self, limit: int) -> int:
        """Delete up to ``limit`` memories whose ``expires_at`` has passed (DELETE events by
        ``"expiry"`` in their history); returns how many."""
        ...


class JobStore(Protocol):
    """The durable queue: claim (leases), apply (checked), release, heartbeat, park, requeue."""

    async def claim_jobs(
        self,
        lane: Lane,
        limit: int,
        lease: Lease,
        *,
        turns: int | None = None,
        owners: Sequence[str] | None = None,
    ) -> list[Job]:
        """Lease up to ``limit`` ready jobs of ``lane`` to ``lease.owner``; commits at once.

        Attempts are counted here. Owners are served round robin, each with a share of
        ``limit``; an ordered lane hands an owner's jobs out in id order, one lease at a time.
        With ``turns``, the claim stops taking jobs once they carry that many turns to embed
        (:attr:`Job.work`; the first job is always taken), so one claim is about one chunk of
        work and an owner queued meanwhile is served after it. ``owners`` (:attr:`Scope.owner`
        values) restricts the claim to those owners' queues and leaves the round robin's
        place alone. Expired leases are claimed again; one that expires after
        ``lease.max_attempts`` is parked.
        """
        ...

    def apply_jobs(
        self, jobs: Sequence[Job], owner: str, read_set: Mapping[UUID, str]
    ) -> AbstractAsyncContextManager[JobBatch]:
        """Apply the results of leased ``jobs`` in one transaction, under their scopes' locks.

        Raises :class:`memhub.errors.Conflict` if ``owner`` no longer holds every lease
        (erased, or reclaimed after expiry) or a fact of ``read_set`` (id -> hash) is no
        longer current with that hash.
        """
        ...

    async def release_jobs(
        self,
        job_ids: Sequence[int],
        owner: str,
        error: str | None,
        retry_at: datetime,
        max_attempts: int,
    ) -> int:
        """End ``owner``'s leases, retrying at ``retry_at``; returns how many were parked.

        With an ``error`` the attempt counts (parked at ``max_attempts``); without, the job is
        given back and its attempt refunded.
        """
        ...

    async def extend_leases(self, job_ids: Sequence[int], owner: str, seconds: float) -> int:
        """Keep ``owner``'s leases ``seconds`` longer; returns how many it still holds."""
        ...

    async def leased_job_ids(self, owner: str) -> list[int]:
        """The ids of the jobs ``owner`` holds a lease on (expired leases included)."""
        ...

    async def pending_turn_jobs(
        self, scope: Scope, turn_ids: Sequence[int], kinds: Sequence[str] | None
    ) -> int:
        """Queued jobs of ``scope``'s owner about any of ``turn_ids``, of ``kinds`` (None: any)."""
        ...

    async def pending_jobs(self, scope: Scope | None = None) -> int:
        """Queued (not parked) jobs, optionally of one scope."""
        ...

    async def job_counts(self) -> dict[str, int]:
        """Jobs per status: ``{"queued": n, "parked": m}``."""
        ...

    async def list_jobs(self, status: str, limit: int) -> list[Job]: ...

    async def requeue_parked(self, job_ids: Sequence[int] | None) -> int:
        """Put parked jobs back in the queue (all when ``job_ids`` is None)."""
        ...


class KeyStore(Protocol):
    """API keys: only a key's hash is stored; its secret is returned once, at creation."""

    async def create_key(self, name: str, tenant: str | None, is_admin: bool) -> tuple[ApiKey, str]:
        """Store a new key; returns it and its secret."""
        ...

    async def list_keys(self, include_revoked: bool, tenant: str | None = None) -> list[ApiKey]:
        """Every key (only ``tenant``'s when given), oldest first."""
        ...

    async def revoke_key(self, key_id: int, tenant: str | None = None) -> ApiKey | None:
        """Revoke a key (idempotent); None if there is no such key (of ``tenant``, if given)."""
        ...

    async def find_active_key(self, key: str) -> ApiKey | None:
        """The unrevoked key ``key`` is, marking it used (at most once a minute)."""
        ...

    async def watch_key_changes(self, changed: Callable[[int | None], None]) -> None:
        """Call ``changed(key_id)`` as soon as any process commits a change to that key.

        ``changed(None)`` means any key may have changed unseen (at the start, and after the
        watch was interrupted): forget them all. Runs until cancelled; returns at once where
        nothing can be watched (a store no other process shares, or no way to listen), and
        then a cache of keys is bounded by its own expiry only.
        """
        ...

    async def list_tenants(self) -> dict[str, int]:
        """``{tenant: active keys}`` for every tenant that ever had a key, by name."""
        ...

    async def bootstrap_admin_key(self) -> str | None:
        """With no key stored yet, create an admin key and return its secret; else None."""
        ...


class Store(TurnStore, MemoryStore, JobStore, KeyStore, Protocol):
    """Every concern of one database, and what spans them all (lifecycle, erase, statistics)."""

    async def aclose(self) -> None: ...

    async def ensure_embedding_space(self, model_name: str, dimension: int) -> None:
        """Fix the embedding model and dimension of the store's space (the settings'
        ``space``; the default space without one), or refuse a different one."""
        ...

    async def delete_all(self, scope: Scope) -> int:
        """Remove everything of the scope: jobs, memories, history, LLM usage and turns.

        Under the scope's locks, which the apply phase of a worker also takes, so a batch
        racing the erase either lands before it (and is erased) or finds its jobs gone. A
        named space's store erases in that space; the default space's erases in every space
        of its database (``memory://`` stores share nothing: each is a space of its own).
        """
        ...

    async def reset(self) -> None:
        """Remove all data of every scope (tests, notebooks)."""
        ...

    async def refresh_statistics(self) -> None:
        """Refresh the query planner's statistics after bulk growth (no-op without a planner)."""
        ...

    async def usage_stats(self) -> dict[str, float]:
        """LLM calls and tokens of consolidation, in total and per turn."""
        ...


@runtime_checkable
class OpsStore(Protocol):
    """Operator views across every scope: who has data, the queue per kind, LLM usage per day,
    a tenant's backlog (quotas), a liveness ping.

    Not part of :class:`Store`: a back end may lack them (``memory://`` does), and
    ``isinstance(store, OpsStore)`` tells which.
    """

    async def list_users(
        self, *, prefix: str | None, after: str | None, limit: int, offset: int = 0
    ) -> list[UserRow]:
        """Users whose id sorts after ``after`` (in byte order), starting with ``prefix``."""
        ...

    async def list_scopes(self, *, prefix: str | None, limit: int) -> list[ScopeRow]:
        """Up to ``limit`` scopes with current memories, by user, agent, then run id."""
        ...

    async def memory_owner(self, memory_id: UUID) -> dict[str, str | None] | None:
        """A memory's stored scope ids (through its history once deleted); None if neither."""
        ...

    async def queued_jobs_with_prefix(self, prefix: str, cap: int) -> int:
        """Queued jobs whose owner id starts with ``prefix``, counted up to ``cap + 1``."""
        ...

    async def queue_by_kind(self) -> dict[str, dict[str, int]]:
        """``{kind: {"queued", "running", "parked", "oldest_queued_seconds"}}``."""
        ...

    async def usage_per_day(self, days: int) -> list[DailyUsage]:
        """LLM calls and tokens per UTC day over the last ``days`` days, newest first."""
        ...

    async def ping(self) -> None:
        """One round trip; raises :class:`StoreUnavailable` if the database does not answer."""
        ...


@runtime_checkable
class BulkStore(Protocol):
    """Work on a whole database beside the per-call API: ``memhub import`` (a batch of thousands
    of turns per transaction, with a resumable cursor) and ``memhub reembed`` (every vector
    moved to a new model while the old one serves).

    Not part of :class:`Store`: ``memory://`` ends with its process, so it has none.
    """

    async def reserve_turn_ids(self, count: int) -> list[int]:
        """``count`` new turn ids, in order, for a batch to be written under."""
        ...

    async def write_import(self, batch: ImportBatch) -> list[int]:
        """Write a batch's turns, memories, history, jobs and cursor in one transaction;
        returns the ids of the jobs it queued."""
        ...

    async def queued_jobs_among(
        self, job_ids: Sequence[int] | None = None, owners: Sequence[str] | None = None
    ) -> int:
        """Queued jobs among ``job_ids`` and of ``owners`` (:attr:`Scope.owner` values);
        None: any. What an import waits for and counts: its own jobs, its own users."""
        ...

    async def import_cursor(self, source: str) -> ImportCursor | None:
        """The cursor of ``source``, if an import of it ever committed a batch."""
        ...

    async def reset_import_cursor(self, source: str) -> None:
        """Forget ``source``'s cursor: the next import of it starts from its first item."""
        ...

    async def embedding_space(self) -> EmbeddingSpace:
        """The embedding model and dimension the database records."""
        ...

    async def count_memories(self) -> int:
        """Every memory of the database, current or superseded."""
        ...

    async def prepare_reembed(self, model: str, dimension: int) -> bool:
        """Make room for vectors of ``model`` beside the current ones; True when an
        interrupted run for the same model resumes."""
        ...

    async def reembed_pending(self) -> int:
        """Memories without a vector of the new model yet."""
        ...

    async def reembed_pass(
        self, embed: Embed, batch: int, on_batch: Callable[[int], None] | None = None
    ) -> int:
        """Embed, ``batch`` at a time, every memory still without a new vector (a long one
        with its passages); returns how many (``on_batch`` is told the running count)."""
        ...

    async def build_reembed_index(self) -> None:
        """Build the new vectors' index without blocking writers."""
        ...

    async def swap_embeddings(self, model: str, dimension: int, embed: Embed) -> int:
        """Catch up on what changed meanwhile, then make the new vectors (and passages) the
        ones searched and record ``model``; returns how many memories the catch-up embedded."""
        ...
