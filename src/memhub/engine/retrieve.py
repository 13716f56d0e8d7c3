"""A search's retrieval: the full-text probe beside the query's embedding, the vector step,
one ranking, fusion, one telling of each turn, then the caller's cut-offs (threshold, token
budget, limit).

The back ends return what they found with its raw scores; everything that orders candidates
(rounding, ties, ranks, fusion) is computed here, once, the same way for every back end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from memhub.embed.base import Embedder, embed_one
from memhub.engine.fusion import FusionConfig, ScoredCandidate, fuse
from memhub.engine.rerank import rerank_scored
from memhub.engine.text import within_budget
from memhub.errors import UsageError
from memhub.filters import EPISODE, Filter
from memhub.rerank import Reranker
from memhub.store.protocol import MemoryStore, Vector
from memhub.store.records import (
    DEFAULT_TEXT_RANKING,
    TEXT_SCORE_DIGITS,
    Candidate,
    MemoryRecord,
    RawCandidate,
    Scope,
    TextRanking,
)
from memhub.telemetry import operation

__all__ = [
    "Search",
    "Tellings",
    "candidates",
    "one_telling",
    "rank",
    "retrieve",
    "returned_text",
]


@dataclass(frozen=True)
class Search:
    """One search, its arguments checked by the caller except the cut-offs, checked here.

    Attributes:
        query: What to look for.
        scope: Whose memories.
        limit: Most results.
        filters: Narrow the memories searched.
        include_superseded: Also search facts that were replaced.
        threshold: Smallest score kept, in [0, 1]; given, it replaces the cut-off relative to
            the best score (``FusionConfig.min_score_ratio``).
        max_tokens: Cap on the results' total length, estimated at four characters a token.
    """

    query: str
    scope: Scope
    limit: int
    filters: Filter | None = None
    include_superseded: bool = False
    threshold: float | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        # Refused before anything runs.
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise UsageError(f"threshold must be between 0 and 1, got {self.threshold}")
        tokens = self.max_tokens
        if tokens is not None and (isinstance(tokens, bool) or tokens < 1):
            raise UsageError(f"max_tokens must be a positive integer, got {tokens!r}")


async def retrieve(
    store: MemoryStore,
    embedder: Embedder,
    search: Search,
    fusion: FusionConfig,
    *,
    reranker: Reranker | None = None,
    rerank_candidates: int = 20,
    settle: Callable[[], Awaitable[object]] | None = None,
) -> list[ScoredCandidate]:
    """The memories relevant to ``search.query``, best first, with their scores in [0, 1].

    ``settle``, when given, is awaited once the query is embedded and before the store is
    read: the caller's wait for its own writes to be searchable by meaning.
    """
    with operation("search"):
        # Not awaited here: the store's full-text probe runs while the query is embedded.
        embedding = embed_one(embedder, search.query)
        vector: Vector | Awaitable[Vector] = embedding
        if settle is not None:
            # The wait starts once the query is embedded: a process's first search loads the
            # model (the worker's too), and must not spend its wait on that.
            vector = await embedding
            await settle()
        k = max(search.limit, fusion.candidates)
        found = await candidates(
            store,
            search.scope,
            search.query,
            vector,
            k,
            search.filters,
            search.include_superseded,
            fusion.text,
        )
    # An explicit threshold (Mem0's) replaces the cut-off relative to the best score.
    scored = fuse(found, fusion, datetime.now(UTC), cut_off=search.threshold is None)
    scored = await rerank_scored(reranker, search.query, scored, rerank_candidates)
    return _kept(scored, search)


async def candidates(
    store: MemoryStore,
    scope: Scope,
    text_query: str,
    vector: Vector | Awaitable[Vector],
    k: int,
    filters: Filter | None,
    include_superseded: bool,
    ranking: TextRanking = DEFAULT_TEXT_RANKING,
) -> list[Candidate]:
    """Up to ``k`` nearest memories by vector and up to ``k`` best by full text, ranked.

    ``vector`` may still be computing (an awaitable): the full-text probe, which needs no
    vector, runs meanwhile (PostgreSQL: its own statement on its own connection), a measured
    latency win (``python -m bench.search_timeline``). If the vector fails, the probe is
    cancelled and the search fails with the vector's error, leaving nothing running.
    """
    if isinstance(vector, Awaitable):
        probe = asyncio.ensure_future(
            store.text_hits(scope, text_query, k, filters, include_superseded, ranking)
        )
        try:
            query = await vector
        except BaseException:
            probe.cancel()
            await asyncio.gather(probe, return_exceptions=True)
            raise
        hits = await probe
    else:
        query = vector
        hits = await store.text_hits(scope, text_query, k, filters, include_superseded, ranking)
    found = await store.vector_candidates(
        scope, query, k, filters, include_superseded, hits, ranking
    )
    return rank(found)


def rank(found: Iterable[RawCandidate]) -> list[Candidate]:
    """Rank what a back end found by each signal, ties broken by the memories' texts.

    The candidates come back ordered by their texts' hashes, an order fusion keeps among equal
    scores: the result depends only on the stored texts and vectors, not on the order they
    were added, the back end, or the plan PostgreSQL picks.
    """
    # Ordered by hash first, so equal signals rank in an order that depends only on the texts
    # (the id settles two versions of one text).
    ordered = sorted(found, key=lambda f: (f.record.hash, str(f.record.id)))
    # BM25 sums float weights in whatever order it meets them (an SQL aggregate, a Python
    # set), so equal scores can differ in the last bits: rounded, they tie, and the hash
    # order decides. The SQL picks its best k by the same rule.
    text = [_rounded(f.text_score) for f in ordered]
    vector_ranks = _ranks([f.vector_similarity for f in ordered])
    text_ranks = _ranks(text)
    return [
        Candidate(
            record=f.record,
            vector_similarity=f.vector_similarity,
            vector_rank=vector_ranks[n],
            text_score=text[n],
            text_rank=text_ranks[n],
            previous_turn_id=f.previous_turn_id,
            passage=f.passage,
        )
        for n, f in enumerate(ordered)
    ]


def _rounded(score: float | None) -> float | None:
    return None if score is None else round(score, TEXT_SCORE_DIGITS)


def _ranks(values: Sequence[float | None]) -> list[int | None]:
    """Each value's 1-based rank, largest first (None: unranked); ties keep the list order."""
    present = sorted(((v, n) for n, v in enumerate(values) if v is not None), key=lambda p: -p[0])
    ranks: list[int | None] = [None] * len(values)
    for rank_, (_, n) in enumerate(present, start=1):
        ranks[n] = rank_
    return ranks


def one_telling(ranked: Iterable[ScoredCandidate]) -> list[ScoredCandidate]:
    """``ranked`` without a fact and its own episode both saying the same thing.

    Facts are added beside the episodes they were extracted from, so a search would
    otherwise return "Ada is allergic to shellfish." and "I am severely allergic to
    shellfish." one after the other. The rule is :class:`Tellings`'; a search applies it
    together with its cut-offs (:func:`_kept`), so only what is returned tells a turn.
    """
    tellings = Tellings()
    kept: list[ScoredCandidate] = []
    for scored in ranked:
        if not tellings.retold(scored.candidate.record):
            tellings.told(scored.candidate.record)
            kept.append(scored)
    return kept


class Tellings:
    """The turns the results kept so far tell, going down the ranking.

    - an episode is dropped when a kept fact above cites its turn and no other (that fact
      stands for it, and names it in ``metadata.episode_ids``);
    - a fact is dropped when the episodes of all the turns it cites are kept above.

    A fact citing several turns never removes their episodes (one fact drawn from 24 turns
    does not tell what each of them said); facts never remove facts (two facts of one turn
    say different things), episodes never remove episodes, and a fact citing no turn is
    kept. So a search restricted to one kind (``{"kind": "fact"}``) is unchanged by it.
    """

    def __init__(self) -> None:
        self.episodes: set[int] = set()  # turns whose episode is kept
        self.facts: set[int] = set()  # turns a kept fact citing only that turn stands for

    def retold(self, record: MemoryRecord) -> bool:
        """Whether ``record`` would say again what a kept result says."""
        turns = set(record.source_turn_ids)
        if record.kind == EPISODE:
            return bool(turns & self.facts)
        return bool(turns) and turns <= self.episodes

    def told(self, record: MemoryRecord) -> None:
        """``record`` is kept: the turns it tells."""
        turns = set(record.source_turn_ids)
        if record.kind == EPISODE:
            self.episodes |= turns
        elif len(turns) == 1:
            self.facts |= turns


def returned_text(candidate: Candidate) -> str:
    """What a result returns of ``candidate``: its passage nearest the query, if it has
    passages (a text longer than the embedder's window), else its whole text."""
    passage, text = candidate.passage, candidate.record.memory
    return text if passage is None else text[passage.start : passage.end]


def _kept(scored: Iterable[ScoredCandidate], search: Search) -> list[ScoredCandidate]:
    """What a search returns of the ranked candidates: over the threshold, told once
    (:class:`Tellings`), within the budget, at most ``limit``.

    A result the budget skips tells nothing, so the fact or episode below it that says the
    same may still be returned.
    """
    threshold = search.threshold
    tellings = Tellings()
    # Compared as returned (memory.results.memory_item rounds to 6 decimals), so a threshold
    # equal to a returned score keeps that result.
    fresh: Iterable[ScoredCandidate] = (
        s
        for s in scored
        if (threshold is None or round(s.score, 6) >= threshold)
        and not tellings.retold(s.candidate.record)
    )
    if search.max_tokens is not None:
        # lazily: each result is told below before the next one is looked at
        fresh = within_budget(((returned_text(s.candidate), s) for s in fresh), search.max_tokens)
    kept: list[ScoredCandidate] = []
    for result in fresh:
        if len(kept) >= search.limit:
            break
        tellings.told(result.candidate.record)
        kept.append(result)
    return kept
