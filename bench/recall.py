"""Recall workload: ingest each LoCoMo conversation as one user, then rank evidence per question.

Per question it records the ranked ``dia_id``s (top 20) and the tokens of the top-10 texts; the
metrics are computed from those records by :mod:`bench.metrics`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from bench.locomo import RECALL_CATEGORIES, Conversation
from bench.metrics import DEFAULT_KS, QuestionResult, aggregate, evidence_ranks, latency_summary
from bench.systems import MemorySystem

TOP_N = max(DEFAULT_KS)


def ingest(system: MemorySystem, conversation: Conversation) -> list[float]:
    """Add every turn as one memory of user ``locomo-<sample_id>``; return the add latencies."""
    user_id = f"locomo-{conversation.sample_id}"
    latencies: list[float] = []
    for turn in conversation.turns:
        metadata = {"dia_id": turn.dia_id, "speaker": turn.speaker, "session": turn.session}
        start = time.perf_counter()
        system.add(turn.ingest_text, user_id=user_id, metadata=metadata, timestamp=turn.date)
        latencies.append(time.perf_counter() - start)
    return latencies


def run_recall(
    system: MemorySystem,
    conversations: Sequence[Conversation],
    *,
    count_tokens: Callable[[str], int],
) -> dict[str, Any]:
    """Ingest, flush, ask every category 1-4 question; return metrics and raw per-question ranks."""
    add_latencies: list[float] = []
    started = time.perf_counter()
    for conversation in conversations:
        add_latencies += ingest(system, conversation)
    system.flush()
    ingest_seconds = time.perf_counter() - started

    search_latencies: list[float] = []
    results: list[QuestionResult] = []
    records: list[dict[str, Any]] = []
    for conversation in conversations:
        user_id = f"locomo-{conversation.sample_id}"
        for question in conversation.questions:
            if question.category not in RECALL_CATEGORIES:
                continue
            start = time.perf_counter()
            hits = system.search(question.question, user_id=user_id, k=TOP_N)
            search_latencies.append(time.perf_counter() - start)
            ranked = tuple(str(h.metadata.get("dia_id", "")) for h in hits)
            tokens = sum(count_tokens(h.text) for h in hits[:10])
            result = QuestionResult(question.category, ranked, question.evidence, tokens)
            results.append(result)
            records.append(asdict(result) | {"ranks": evidence_ranks(ranked, question.evidence)})

    questions = [q for c in conversations for q in c.questions if q.category in RECALL_CATEGORIES]
    return {
        "metrics": aggregate(results),
        "turns": len(add_latencies),
        "questions": len(results),
        "questions_without_evidence": sum(1 for q in questions if not q.evidence),
        "unmatched_evidence_ids": sum(len(q.unmatched) for q in questions),
        "ingest_seconds": ingest_seconds,
        "ingest_turns_per_s": len(add_latencies) / ingest_seconds if ingest_seconds else 0.0,
        "add_latency": latency_summary(add_latencies),
        "search_latency": latency_summary(search_latencies),
        "per_question": records,
    }
