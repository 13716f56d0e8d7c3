"""Hybrid ranking: fuse vector similarity, full-text rank and recency into one score in [0, 1].

Pure functions over :class:`~memhub.store.records.Candidate`; the weights are data
(:class:`FusionConfig`, with named :data:`PRESETS`) so the benchmark can tune them and
``docs/retrieval.md`` records why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from memhub.errors import UsageError
from memhub.store.records import DEFAULT_TEXT_RANKING, Candidate, MemoryRecord, TextRanking

__all__ = ["PRESETS", "FusionConfig", "ScoredCandidate", "fuse"]

Signal = Literal["vector", "text", "rrf", "recency"]


@dataclass(frozen=True)
class FusionConfig:
    """How candidates are combined into one score in [0, 1].

    The score is a weighted sum of signals that each lie in [0, 1], with weights adding up to 1.

    Attributes:
        vector_weight: Share of the score from cosine similarity (negative similarity counts 0).
        text_weight: Share from the full-text score, divided by the best text score of the query.
        rrf_weight: Share from reciprocal-rank fusion of the two rankings, divided by its maximum
            (first in both).
        rrf_k: The RRF constant: larger flattens the difference between ranks.
        recency_weight: Share from recency (1 for now, halving every ``recency_half_life_days``).
        recency_half_life_days: How fast recency decays.
        candidates: How many candidates each retriever contributes, at least.
        text: How the store ranks full-text candidates (BM25 parameters and work caps).
        previous_turn_weight: How much of the score of the turn said just before a memory (when
            it is also a candidate) the memory gains: an answer often follows the question's
            words. When a sum exceeds 1, every score of the query is divided by the largest
            sum, so scores stay in [0, 1] and keep their order.
        next_turn_weight: The same for the turn said just after.
        min_score_ratio: Drop candidates scoring below this share of the query's best score
            (0, the default, keeps them all): the ``compact`` preset sets 0.5, which keeps
            the top results short at little cost in recall, but can drop a memory that
            matters and matches the query weakly.
        long_assistant_discount: The share taken off the own score of an assistant message
            longer than ``long_message_chars``, before the neighbour turns: a long answer
            (advice, a recipe, a list) matches a question by its topic over many sentences
            and crowds out of the top results the person's own turns, where what is known
            about them was said (0: none).
        long_message_chars: How long an assistant message must be to be discounted: the
            length search cuts a result to its excerpt (192 tokens of four characters).
    """

    # Tuned on LoCoMo's dev conversations (docs/retrieval.md, `python -m bench.ablation`;
    # the neighbour weights and candidates out of sample with `python -m bench.loo`).
    vector_weight: float = 0.49
    text_weight: float = 0.21
    rrf_weight: float = 0.3
    rrf_k: int = 5
    recency_weight: float = 0.0
    recency_half_life_days: float = 30.0
    # 100 since issue 37: with all-mpnet-base-v2 it finds 1 point more of LoCoMo's evidence out
    # of sample (multi-hop and open-domain most) for about 3 ms at 100k memories
    # (docs/retrieval.md, "100 candidates per retriever").
    candidates: int = 100
    text: TextRanking = DEFAULT_TEXT_RANKING
    previous_turn_weight: float = 0.3
    next_turn_weight: float = 0.2
    # `python -m bench.loo` (docs/retrieval.md): at 0.5 the top 10 is about 8 % shorter for
    # 0.4 points of recall on LoCoMo, so the compact preset uses it.
    min_score_ratio: float = 0.0
    # Fitted on LongMemEval's dev half a, 0.3 raised the held-out half b's evidence turns in
    # the top 10 from 0.828 to 0.875; no LoCoMo turn is this long, so nothing of it moves
    # (docs/retrieval.md, "Long assistant messages").
    long_assistant_discount: float = 0.3
    long_message_chars: int = 768

    def __post_init__(self) -> None:
        weights = (self.vector_weight, self.text_weight, self.rrf_weight, self.recency_weight)
        if any(w < 0 for w in weights):
            raise UsageError(f"fusion weights must not be negative, got {weights}")
        total = sum(weights)
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise UsageError(f"fusion weights must add up to 1, got {total}")
        if self.rrf_k < 0 or self.recency_half_life_days <= 0 or self.candidates < 1:
            raise UsageError("rrf_k >= 0, recency_half_life_days > 0 and candidates >= 1 expected")
        if self.previous_turn_weight < 0 or self.next_turn_weight < 0:
            raise UsageError("neighbour turn weights must not be negative")
        if not 0.0 <= self.min_score_ratio <= 1.0:
            raise UsageError(f"min_score_ratio must be in [0, 1], got {self.min_score_ratio}")
        if not 0.0 <= self.long_assistant_discount < 1.0 or self.long_message_chars < 0:
            raise UsageError(
                "long_assistant_discount in [0, 1) and long_message_chars >= 0 expected, got "
                f"{self.long_assistant_discount} and {self.long_message_chars}"
            )

    @classmethod
    def only(cls, signal: Signal) -> FusionConfig:
        """All the weight on one signal (the ablation's single-retriever rows).

        No neighbour turns, no discount of long assistant messages and no cut-off relative to
        the best score: the retriever alone.
        """
        return cls(
            vector_weight=float(signal == "vector"),
            text_weight=float(signal == "text"),
            rrf_weight=float(signal == "rrf"),
            recency_weight=float(signal == "recency"),
            previous_turn_weight=0.0,
            next_turn_weight=0.0,
            min_score_ratio=0.0,
            long_assistant_discount=0.0,
        )

    def cut_at(self, min_score_ratio: float) -> FusionConfig:
        """This config with the cut-off relative to the best score at ``min_score_ratio``."""
        if isinstance(min_score_ratio, bool) or not isinstance(min_score_ratio, int | float):
            raise UsageError(f"min_score_ratio must be a number, got {min_score_ratio!r}")
        return replace(self, min_score_ratio=float(min_score_ratio))

    def with_recency(self, weight: float, half_life_days: float) -> FusionConfig:
        """This config with ``weight`` moved to recency, the other weights scaled to make room."""
        if not 0.0 <= weight < 1.0:
            raise UsageError(f"recency weight must be in [0, 1), got {weight}")
        rest = self.vector_weight + self.text_weight + self.rrf_weight
        scale = (1.0 - weight) / rest if rest else 0.0
        return replace(
            self,
            vector_weight=self.vector_weight * scale,
            text_weight=self.text_weight * scale,
            rrf_weight=self.rrf_weight * scale,
            recency_weight=weight,
            recency_half_life_days=half_life_days,
        )


@dataclass(frozen=True)
class ScoredCandidate:
    """A candidate with its fused score."""

    candidate: Candidate
    score: float


#: Named configurations: ``default`` (best recall@10 on the dev data), ``compact`` (the default
#: leaving out results below half of the best score: shorter top results), ``semantic``
#: and ``keyword`` (one retriever), ``recent`` (default plus a 30-day recency half-life).
PRESETS: dict[str, FusionConfig] = {
    "default": FusionConfig(),
    "compact": FusionConfig(min_score_ratio=0.5),
    "semantic": FusionConfig.only("vector"),
    "keyword": FusionConfig.only("text"),
    "recent": FusionConfig().with_recency(0.2, 30.0),
}


def _recency(at: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now - at).total_seconds() / 86_400)
    return math.pow(0.5, age_days / half_life_days)


def fuse(
    candidates: list[Candidate], config: FusionConfig, now: datetime, *, cut_off: bool = True
) -> list[ScoredCandidate]:
    """Score every candidate and sort best first (ties: newer first, then candidates' order).

    With ``cut_off``, candidates scoring below ``config.min_score_ratio`` times the best score
    are left out.
    """
    own = _own_scores(candidates, config, now)
    # Before the neighbours: the turn said after a long answer inherits the discounted score,
    # or it would outrank the answer that matched (tests/server/test_passages_rest.py).
    if config.long_assistant_discount:
        kept = 1.0 - config.long_assistant_discount
        longest = config.long_message_chars
        own = [
            s * kept if _long_assistant_message(c.record, longest) else s
            for c, s in zip(candidates, own, strict=True)
        ]
    w_prev, w_next = config.previous_turn_weight, config.next_turn_weight
    if w_prev or w_next:
        own = _with_neighbours(candidates, own, w_prev, w_next)
        # Dividing, not capping: capped sums would tie at 1 and lose their order.
        top = max(own, default=0.0)
        if top > 1.0:
            own = [s / top for s in own]
    scored = [
        ScoredCandidate(candidate=c, score=min(1.0, max(0.0, s)))
        for c, s in zip(candidates, own, strict=True)
    ]
    scored.sort(key=lambda s: (s.score, s.candidate.record.valid_from), reverse=True)
    if cut_off and config.min_score_ratio and scored:
        floor = scored[0].score * config.min_score_ratio
        return [s for s in scored if s.score >= floor]
    return scored


def _long_assistant_message(record: MemoryRecord, longest: int) -> bool:
    return record.role == "assistant" and len(record.memory) > longest


def _with_neighbours(
    candidates: list[Candidate], own: list[float], w_prev: float, w_next: float
) -> list[float]:
    """Each score plus the weighted scores of the candidates said just before and after it."""
    # A memory's last source turn identifies it as the "previous turn" of the next one.
    by_turn = {
        c.record.source_turn_ids[-1]: n
        for n, c in enumerate(candidates)
        if c.record.source_turn_ids
    }
    previous = [
        by_turn.get(c.previous_turn_id) if c.previous_turn_id is not None else None
        for c in candidates
    ]
    following: dict[int, int] = {}
    for n, p in enumerate(previous):
        if p is not None and p != n:
            following.setdefault(p, n)
    return [
        s
        + (w_prev * own[p] if (p := previous[n]) is not None and p != n else 0.0)
        + (w_next * own[f] if (f := following.get(n)) is not None else 0.0)
        for n, s in enumerate(own)
    ]


def _own_scores(candidates: list[Candidate], config: FusionConfig, now: datetime) -> list[float]:
    best_text = max((c.text_score or 0.0 for c in candidates), default=0.0)
    rrf_k = config.rrf_k
    max_rrf = 2.0 / (rrf_k + 1)
    w_vec, w_txt, w_rrf = config.vector_weight, config.text_weight, config.rrf_weight
    w_rec, half_life = config.recency_weight, config.recency_half_life_days
    scored: list[float] = []
    for c in candidates:
        score = 0.0
        if w_vec:
            score += w_vec * max(0.0, c.vector_similarity or 0.0)
        if w_txt and best_text > 0:
            score += w_txt * (c.text_score or 0.0) / best_text
        if w_rrf:
            rrf = 0.0 if c.vector_rank is None else 1.0 / (rrf_k + c.vector_rank)
            rrf += 0.0 if c.text_rank is None else 1.0 / (rrf_k + c.text_rank)
            score += w_rrf * rrf / max_rrf
        if w_rec:
            score += w_rec * _recency(c.record.valid_from, now, half_life)
        scored.append(score)
    return scored
