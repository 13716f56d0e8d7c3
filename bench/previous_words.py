"""What the words said just before cost a search, timed against the search without them.

On LoCoMo's dev conversations (kept, as ``bench.session_spread --keep DIR`` keeps them, or
ingested here as ``bench.loo`` ingests them), every category 1-4 question is searched twice
through the public ``Memory.search()``, with ``previous_words_weight`` at its default and at 0,
in alternating order, so the machine's drift hits both. Prints each one's p50 / p95 in ms and
recall@10 (docs/retrieval.md, "The words said just before").

    python -m bench.previous_words --keep /tmp/spread
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.metrics import recall_at_k, summary
from bench.pg import BenchPostgres


def compare(url: str) -> dict[str, Any]:
    from bench.locomo import RECALL_CATEGORIES, default_data_path, load_locomo
    from memhub import PRESETS, MemhubSettings, Memory
    from memhub.store.ranking import TextRanking

    default = PRESETS["default"]
    configs = {
        "with the words said before": default,
        "without": replace(default, text=TextRanking(previous_words_weight=0.0)),
    }
    settings = MemhubSettings.from_env(database_url=url, worker="off")
    memories = {name: Memory(settings=settings, fusion=c) for name, c in configs.items()}
    times: dict[str, list[float]] = {name: [] for name in configs}
    recall: dict[str, list[float]] = {name: [] for name in configs}
    asked = [
        (f"locomo-{c.sample_id}", q)
        for c in load_locomo(default_data_path())
        for q in c.questions
        if q.category in RECALL_CATEGORIES and q.evidence
    ]
    try:
        for n, (user, q) in enumerate(asked):
            for name in list(configs)[:: 1 if n % 2 else -1]:
                began = time.perf_counter()
                hits = memories[name].search(q.question, user_id=user, limit=10)["results"]
                times[name].append((time.perf_counter() - began) * 1000)
                ranked = [str(h["metadata"].get("dia_id", "")) for h in hits]
                recall[name].append(recall_at_k(ranked, q.evidence, 10))
    finally:
        for memory in memories.values():
            memory.close()
    return {
        name: {"search_ms": summary(times[name]), "recall@10": sum(r) / len(r)}
        for name, r in recall.items()
    }


def main(argv: list[str] | None = None) -> int:
    from bench.locomo import default_data_path, load_locomo
    from bench.loo import _ingest

    parser = argparse.ArgumentParser(prog="python -m bench.previous_words", description=__doc__)
    parser.add_argument("--keep", type=Path, required=True, help="where the databases are kept")
    args = parser.parse_args(argv)
    postgres = BenchPostgres(args.keep / "pg", keep=True)
    try:
        url, created = postgres.kept_database("locomo")
        if created:
            _ingest(url, load_locomo(default_data_path()))
        print(json.dumps(compare(url), indent=2))
    finally:
        postgres.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
