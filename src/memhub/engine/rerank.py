"""A second ranking pass over search's fused top candidates, by a :class:`Reranker`.

``search(..., rerank=True)`` (Mem0 2.x's flag) hands the best ``candidates`` fused results to
the configured reranker (:mod:`memhub.rerank`, built once per services), which scores each
(query, memory) pair; those results are re-ordered by that score and the rest keep their
fused order after them. Off unless a reranker is configured (``MEMHUB_RERANKER``): no trained
cross-encoder ships in a package memhub can depend on, and the measured cost and gain are in
docs/retrieval.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from memhub.engine.fusion import ScoredCandidate
from memhub.errors import ProviderOutputError, UsageError
from memhub.rerank import Reranker

__all__ = ["chosen_reranker", "rerank_scored"]


async def rerank_scored(
    reranker: Reranker | None, query: str, scored: Sequence[ScoredCandidate], candidates: int
) -> list[ScoredCandidate]:
    """Re-order the best ``candidates`` of ``scored`` by the reranker; the rest follow.

    With no reranker, ``scored`` comes back as it is.

    Scores stay in [0, 1] and keep the returned order: a reranked result's score is its
    relevance (passed through a logistic when the reranker returns logits), and a result
    after the reranked ones keeps its fused score, capped at the last reranked score. Ties
    keep the fused order, so the ranking stays deterministic.
    """
    head, tail = list(scored[:candidates]), list(scored[candidates:])
    if reranker is None or not head:
        return [*head, *tail]
    relevance = await reranker.score(query, [s.candidate.record.memory for s in head])
    if len(relevance) != len(head):
        raise ProviderOutputError(f"the reranker returned {len(relevance)} scores for {len(head)}")
    squash = any(not 0.0 <= r <= 1.0 for r in relevance)
    values = [_logistic(r) if squash else r for r in relevance]
    order = sorted(range(len(head)), key=lambda i: (-values[i], i))
    ranked = [replace(head[i], score=values[i]) for i in order]
    floor = ranked[-1].score
    return ranked + [replace(s, score=min(s.score, floor)) for s in tail]


def chosen_reranker(rerank: bool | None, configured: Reranker | None) -> Reranker | None:
    """The reranker a search uses: Mem0's flag over the configured one (None: no pass).

    Raises:
        UsageError: ``rerank=True`` and no reranker is configured.
    """
    if rerank is False:
        return None
    if rerank and configured is None:
        raise UsageError(
            "rerank=True but no reranker is configured: set MEMHUB_RERANKER (cross-encoder, "
            "tei, cohere, vllm) and MEMHUB_RERANKER_MODEL / MEMHUB_RERANKER_BASE_URL"
        )
    return configured


def _logistic(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(min(value, 50.0), -50.0)))
