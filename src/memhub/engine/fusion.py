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

from memhub.store.records import DEFAULT_TEXT_RANKING, Candidate, TextRanking

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
    """

    # Tuned on LoCoMo's dev conversations (docs/retrieval.md, `python -m bench.ablation`).
    vector_weight: float = 0.49
    text_weight: float = 0.21
    rrf_weight: float = 0.3
    rrf_k: int = 5
    recency_weight: float = 0.0
    recency_half_life_days: float = 30.0
    candidates: int = 20
    text: TextRanking = DEFAULT_TEXT_RANKING

    def __post_init__(self) -> None:
        weights = (self.vector_weight, self.text_weight, self.rrf_weight, self.recency_weight)
        if any(w < 0 for w in weights):
            raise ValueError(f"fusion weights must not be negative, got {weights}")
        total = sum(weights)
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"fusion weights must add up to 1, got {total}")
        if self.rrf_k < 0 or self.recency_half_life_days <= 0 or self.candidates < 1:
            raise ValueError("rrf_k >= 0, recency_half_life_days > 0 and candidates >= 1 expected")

    @classmethod
    def only(cls, signal: Signal) -> FusionConfig:
        """All the weight on one signal (the ablation's single-retriever rows)."""
        return cls(
            vector_weight=float(signal == "vector"),
            text_weight=float(signal == "text"),
            rrf_weight=float(signal == "rrf"),
            recency_weight=float(signal == "recency"),
        )

    def with_recency(self, weight: float, half_life_days: float) -> FusionConfig:
        """This config with ``weight`` moved to recency, the other weights scaled to make room."""
        if not 0.0 <= weight < 1.0:
            raise ValueError(f"recency weight must be in [0, 1), got {weight}")
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


#: Named configurations: ``default`` (best recall@10 on the dev data), ``compact`` (more weight
#: on meaning and rank agreement: a little less recall for shorter top results), ``semantic``
#: and ``keyword`` (one retriever), ``recent`` (default plus a 30-day recency half-life).
PRESETS: dict[str, FusionConfig] = {
    "default": FusionConfig(),
    "compact": FusionConfig(vector_weight=0.4, text_weight=0.1, rrf_weight=0.5, rrf_k=5),
    "semantic": FusionConfig.only("vector"),
    "keyword": FusionConfig.only("text"),
    "recent": FusionConfig().with_recency(0.2, 30.0),
}


def _recency(at: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now - at).total_seconds() / 86_400)
    return math.pow(0.5, age_days / half_life_days)


def fuse(candidates: list[Candidate], config: FusionConfig, now: datetime) -> list[ScoredCandidate]:
    """Score every candidate and sort best first (ties: newer first)."""
    best_text = max((c.text_score or 0.0 for c in candidates), default=0.0)
    rrf_k = config.rrf_k
    max_rrf = 2.0 / (rrf_k + 1)
    w_vec, w_txt, w_rrf = config.vector_weight, config.text_weight, config.rrf_weight
    w_rec, half_life = config.recency_weight, config.recency_half_life_days
    scored: list[ScoredCandidate] = []
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
        scored.append(ScoredCandidate(candidate=c, score=min(1.0, max(0.0, score))))
    scored.sort(key=lambda s: (s.score, s.candidate.record.valid_from), reverse=True)
    return scored
