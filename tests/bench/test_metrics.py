"""Unit tests for bench.metrics: recall@k, hit@k, MRR, percentiles, aggregation."""

import math

import pytest
from bench.metrics import (
    QuestionResult,
    aggregate,
    evidence_ranks,
    hit_at_k,
    latency_summary,
    percentile,
    recall_at_k,
    reciprocal_rank,
)

RANKED = ("D1:1", "D1:2", "D1:1", "D2:5", "D3:3")


def test_recall_counts_distinct_results_only() -> None:
    # the duplicate D1:1 must not push D2:5 out of the top 3
    assert recall_at_k(RANKED, ["D2:5", "D9:9"], 3) == 0.5
    assert recall_at_k(RANKED, ["D2:5", "D9:9"], 2) == 0.0
    assert recall_at_k(RANKED, ["D1:1", "D1:2"], 1) == 0.5


def test_recall_without_evidence_is_an_error() -> None:
    with pytest.raises(ValueError):
        recall_at_k(RANKED, [], 5)


def test_hit_and_reciprocal_rank() -> None:
    assert hit_at_k(RANKED, ["D3:3"], 3) == 0.0
    assert hit_at_k(RANKED, ["D3:3"], 4) == 1.0
    assert reciprocal_rank(RANKED, ["D2:5", "D3:3"]) == pytest.approx(1 / 3)
    assert reciprocal_rank(RANKED, ["D7:1"]) == 0.0


def test_evidence_ranks_are_one_based_and_none_when_missing() -> None:
    assert evidence_ranks(RANKED, ["D1:2", "D2:5", "D8:8"]) == {"D1:2": 2, "D2:5": 3, "D8:8": None}


def test_percentile_matches_linear_interpolation() -> None:
    values = [1.0, 2.0, 3.0, 4.0]
    assert percentile(values, 50) == 2.5
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile([5.0], 99) == 5.0
    assert math.isnan(percentile([], 50))


def test_latency_summary_is_in_milliseconds() -> None:
    summary = latency_summary([0.001, 0.002, 0.003])
    assert summary["p50_ms"] == pytest.approx(2.0)
    assert summary["n"] == 3
    assert summary["max_ms"] == pytest.approx(3.0)


def test_aggregate_per_category_and_overall() -> None:
    results = [
        QuestionResult(1, ("a", "b"), ("a",), tokens_top10=10),
        QuestionResult(1, ("b", "a"), ("a", "c"), tokens_top10=20),
        QuestionResult(2, ("x",), ("y",), tokens_top10=30),
        QuestionResult(4, ("x",), (), tokens_top10=99),  # no evidence: skipped
    ]
    table = aggregate(results, ks=(1, 2))
    assert set(table) == {"1", "2", "overall"}
    assert table["1"]["questions"] == 2
    assert table["1"]["recall@1"] == 0.5  # 1.0 and 0.0
    assert table["1"]["recall@2"] == 0.75  # 1.0 and 0.5
    assert table["1"]["mrr"] == 0.75  # 1 and 1/2
    assert table["overall"]["hit@2"] == pytest.approx(2 / 3)
    assert table["overall"]["tokens_top10"] == 20
