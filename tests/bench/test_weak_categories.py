"""Unit tests for bench.weak_categories' pure parts: the sessions spread and the per-fold fit."""

from __future__ import annotations

from bench.weak_categories import _fitted_per_fold, _spread
from tests.records import memory_record

from memhub.engine.fusion import ScoredCandidate
from memhub.store.records import Candidate


def _scored(session: str, score: float) -> ScoredCandidate:
    record = memory_record(memory=f"{session} {score}", metadata={"session": session})
    return ScoredCandidate(Candidate(record, score, 1, None, None, None), score)


def test_the_spread_keeps_the_fused_order_at_weight_zero() -> None:
    fused = [_scored("s1", 0.9), _scored("s1", 0.8), _scored("s2", 0.7)]
    assert _spread(fused, 0.0, k=3) == fused


def test_the_spread_lets_another_session_pass_a_close_second_of_the_same_session() -> None:
    first, same, other = _scored("s1", 0.9), _scored("s1", 0.8), _scored("s2", 0.75)
    assert _spread([first, same, other], 0.1, k=2) == [first, other]
    assert _spread([first, same, other], 0.01, k=2) == [first, same]


def test_each_fold_takes_the_weight_best_on_the_other_conversations() -> None:
    asked = [("a", object()), ("a", object()), ("b", object())]
    per_weight = {
        0.0: [(1, 0.0), (1, 0.0), (1, 1.0)],  # best on b
        0.5: [(1, 1.0), (1, 1.0), (1, 0.0)],  # best on a, and overall
    }
    outside, chosen, best_all = _fitted_per_fold(asked, per_weight)  # type: ignore[arg-type]
    # Fold a (held out) is fitted on b: weight 0.0, which scores 0 on a; fold b the reverse.
    assert chosen == [0.0, 0.5]
    assert outside == [(1, 0.0), (1, 0.0), (1, 0.0)]
    assert best_all == 0.5
