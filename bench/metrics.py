"""Pure retrieval and latency metrics: evidence recall@k, hit@k, MRR, percentiles, aggregation.

No I/O and no third-party imports, so the unit tests run anywhere in milliseconds.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

DEFAULT_KS: tuple[int, ...] = (1, 3, 5, 10, 20)


def dedupe(ranked: Iterable[str]) -> list[str]:
    """Keep the first occurrence of each id, in rank order."""
    return list(dict.fromkeys(ranked))


def evidence_ranks(ranked: Sequence[str], evidence: Iterable[str]) -> dict[str, int | None]:
    """1-based rank at which each evidence id comes back, or None if it does not."""
    position = {item: i + 1 for i, item in enumerate(dedupe(ranked))}
    return {e: position.get(e) for e in evidence}


def recall_at_k(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """Share of the evidence ids found in the first ``k`` distinct results."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("recall is undefined without evidence")
    return len(wanted.intersection(dedupe(ranked)[:k])) / len(wanted)


def hit_at_k(ranked: Sequence[str], evidence: Iterable[str], k: int) -> float:
    """1.0 if any evidence id is in the first ``k`` distinct results, else 0.0."""
    return 1.0 if set(evidence).intersection(dedupe(ranked)[:k]) else 0.0


def reciprocal_rank(ranked: Sequence[str], evidence: Iterable[str]) -> float:
    """1 / rank of the first evidence id returned, 0.0 if none is."""
    wanted = set(evidence)
    for i, item in enumerate(dedupe(ranked)):
        if item in wanted:
            return 1.0 / (i + 1)
    return 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) with linear interpolation, as numpy's default method."""
    if not values:
        return math.nan
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100.0
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def summary(values: Sequence[float]) -> dict[str, float]:
    """Count, p50, p95 (nearest rank, no interpolation) and mean of milliseconds."""
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "p50": ordered[len(ordered) // 2],
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "mean": statistics.fmean(ordered),
    }


def latency_summary(seconds: Sequence[float]) -> dict[str, float]:
    """p50/p95/p99/mean/max in milliseconds and the sample count."""
    ms = [s * 1000.0 for s in seconds]
    return {
        "n": float(len(ms)),
        "p50_ms": percentile(ms, 50),
        "p95_ms": percentile(ms, 95),
        "p99_ms": percentile(ms, 99),
        "mean_ms": sum(ms) / len(ms) if ms else math.nan,
        "max_ms": max(ms) if ms else math.nan,
    }


@dataclass(frozen=True, slots=True)
class QuestionResult:
    """What one system returned for one question."""

    category: int
    ranked: tuple[str, ...]
    evidence: tuple[str, ...]
    tokens_top10: int = 0


def score_question(result: QuestionResult, ks: Sequence[int] = DEFAULT_KS) -> dict[str, float]:
    """All per-question metrics, keyed ``recall@k``, ``hit@k``, ``mrr`` and ``tokens_top10``."""
    scores = {f"recall@{k}": recall_at_k(result.ranked, result.evidence, k) for k in ks}
    scores |= {f"hit@{k}": hit_at_k(result.ranked, result.evidence, k) for k in ks}
    scores["mrr"] = reciprocal_rank(result.ranked, result.evidence)
    scores["tokens_top10"] = float(result.tokens_top10)
    return scores


def aggregate(
    results: Iterable[QuestionResult], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, dict[str, float]]:
    """Mean of every metric per category (keys ``"1"``..``"4"``) and ``"overall"``.

    Questions without evidence are skipped: recall is undefined for them. Each group also
    carries ``questions``, its count.
    """
    groups: dict[str, list[Mapping[str, float]]] = defaultdict(list)
    for result in results:
        if not result.evidence:
            continue
        scores = score_question(result, ks)
        groups[str(result.category)].append(scores)
        groups["overall"].append(scores)
    return {
        group: {
            "questions": float(len(rows)),
            **{key: sum(r[key] for r in rows) / len(rows) for key in rows[0]},
        }
        for group, rows in sorted(groups.items())
    }
