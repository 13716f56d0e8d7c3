"""The in-process store's ``memories`` and ``memory_history``: synchronous, I/O-free operations.

Every write can record its inverse in an undo list: a job batch passes one, and rolling the
batch back runs it in reverse. The rules follow :mod:`memhub.store.postgres.memories` and
:mod:`memhub.store.postgres.consolidation`.
"""

from __future__ import annotations

import copy
import dataclasses
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence, Set
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import numpy as np

from memhub.errors import MemoryNotFound, StoreError
from memhub.filters import Filter
from memhub.store.inmemory.filters import matches
from memhub.store.inmemory.rows import (
    Key,
    MemoryRow,
    VectorMatrix,
    as_utc,
    check_text,
    in_scope,
    jsonb,
    utc_now,
)
from memhub.store.inmemory.text import bm25_scores, terms
from memhub.store.protocol import Vector
from memhub.store.records import (
    TEXT_SCORE_DIGITS,
    FilledVector,
    HistoryEvent,
    NewMemory,
    Passage,
    PassageHit,
    PendingMemory,
    RawCandidate,
    Scope,
    TextHits,
    TextRanking,
    Turn,
)

__all__ = ["Tables", "Undo"]

Undo = list[Callable[[], None]] | None  # where a write records its inverse (None: no rollback)
# The turns said within n turns before and after each of some turns in its session (the
# store holds the turns).
TurnsAround = Callable[[Set[int], int], Mapping[int, Sequence[int]]]


class Tables:
    """Memories (with their vectors and the current-hash index) and their history."""

    def __init__(self) -> None:
        self.vectors = VectorMatrix()
        self.clear()

    def clear(self) -> None:
        self.memories: dict[UUID, MemoryRow] = {}
        self._current: dict[Key, UUID] = {}  # see holder()
        self.history: list[tuple[Scope, HistoryEvent]] = []
        self._next_event = 1
        self.vectors.clear()

    # -- primitives ---------------------------------------------------------------------------
    def holder(self, key: Key) -> UUID | None:
        """The current fact with this key (the partial unique index ``memories_current_fact_hash``).

        Checked on read, so a memory whose ``valid_to`` is set no longer counts. Turn memories
        (with a role) are outside the index, as in PostgreSQL.
        """
        held = self._current.get(key)
        mem = None if held is None else self.memories.get(held)
        return None if mem is None or mem.valid_to is not None else mem.id

    def current_hash(self, memory_id: UUID) -> str | None:
        """The hash of a current memory; None if it is gone or superseded."""
        mem = self.memories.get(memory_id)
        return None if mem is None or mem.valid_to is not None else mem.hash

    def located(self, scope: Scope | None, memory_id: UUID) -> MemoryRow:
        mem = self.memories.get(memory_id)
        if mem is None or not in_scope(scope, mem.scope):
            raise MemoryNotFound(f"no memory {memory_id} in this scope")
        return mem

    def attach(self, mem: MemoryRow, undo: Undo) -> None:
        if mem.unit is not None:
            mem.row, mem.unit = self.vectors.add(mem.unit), None
        self.memories[mem.id] = mem
        if mem.valid_to is None and mem.role is None:
            self._current[mem.key] = mem.id
        if undo is not None:
            undo.append(lambda: self.detach(mem, None))

    def detach(self, mem: MemoryRow, undo: Undo) -> None:
        if self.memories.get(mem.id) is not mem:
            return
        del self.memories[mem.id]
        if self._current.get(mem.key) == mem.id:
            del self._current[mem.key]
        if mem.row is not None:
            mem.unit = self.vectors.get(mem.row)  # kept so that an undo can attach it again
            self.vectors.free(mem.row)
            mem.row = None
        if undo is not None:
            undo.append(lambda: self.attach(mem, None))

    def change(self, mem: MemoryRow, undo: Undo, **fields: Any) -> None:
        """Set columns of a stored memory, keeping the current-hash index right."""
        before = {name: getattr(mem, name) for name in fields}
        if self._current.get(mem.key) == mem.id:
            del self._current[mem.key]
        for name, value in fields.items():
            setattr(mem, name, value)
        if mem.valid_to is None and mem.role is None and self.memories.get(mem.id) is mem:
            self._current[mem.key] = mem.id
        if undo is not None:
            undo.append(lambda: self.change(mem, None, **before))

    def set_vector(self, mem: MemoryRow, unit: Vector, undo: Undo) -> None:
        if mem.row is None:
            mem.row = self.vectors.add(unit)
            previous = None
        else:
            previous = self.vectors.get(mem.row)
            self.vectors.set(mem.row, unit)
        if undo is not None:
            undo.append(lambda: self._restore_vector(mem, previous))

    def _restore_vector(self, mem: MemoryRow, previous: Vector | None) -> None:
        if mem.row is None:
            return
        if previous is None:
            self.vectors.free(mem.row)
            mem.row = None
        else:
            self.vectors.set(mem.row, previous)

    def event(
        self,
        mem: MemoryRow,
        kind: str,
        old: str | None,
        new: str | None,
        actor: str,
        now: datetime,
        undo: Undo,
        turn_ids: Sequence[int] = (),
        metadata: dict[str, Any] | None = None,
    ) -> None:
        event = HistoryEvent(
            self._next_event, mem.id, kind, old, new, actor, tuple(turn_ids), metadata or {}, now
        )
        entry = (mem.scope, event)
        self.history.append(entry)
        self._next_event += 1
        if undo is not None:
            undo.append(lambda: self.history.remove(entry) if entry in self.history else None)

    # -- operations -----------------------------------------------------------------------------
    def new_row(self, new: NewMemory, now: datetime) -> MemoryRow:
        action = "inserting a memory"
        check_text(action, 255, **new.scope.as_dict())
        check_text(action, memory=new.memory, hash=new.hash, memory_type=new.memory_type)
        if new.scope.is_empty():
            raise StoreError(
                f'{action}: new row for relation "memories" violates check constraint'
                ' "memories_scoped"'
            )
        unit = None if new.embedding is None else self.vectors.unit(new.embedding, action)
        return MemoryRow(
            id=new.id,
            scope=new.scope,
            memory=new.memory,
            hash=new.hash,
            metadata=jsonb(new.metadata, action),
            memory_type=new.memory_type,
            valid_from=as_utc(new.valid_from, now),
            created_at=as_utc(new.created_at, now),
            source_turn_ids=tuple(new.source_turn_ids),
            terms=terms(new.memory),
            unit=unit,
            role=new.role,
            expires_at=None if new.expires_at is None else as_utc(new.expires_at, now),
            passages=self._passages(new.passages, action),
        )

    def _passages(
        self, passages: Sequence[Passage], action: str
    ) -> tuple[tuple[PassageHit, Vector], ...]:
        return tuple(
            (PassageHit(p.ordinal, p.start, p.end), self.vectors.unit(p.embedding, action))
            for p in passages
        )

    def add_pending(self, scope: Scope, turn: Turn, pending: PendingMemory, now: datetime) -> None:
        """A turn's memory as ``append_turns`` writes it: text and ADD event, no vector yet."""
        said_at = turn.created_at.replace(tzinfo=UTC) if turn.created_at else now
        self.insert(
            pending.row(scope, turn.id, turn.role, turn.metadata, said_at), "add", now, None
        )

    def insert(self, new: NewMemory, actor: str, now: datetime, undo: Undo) -> UUID | None:
        """INSERT ... ON CONFLICT DO NOTHING, with its ADD event; None for a duplicate."""
        mem = self.new_row(new, now)
        if mem.id in self.memories:
            raise StoreError(
                'inserting a memory: duplicate key value violates unique constraint "memories_pkey"'
            )
        if mem.role is None and self.holder(mem.key) is not None:
            return None
        self.attach(mem, undo)
        self.event(mem, "ADD", None, mem.memory, actor, now, undo, mem.source_turn_ids)
        return mem.id

    def fill_vector(self, filled: FilledVector, undo: Undo) -> bool:
        """As PostgreSQL's fill: only a memory that still has no vector and the same text."""
        held = self.memories.get(filled.id)
        if held is None or held.hash != filled.hash:
            return False
        passages = filled.embedded.passages
        if passages and not held.passages:  # a retried job finds its passages there
            self.change(held, undo, passages=self._passages(passages, "filling a vector"))
        if held.row is not None:
            return False
        self.set_vector(held, self.vectors.unit(filled.embedded.vector, "filling a vector"), undo)
        return True

    def rewrite(
        self,
        mem: MemoryRow,
        text: str,
        hash_: str,
        vector: Any,
        now: datetime,
        undo: Undo,
        passages: Sequence[Passage] = (),
    ) -> bool:
        """New text, hash and vector (and the new text's ``passages``); False (nothing
        changed) if another current fact has them."""
        action = "updating a memory"
        check_text(action, memory=text, hash=hash_)
        unit = self.vectors.unit(vector, action)
        new_key = (*mem.key[:3], hash_)
        if mem.valid_to is None and mem.role is None and self.holder(new_key) not in (None, mem.id):
            return False
        # New text: the passages of the old one go (postgres: the trigger of migration 0026).
        kept = self._passages(passages, action) if hash_ != mem.hash else mem.passages
        self.change(
            mem, undo, memory=text, hash=hash_, terms=terms(text), updated_at=now, passages=kept
        )
        self.set_vector(mem, unit, undo)
        return True

    def version_of(self, mem: MemoryRow, now: datetime) -> MemoryRow:
        """A copy of ``mem`` as it reads now, superseded by it and closed where it opened (see
        ``postgres.consolidation._KEEP_VERSION``); the caller attaches it."""
        unit = mem.unit if mem.row is None else self.vectors.get(mem.row)
        return dataclasses.replace(
            mem,
            id=uuid.uuid4(),
            metadata=copy.deepcopy(mem.metadata),
            terms=Counter(mem.terms),
            unit=unit,
            row=None,
            valid_to=mem.valid_from,
            superseded_by=mem.id,
            updated_at=now,
            passages=(),  # as postgres' copy: the version keeps the memory's own vector only
        )

    def supersede(
        self,
        scope: Scope,
        old_id: UUID,
        new: NewMemory,
        closed_at: datetime,
        now: datetime,
        undo: Undo,
    ) -> UUID:
        """Close the old fact, write its SUPERSEDE event first (history reads in the order
        things happened), then add the successor or link to the equal fact already stored."""
        old = self.located(scope, old_id)
        self.change(old, undo, valid_to=as_utc(closed_at, now), updated_at=now)
        s = new.scope
        key = (s.user_id or "", s.agent_id or "", s.run_id or "", new.hash)
        existing = self.holder(key)
        self.event(
            old,
            "SUPERSEDE",
            old.memory,
            new.memory,
            "consolidation",
            now,
            undo,
            new.source_turn_ids,
            {"superseded_by": str(existing or new.id)},
        )
        successor = self.insert(new, "consolidation", now, undo) or existing
        assert successor is not None
        self.change(old, undo, superseded_by=successor)
        return successor

    def eligible(
        self, scope: Scope, filters: Filter | None, include_superseded: bool
    ) -> list[MemoryRow]:
        now = utc_now()
        return [
            m
            for m in self.memories.values()
            if in_scope(scope, m.scope)
            and (
                (m.valid_to is None and not m.expired(now))
                if not include_superseded
                else m.retired_at is None
            )
            and (filters is None or matches(filters, m.columns()))
        ]

    def _by_hash(
        self, scope: Scope, filters: Filter | None, include_superseded: bool
    ) -> list[MemoryRow]:
        """What a search may find, ordered by hash: equal scores then pick the same memories
        whatever order they were added in."""
        return sorted(self.eligible(scope, filters, include_superseded), key=lambda m: m.hash)

    def neighbour_words(
        self,
        scope: Scope,
        eligible: Sequence[MemoryRow],
        turns_around: TurnsAround,
        ranking: TextRanking,
    ) -> dict[UUID, Counter[str]]:
        """The words of the memories said around each of ``eligible``, as the SQL reads
        them: for each turn within ``neighbour_words_turns`` of the memory's first source
        turn in its session, the current memory of the scope whose first source turn it is
        (an episode first, then by hash), unless it has more distinct words than
        ``neighbour_words_max``; none when the weight is 0."""
        if ranking.neighbour_words_weight <= 0 or ranking.neighbour_words_turns <= 0:
            return {}
        firsts = {m.source_turn_ids[0] for m in eligible if m.source_turn_ids}
        around = turns_around(firsts, ranking.neighbour_words_turns)
        by_first: dict[int, MemoryRow] = {}
        current = self.eligible(scope, None, False)
        for mem in sorted(current, key=lambda m: (m.role is None, m.hash)):
            if mem.source_turn_ids:
                by_first.setdefault(mem.source_turn_ids[0], mem)
        words: dict[UUID, Counter[str]] = {}
        for mem in eligible:
            turns = around.get(mem.source_turn_ids[0], ()) if mem.source_turn_ids else ()
            lent: Counter[str] = Counter()
            for turn in turns:
                neighbour = by_first.get(turn)
                if neighbour is not None and len(neighbour.terms) <= ranking.neighbour_words_max:
                    lent.update(neighbour.terms.keys())
            if lent:
                words[mem.id] = lent
        return words

    def text_hits(
        self,
        scope: Scope,
        text_query: str,
        k: int,
        filters: Filter | None,
        include_superseded: bool,
        ranking: TextRanking,
        turns_around: TurnsAround,
    ) -> TextHits:
        """The ``k`` best by BM25 (exact: the PostgreSQL work caps of ``ranking`` do not apply).

        ``turns_around`` gives the turns said around each of some turns (the store's)."""
        if k <= 0:
            return TextHits([], [])
        eligible = self._by_hash(scope, filters, include_superseded)
        lexemes = sorted(terms(text_query))
        around = self.neighbour_words(scope, eligible, turns_around, ranking)
        scores = _text_scores(eligible, lexemes, ranking, around)
        # As the SQL picks its k: rounded scores, ties in hash order (the sort is stable).
        best = sorted(
            (m for m in eligible if m.id in scores),
            key=lambda m: -round(scores[m.id], TEXT_SCORE_DIGITS),
        )[:k]
        # The query's terms go along: the vector step scores every candidate on them.
        return TextHits([m.id for m in best], [scores[m.id] for m in best], lexemes)

    def vector_candidates(
        self,
        scope: Scope,
        vector: Any,
        k: int,
        filters: Filter | None,
        include_superseded: bool,
        hits: TextHits,
        ranking: TextRanking,
        turns_around: TurnsAround,
    ) -> list[RawCandidate]:
        """The ``k`` nearest by cosine and the text hits still eligible, scored on both signals.

        As PostgreSQL's default ranking (``score_all``): every candidate carries its cosine
        similarity (when it has a vector) and its text score (when it shares a word).
        """
        query = self.vectors.unit(vector, "searching memories")
        if k <= 0:
            return []
        eligible = self._by_hash(scope, filters, include_superseded)
        sims: dict[UUID, float] = {}
        nearest: list[MemoryRow] = []
        embedded = [(m, m.row) for m in eligible if m.row is not None]
        if embedded:
            values = self.vectors.similarities([row for _, row in embedded], query)
            sims = {m.id: float(v) for (m, _), v in zip(embedded, values, strict=True)}
            # stable on the hash order: which of equal neighbours make the k does not depend
            # on when they were added
            nearest = [embedded[i][0] for i in np.argsort(-values, kind="stable")[:k]]
        best, by_passage = _nearest_passages(eligible, query, k)
        for memory_id, (_, sim) in best.items():  # a long memory scores as its best passage
            sims[memory_id] = max(sims[memory_id], sim) if memory_id in sims else sim
        around = self.neighbour_words(scope, eligible, turns_around, ranking)
        scores = _text_scores(eligible, hits.lexemes, ranking, around)
        found = set(hits.ids)
        chosen = {m.id: m for m in nearest + by_passage + [m for m in eligible if m.id in found]}
        return [
            RawCandidate(
                mem.record(), sims.get(i), scores.get(i), passage=best.get(i, (None, 0.0))[0]
            )
            for i, mem in chosen.items()
        ]

    def chain_history(self, scope: Scope | None, memory_id: UUID) -> list[HistoryEvent]:
        """The memory's events, preceded by those of the facts it superseded."""
        chain = {memory_id}
        grew = True
        while grew:
            more = {m.id for m in self.memories.values() if m.superseded_by in chain} - chain
            chain |= more
            grew = bool(more)
        return [e for s, e in self.history if e.memory_id in chain and in_scope(scope, s)]

    def delete_scope(self, scope: Scope) -> int:
        removed = [m for m in self.memories.values() if in_scope(scope, m.scope)]
        for mem in removed:
            self.detach(mem, None)
        self.history = [(s, e) for s, e in self.history if not in_scope(scope, s)]
        return len(removed)


def _nearest_passages(
    eligible: Sequence[MemoryRow], query: Vector, k: int
) -> tuple[dict[UUID, tuple[PassageHit, float]], list[MemoryRow]]:
    """Each long memory's passage nearest ``query`` with its similarity, and the memories of
    the ``k`` nearest passages (as the SQL's ``pvec``)."""
    best: dict[UUID, tuple[PassageHit, float]] = {}
    ranked: list[tuple[float, int, MemoryRow]] = []
    for position, mem in enumerate(eligible):
        for hit, unit in mem.passages:
            sim = float(np.clip(float(unit @ query), -1.0, 1.0))
            ranked.append((sim, position, mem))
            if mem.id not in best or sim > best[mem.id][1]:
                best[mem.id] = (hit, sim)
    ranked.sort(key=lambda found: (-found[0], found[1]))
    return best, [mem for _, _, mem in ranked[:k]]


def _text_scores(
    eligible: Sequence[MemoryRow],
    lexemes: Sequence[str],
    ranking: TextRanking,
    around: Mapping[UUID, Counter[str]],
) -> dict[UUID, float]:
    """BM25 of every eligible memory sharing a term with the query, or whose neighbours
    (``around``) do (N: all of them)."""
    bm25 = bm25_scores(
        [m.terms for m in eligible],
        lexemes,
        ranking.k1,
        ranking.b,
        [around.get(m.id) for m in eligible],
        ranking.neighbour_words_weight,
    )
    return {m.id: s for m, s in zip(eligible, bm25, strict=True) if s is not None}
