"""How the full-text side of a search ranks its candidates: :class:`TextRanking`.

Its own module because both back ends and the engine's fusion read it, and the store's
records are only the vocabulary it is passed with (``memhub.store.records`` re-exports it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memhub.errors import UsageError

__all__ = ["DEFAULT_TEXT_RANKING", "TextRanking"]


@dataclass(frozen=True)
class TextRanking:
    """How the full-text side ranks its candidates (the benchmark's ablation varies it).

    ``bm25`` is Okapi BM25 with per-scope document frequencies computed at query time: every
    query lexeme fetches at most ``term_cap + 1`` matching memories of the scope, so a common
    word costs bounded work at any scope size. A word with more than ``term_cap`` matches is
    common: it does not bring candidates (which ones it would bring depends on the physical
    order of rows), it only adds its weight, from a lower-bound frequency, to the candidates the
    other words and the vector side found. Term frequency is taken as 1: memories are short
    and rarely repeat a content word. ``ts_rank`` is PostgreSQL's rank over the OR of
    the query's words (no IDF), kept for comparison.

    Attributes:
        method: ``bm25`` or ``ts_rank``.
        k1: BM25 term-saturation constant (only matters through length normalisation here).
        b: BM25 length normalisation, 0 (none) to 1 (full).
        term_cap: Memories fetched per query lexeme, at most.
        scope_cap: The scope's size is counted up to this; larger scopes count as this size.
        score_all: Give every candidate both signals (its cosine similarity, and its text score
            if it matches any query word), not only the retriever that found it; with False a
            vector-only candidate has no text score even when it matches some words. With
            ``ts_rank`` on PostgreSQL only the text hits carry a text score.
        neighbour_words_weight: With ``bm25``, a memory's words include those of the
            memories said around it: the current memory of each of the
            ``neighbour_words_turns`` turns before and after its first source turn in the
            conversation's session. Each such word counts this share of its weight where
            the memory's own words do not hold it, and counts in its length: an answer is
            often found by the words of the question before it, or of the turns just around
            it. 0: a memory's own words only.
        neighbour_words_max: A neighbour of more distinct words than this lends none (a long
            message said beside a short reply would drown the reply's own words).
        neighbour_words_turns: How many turns on each side lend their words.
    """

    method: Literal["bm25", "ts_rank"] = "bm25"
    k1: float = 1.2
    b: float = 0.75
    term_cap: int = 100
    scope_cap: int = 1000
    score_all: bool = True
    # docs/retrieval.md, "The words said around a memory": LoCoMo and LongMemEval's dev sets
    neighbour_words_weight: float = 0.3
    neighbour_words_max: int = 64
    neighbour_words_turns: int = 2

    def __post_init__(self) -> None:
        for name in ("term_cap", "scope_cap", "neighbour_words_max", "neighbour_words_turns"):
            if getattr(self, name) < 0:
                raise UsageError(f"TextRanking.{name} must be 0 or more")


DEFAULT_TEXT_RANKING = TextRanking()
