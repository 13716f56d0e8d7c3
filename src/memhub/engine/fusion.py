"""Hybrid ranking: fuse vector similarity, full-text rank and recency into one score in [0, 1].

Pure functions over :class:`~memhub.store.records.Candidate`; the weights are data
(:class:`FusionConfig`) so the benchmark can tune them and ``docs/retrieval.md`` records why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime

from memhub.store.records import Candidate

__all__ = ["FusionConfig", "ScoredCandidate", "fuse"]


@dataclass(frozen=True)
class FusionConfig:
    """How candidates are combined.

    Attributes:
        vector_weight: Share of the score from cosine similarity.
        text_weight: Share from the full-text rank, normalised by the best text hit.
        rrf_weight: Share from reciprocal-rank fusion of the two rankings.
        rrf_k: The RRF constant.
        recency_weight: Share from recency (1 for now, halving every ``recency_half_life_days``).
        recency_half_life_days: How fast recency decays.
        candidates: How many candidates each retriever contributes, at least.
    """

    vector_weight: float = 0.5
    text_weight: float = 0.3
    rrf_weight: float = 0.2
    rrf_k: int = 60
    recency_weight: float = 0.0
    recency_half_life_days: float = 30.0
    candidates: int = 50

    def __post_init__(self) -> None:
        total = self.vector_weight + self.text_weight + self.rrf_weight + self.recency_weight
        if not math.isclose(total, 1.0, abs_tol=1e-6):
            raise ValueError(f"fusion weights must add up to 1, got {total}")


@dataclass(frozen=True)
class ScoredCandidate:
    """A candidate with its fused score."""

    candidate: Candidate
    score: float


def _recency(at: datetime, now: datetime, half_life_days: float) -> float:
    age_days = max(0.0, (now - at).total_seconds() / 86_400)
    return math.pow(0.5, age_days / half_life_days)


def fuse(candidates: list[Candidate], config: FusionConfig, now: datetime) -> list[ScoredCandidate]:
    """Score every candidate and sort best first (ties: newer first)."""
    best_text = max((c.text_score or 0.0 for c in candidates), default=0.0)
    max_rrf = 2.0 / (config.rrf_k + 1)
    scored: list[ScoredCandidate] = []
    for c in candidates:
        vector = max(0.0, c.vector_similarity or 0.0)
        text = (c.text_score or 0.0) / best_text if best_text > 0 else 0.0
        rrf = sum(1.0 / (config.rrf_k + r) for r in (c.vector_rank, c.text_rank) if r is not None)
        recency = _recency(c.record.valid_from, now, config.recency_half_life_days)
        score = (
            config.vector_weight * vector
            + config.text_weight * text
            + config.rrf_weight * rrf / max_rrf
            + config.recency_weight * recency
        )
        scored.append(ScoredCandidate(candidate=c, score=min(1.0, max(0.0, score))))
    scored.sort(key=lambda s: (s.score, s.candidate.record.valid_from), reverse=True)
    return scored
