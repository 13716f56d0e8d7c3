"""A search's retrieval: the full-text probe beside the query's embedding, the vector step,
one ranking, fusion, one telling of each turn (a fact takes no turn's place), then the
caller's cut-offs (threshold, token budget, limit).

The back ends return what they found with its raw scores; everything that orders candidates
(rounding, ties, ranks, fusion) is computed here, once, the same way for every back end.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial

from memhub.embed.base import Embedder, embed_one
from memhub.engine.excerpt import excerpt
from memhub.engine.fusion import ScoredCandidate, fuse
from memhub.engine.rerank import rerank_scored
from memhub.engine.search_config import SearchConfig
from memhub.engine.text import CHARS_PER_TOKEN, within_budget
from memhub.errors import UsageError
from memhub.filters import EPISODE, KIND, And, Condition, Filter
from memhub.rerank import Reranker
from memhub.store.protocol import MemoryStore, Vector
from memhub.store.records import (
    DEFAULT_TEXT_RANKING,
    TEXT_SCORE_DIGITS,
    Candidate,
    MemoryRecord,
    PassageHit,
    RawCandidate,
    Scope,
    TextRanking,
)
from memhub.telemetry import operation

__all__ = [
    "Search",
    "candidates",
    "drawn_from_turns",
    "rank",
    "retrieve",
    "returned_text",
    "told_once",
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

    How it is ranked and how much it returns is the :class:`SearchConfig` passed beside it.
    """

    query: str
    scope: Scope
    limit: int
    filters: Filter | None = None
    include_superseded: bool = False
    threshold: float | None = None

    def __post_init__(self) -> None:
        # Refused before anything runs.
        if self.threshold is not None and not 0.0 <= self.threshold <= 1.0:
            raise UsageError(f"threshold must be between 0 and 1, got {self.threshold}")


async def retrieve(
    store: MemoryStore,
    embedder: Embedder,
    search: Search,
    config: SearchConfig,
    *,
    reranker: Reranker | None = None,
    settle: Callable[[], Awaitable[object]] | None = None,
) -> list[ScoredCandidate]:
    """The memories relevant to ``search.query``, best first, with their scores in [0, 1],
    ranked and cut as ``config`` says (``reranker``: the reranker ``config.rerank`` chose).

    ``settle``, when given, is awaited once the query is embedded and before the store is
    read: the caller's wait for its own writes to be searchable by meaning.

    Facts drawn from turns do not compete with what was said: the episodes are ranked among
    themselves, as the transcript alone would rank them, and a fact can only tell one of
    their places (:func:`told_once`). So a model's facts change how a found turn is told,
    never which turns are found.
    """
    now = datetime.now(UTC)
    fusion = config.fusion
    # An explicit threshold (Mem0's) replaces the cut-off relative to the best score.
    cut_off = search.threshold is None
    with operation("search"):
        # Not awaited here: the store's full-text probe runs while the query is embedded.
        # A future, not a coroutine: a second fetch below may need the vector again.
        embedding = asyncio.ensure_future(embed_one(embedder, search.query))
        vector: Vector | Awaitable[Vector] = embedding
        if settle is not None:
            # The wait starts once the query is embedded: a process's first search loads the
            # model (the worker's too), and must not spend its wait on that.
            vector = await embedding
            await settle()
        k = max(search.limit, fusion.candidates)

        fetch = partial(
            _fetched,
            store,
            search.scope,
            search.query,
            k=k,
            include_superseded=search.include_superseded,
            ranking=fusion.text,
        )
        found = await fetch(vector, filters=search.filters)
        drawn = [f for f in found if drawn_from_turns(f.record)]
        if drawn and len(drawn) < len(found):
            # Both kinds matched. The facts took candidate places that the episodes would
            # have had in a search of the transcript alone: fetch those places again.
            said = await fetch(embedding, filters=_episodes_only(search.filters))
            stated = [
                f for f in found if f.record.kind != EPISODE and not drawn_from_turns(f.record)
            ]
            episodes = fuse(rank([*said, *stated]), fusion, now, cut_off=cut_off)
            scored = told_once(episodes, fuse(rank(drawn), fusion, now, cut_off=cut_off))
        else:
            scored = fuse(rank(found), fusion, now, cut_off=cut_off)
    scored = await rerank_scored(reranker, search.query, scored, config.rerank_candidates)
    return _kept(scored, search, config.max_tokens, config.excerpt_tokens)


def _episodes_only(filters: Filter | None) -> Filter:
    episodes = Condition(KIND, "eq", EPISODE)
    return episodes if filters is None else And((filters, episodes))


def drawn_from_turns(record: MemoryRecord) -> bool:
    """Whether ``record`` is a fact drawn from turns (by a model), which tells those turns
    again, rather than what was said (an episode) or a fact stated directly (no turns)."""
    return record.kind != EPISODE and bool(record.source_turn_ids)


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
    """Up to ``k`` nearest memories by vector and up to ``k`` best by full text, ranked."""
    return rank(
        await _fetched(store, scope, text_query, vector, k, filters, include_superseded, ranking)
    )


async def _fetched(
    store: MemoryStore,
    scope: Scope,
    text_query: str,
    vector: Vector | Awaitable[Vector],
    k: int,
    filters: Filter | None,
    include_superseded: bool,
    ranking: TextRanking,
) -> list[RawCandidate]:
    """What :func:`candidates` ranks, as the store found it.

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
    return await store.vector_candidates(
        scope, query, k, filters, include_superseded, hits, ranking
    )


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


def told_once(
    episodes: Sequence[ScoredCandidate], facts: Iterable[ScoredCandidate]
) -> list[ScoredCandidate]:
    """The places of ``episodes`` (ranked among themselves), each told by its episode or by a
    fact drawn from that turn (``facts`` ranked among themselves, best first).

    A fact takes the place of the episode of a turn it cites (of several, the best placed)
    when it scores at least as high there and no better fact took it first; it is given that
    place's score, so the order and the scores are the transcript's. A place holds one
    telling, so a turn's facts and its episode never fill the results with the same content
    twice, and a fact whose turns have no place is not returned (a search with
    ``{"kind": "fact"}`` ranks the facts alone). A fact names the episodes it stands for in
    ``metadata.episode_ids``.
    """
    place: dict[int, int] = {}
    for n, scored in enumerate(episodes):
        for turn in scored.candidate.record.source_turn_ids:
            place.setdefault(turn, n)
    tellers: dict[int, ScoredCandidate] = {}
    for fact in facts:
        places = [place[t] for t in fact.candidate.record.source_turn_ids if t in place]
        if not places:
            continue
        n = min(places)
        if n not in tellers and fact.score >= episodes[n].score:
            tellers[n] = replace(fact, score=episodes[n].score)
    return [tellers.get(n, scored) for n, scored in enumerate(episodes)]


def returned_text(candidate: Candidate) -> str:
    """What a result returns of ``candidate``: its passage nearest the query, if it has
    passages (a text longer than the embedder's window), else its whole text; either cut to
    its excerpt when :func:`excerpted` set one."""
    passage, text = candidate.passage, candidate.record.memory
    return text if passage is None else text[passage.start : passage.end]


def excerpted(scored: ScoredCandidate, query: str, max_tokens: int) -> ScoredCandidate:
    """``scored`` returning at most ``max_tokens`` (estimated) of its text: the sentences
    that share most of the query's words (:func:`memhub.engine.excerpt.excerpt`), found as a
    passage is, with ``get(id)`` for the whole."""
    candidate = scored.candidate
    text = returned_text(candidate)
    span = excerpt(text, query, max_tokens * CHARS_PER_TOKEN)
    if span is None:
        return scored
    passage = candidate.passage or PassageHit(0, 0, len(candidate.record.memory))
    cut = PassageHit(passage.ordinal, passage.start + span.start, passage.start + span.end)
    return replace(scored, candidate=replace(candidate, passage=cut))


def _kept(
    scored: Iterable[ScoredCandidate],
    search: Search,
    max_tokens: int | None,
    excerpt_tokens: int,
) -> list[ScoredCandidate]:
    """What a search returns of the ranked candidates: over the threshold, each cut to its
    excerpt, within the budget, at most ``limit``."""
    threshold = search.threshold
    # Compared as returned (memory.results.memory_item rounds to 6 decimals), so a threshold
    # equal to a returned score keeps that result.
    fresh: Iterable[ScoredCandidate] = (
        s for s in scored if threshold is None or round(s.score, 6) >= threshold
    )
    if excerpt_tokens:
        fresh = (excerpted(s, search.query, excerpt_tokens) for s in fresh)
    if max_tokens is not None:
        fresh = within_budget(((returned_text(s.candidate), s) for s in fresh), max_tokens)
    return list(itertools.islice(fresh, search.limit))
