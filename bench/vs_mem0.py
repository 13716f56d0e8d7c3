"""memhub against Mem0 with the same embedder, in one run on one machine: the ratios.

Pairs: memhub's default (all-mpnet-base-v2 int8 on onnxruntime) against Mem0 2.2.x with
all-mpnet-base-v2 on sentence-transformers (its ``huggingface`` embedder given the local
directory joined from the same part packages, :func:`bench.embedding.mpnet_path`), and
memhub with ``MEMHUB_EMBEDDER=minilm`` against Mem0 with all-MiniLM-L6-v2 (the pair of the
earlier reports). Each system gets a fresh database of one embedded PostgreSQL, then LoCoMo
dev conversations as in ``bench.recall``: every turn added one at a time as its speaker's
line (``infer=False``; memhub through ``memhub.Memory`` with one ``memhub worker`` process,
as the hot path runs it), then every question of categories 1-4 searched (k=10).

Measured: acknowledged add p50/p95 (the ``add`` call), ingest until searchable (turns over
the time from the first add until everything is searchable), search p50/p95; after one
warm-up add and search on another user, so model loading is not counted. The load average
before and after each system is recorded: on a shared machine read the ratios, not the times.

``python -m bench.vs_mem0 [--conversations 1] [--pairs mpnet,minilm] [--json FILE]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import machine
from bench.locomo import RECALL_CATEGORIES, Conversation, default_data_path, load_locomo
from bench.metrics import percentile
from bench.pg import BenchPostgres
from bench.systems import Mem0System, MemhubSystem, MemorySystem

#: pair -> (memhub's environment, how Mem0 embeds)
PAIRS = {"mpnet": ({}, "mpnet"), "minilm": ({"MEMHUB_EMBEDDER": "minilm"}, "minilm")}


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` set in os.environ while a system is built (its worker process inherits them)."""
    before = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _open(kind: str, pair: str, db_url: str) -> MemorySystem:
    memhub_env, mem0_model = PAIRS[pair]
    if kind == "memhub":
        with _environment(memhub_env):
            return MemhubSystem(db_url, external_worker=True, name=f"memhub ({pair})")
    from bench.embedding import MPNET_DIMENSIONS, mpnet_path
    from bench.mem0_runner import mem0_config

    if mem0_model == "mpnet":
        system = Mem0System(mem0_config(db_url, model=mpnet_path(), dimensions=MPNET_DIMENSIONS))
    else:
        system = Mem0System(mem0_config(db_url))
    system.name = f"mem0 ({pair})"
    return system


def measure(system: MemorySystem, conversations: list[Conversation]) -> dict[str, Any]:
    """Add every turn, wait until searchable, search every question: the figures."""
    system.add("warm-up turn", user_id="warm-up", metadata={})
    system.flush()
    system.search("warm-up", user_id="warm-up", k=10)
    adds: list[float] = []
    began = time.perf_counter()
    for conversation in conversations:
        for turn in conversation.turns:
            start = time.perf_counter()
            system.add(
                turn.ingest_text,
                user_id=conversation.sample_id,
                metadata={"dia_id": turn.dia_id},
                timestamp=turn.date,
            )
            adds.append(time.perf_counter() - start)
    system.flush()
    ingest = time.perf_counter() - began
    searches: list[float] = []
    for conversation in conversations:
        for question in conversation.questions:
            if question.category not in RECALL_CATEGORIES:
                continue
            start = time.perf_counter()
            system.search(question.question, user_id=conversation.sample_id, k=10)
            searches.append(time.perf_counter() - start)
    return {
        "turns": len(adds),
        "add_ms": _percentiles(adds),
        "ingest_turns_per_s": len(adds) / ingest,
        "searches": len(searches),
        "search_ms": _percentiles(searches),
    }


def _percentiles(seconds: list[float]) -> dict[str, float]:
    return {f"p{q}": percentile([s * 1000 for s in seconds], q) for q in (50, 95)}


def ratios(memhub: dict[str, Any], mem0: dict[str, Any]) -> dict[str, float]:
    """How many times better memhub is (above 1: memhub ahead), per figure."""
    return {
        "add_p50_speedup": mem0["add_ms"]["p50"] / memhub["add_ms"]["p50"],
        "ingest_ratio": memhub["ingest_turns_per_s"] / mem0["ingest_turns_per_s"],
        "search_p50_ratio": memhub["search_ms"]["p50"] / mem0["search_ms"]["p50"],
        "search_p95_ratio": memhub["search_ms"]["p95"] / mem0["search_ms"]["p95"],
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    """Markdown: each pair's figures side by side, and memhub's ratio to Mem0."""
    lines = [
        "| embedder | figure | memhub | Mem0 | ratio |",
        "|---|---|---|---|---|",
    ]
    for pair, found in results.items():
        ours, theirs, ratio = found["memhub"], found["mem0"], found["ratios"]
        rows = [
            ("acknowledged add p50 ms", "add_ms", "p50", f"{ratio['add_p50_speedup']:.1f}x faster"),
            ("ingest until searchable, turns/s", "ingest_turns_per_s", None, ""),
            ("search p50 ms", "search_ms", "p50", f"{ratio['search_p50_ratio']:.2f}x"),
            ("search p95 ms", "search_ms", "p95", f"{ratio['search_p95_ratio']:.2f}x"),
        ]
        for label, key, sub, note in rows:
            a = ours[key][sub] if sub else ours[key]
            b = theirs[key][sub] if sub else theirs[key]
            note = note or f"{ratio['ingest_ratio']:.2f}x"
            lines.append(f"| {pair} | {label} | {a:.1f} | {b:.1f} | {note} |")
    return "\n".join(lines)


def run(pairs: list[str], conversations: list[Conversation]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-vs-mem0-") as scratch:
        pg = BenchPostgres(Path(scratch) / "pg")
        try:
            for pair in pairs:
                found: dict[str, Any] = {}
                for kind in ("memhub", "mem0"):
                    system = _open(kind, pair, pg.create_database(f"{kind}_{pair}"))
                    load_before = os.getloadavg()
                    try:
                        found[kind] = measure(system, conversations)
                    finally:
                        system.close()
                    found[kind]["load"] = [load_before, os.getloadavg()]
                    print(system.name, json.dumps(found[kind]), flush=True)
                found["ratios"] = ratios(found["memhub"], found["mem0"])
                results[pair] = found
        finally:
            pg.close()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.vs_mem0", description=__doc__)
    parser.add_argument("--locomo", type=Path, default=default_data_path())
    parser.add_argument("--conversations", type=int, default=1, help="LoCoMo dev conversations")
    parser.add_argument("--pairs", default="mpnet,minilm", help=f"of {', '.join(PAIRS)}")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args(argv)
    pairs = [p.strip() for p in args.pairs.split(",") if p.strip()]
    unknown = sorted(set(pairs) - set(PAIRS))
    if unknown:
        raise SystemExit(f"unknown pairs: {', '.join(unknown)}")
    described = machine.describe()
    conversations = load_locomo(args.locomo)[: args.conversations]
    results = run(pairs, conversations)
    described["load_after"] = os.getloadavg()
    print(machine.summary(described))
    print(table(results))
    if args.json is not None:
        args.json.write_text(json.dumps({"machine": described, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
