"""What the words said around a memory cost a search, timed against the search without them.

On LoCoMo's dev conversations (kept, as ``bench.session_spread --keep DIR`` keeps them, or
ingested here as ``bench.loo`` ingests them), every category 1-4 question is searched twice
through the public ``Memory.search()``, with ``neighbour_words_weight`` at its default and at 0,
in alternating order, so the machine's drift hits both. Prints each one's p50 / p95 in ms,
recall@10 and the top 10's tokens (four characters a token, as ``max_tokens`` counts them);
with ``--lme``, the same for the LongMemEval questions that ``bench.session_spread`` kept,
recall being their evidence turns in the top 10; with ``--scale HOME``, search times alone on
``bench.query``'s database of 100,000 synthetic memories of one user, each stored with the
turn before it (docs/retrieval.md, "The words said around a memory").

    python -m bench.neighbour_words --keep /tmp/spread
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bench.metrics import recall_at_k, summary
from bench.pg import BenchPostgres

# A question: the user it is asked of, its words, and what finds its evidence in a top 10.
Asked = tuple[str, str, Callable[[Sequence[Mapping[str, Any]]], float]]


def locomo_asked() -> list[Asked]:
    from bench.locomo import RECALL_CATEGORIES, default_data_path, load_locomo

    def scorer(evidence: Sequence[str]) -> Callable[[Sequence[Mapping[str, Any]]], float]:
        return lambda hits: recall_at_k(
            [str(h["metadata"].get("dia_id", "")) for h in hits], evidence, 10
        )

    return [
        (f"locomo-{c.sample_id}", q.question, scorer(q.evidence))
        for c in load_locomo(default_data_path())
        for q in c.questions
        if q.category in RECALL_CATEGORIES and q.evidence
    ]


def lme_asked(keep: Path) -> list[Asked]:
    """The LongMemEval dev questions ``bench.session_spread`` ingested in ``keep``."""
    from bench.longmemeval import default_data_path, parse_item

    where = json.loads((keep / "lme-where.json").read_text(encoding="utf-8"))
    items = [parse_item(r) for r in json.loads(default_data_path().read_text(encoding="utf-8"))]

    def scorer(evidence: Sequence[str]) -> Callable[[Sequence[Mapping[str, Any]]], float]:
        return lambda hits: recall_at_k([h["id"] for h in hits], evidence, 10)

    return [
        (f"lme-{i.question_id}", i.question, scorer([m for m, (_, a) in found.items() if a]))
        for i in items
        if (found := where.get(i.question_id)) and any(a for _, a in found.values())
    ]


def compare(url: str, asked: Sequence[Asked]) -> dict[str, Any]:
    from memhub import PRESETS, MemhubSettings, Memory
    from memhub.engine.text import estimate_tokens
    from memhub.store.ranking import TextRanking

    default = PRESETS["default"]
    configs = {
        "with the words said around": default,
        "without": replace(default, text=TextRanking(neighbour_words_weight=0.0)),
    }
    settings = MemhubSettings.from_env(database_url=url, worker="off")
    memories = {name: Memory(settings=settings, fusion=c) for name, c in configs.items()}
    times: dict[str, list[float]] = {name: [] for name in configs}
    recall: dict[str, list[float]] = {name: [] for name in configs}
    tokens: dict[str, list[int]] = {name: [] for name in configs}
    try:
        for n, (user, question, found) in enumerate(asked):
            for name in list(configs)[:: 1 if n % 2 else -1]:
                began = time.perf_counter()
                hits = memories[name].search(question, user_id=user, limit=10)["results"]
                times[name].append((time.perf_counter() - began) * 1000)
                recall[name].append(found(hits))
                tokens[name].append(sum(estimate_tokens(h["memory"]) for h in hits))
    finally:
        for memory in memories.values():
            memory.close()
    return {
        name: {
            "search_ms": summary(times[name]),
            "recall@10": sum(r) / len(r),
            "tokens@10": sum(tokens[name]) / len(tokens[name]),
        }
        for name, r in recall.items()
    }


async def at_scale(memory: Any, queries: list[str]) -> dict[str, Any]:
    """Search p50 / p95 with and without the words said around, alternated query by query, on
    ``bench.search_timeline.on_query_database``'s memory."""
    from bench.profile_search import USER
    from memhub import PRESETS, SearchConfig
    from memhub.store.ranking import TextRanking

    default = PRESETS["default"]
    configs = {
        "with the words said around": SearchConfig(default),
        "without": SearchConfig(replace(default, text=TextRanking(neighbour_words_weight=0.0))),
    }
    times: dict[str, list[float]] = {name: [] for name in configs}
    for n, query in enumerate(queries):
        for name in list(configs)[:: 1 if n % 2 else -1]:
            memory.search_config = configs[name]
            began = time.perf_counter()
            await memory.search(query, user_id=USER, limit=10)
            times[name].append((time.perf_counter() - began) * 1000)
    return {name: summary(t) for name, t in times.items()}


def main(argv: list[str] | None = None) -> int:
    from bench.locomo import default_data_path, load_locomo
    from bench.loo import _ingest

    parser = argparse.ArgumentParser(prog="python -m bench.neighbour_words", description=__doc__)
    parser.add_argument("--keep", type=Path, default=None, help="where the databases are kept")
    parser.add_argument(
        "--lme", action="store_true", help="also the LongMemEval questions session_spread kept"
    )
    parser.add_argument("--scale", type=Path, default=None, help="bench.query's database")
    args = parser.parse_args(argv)
    if args.scale is not None:
        from bench.search_timeline import on_query_database

        print(json.dumps(asyncio.run(on_query_database(args.scale, 400, at_scale)), indent=2))
        return 0
    if args.keep is None:
        parser.error("--keep DIR (or --scale HOME)")
    postgres = BenchPostgres(args.keep / "pg", keep=True)
    try:
        url, created = postgres.kept_database("locomo")
        if created:
            _ingest(url, load_locomo(default_data_path()))
        figures = {"locomo": compare(url, locomo_asked())}
        if args.lme:
            figures["longmemeval"] = compare(postgres.kept_database("lme")[0], lme_asked(args.keep))
        print(json.dumps(figures, indent=2))
    finally:
        postgres.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
