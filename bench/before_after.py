"""Add and search latency of two source trees, alternated in one run on one machine.

A refactoring must not cost the hot path: this runs the same public-API workload against each
tree in turn (a subprocess with that tree's ``src`` first on ``PYTHONPATH``), several rounds,
alternating, so that load drifting over the run falls on both alike. Each round, on a fresh
embedded database: ``--adds`` sequential ``AsyncMemory.add(infer=False)`` with the worker off
(the acknowledged write alone); then, with the worker on, ``--memories`` synthetic turns added
and waited for, and ``--searches`` sequential searches (the query's embedding included).

    git worktree add /tmp/before a5519a3
    .venv/bin/python -m bench.before_after --tree before=/tmp/before --tree after=.

The embedder is MiniLM by default (``--embedder``): the engine's path is what a refactoring
changes, and the smaller model's query embedding leaves more of the time to it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.metrics import latency_summary

# Runs inside the tree's interpreter path: only memhub's public API, so old trees run it too.
_ROUND = r"""
import asyncio, json, sys, tempfile, time
from pathlib import Path
from memhub import AsyncMemory, MemhubSettings

adds, memories, searches, embedder = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                      sys.argv[4])
TOPICS = ["tea", "hiking", "the dentist", "a new job", "my sister", "jazz", "Lisbon", "bread"]

async def main():
    home = Path(tempfile.mkdtemp(prefix="bench-ba-"))
    out = {"add": [], "search": []}
    settings = MemhubSettings(data_dir=home, worker="off", embedder=embedder)
    async with AsyncMemory(settings=settings) as memory:
        await memory.add("warm up", user_id="alone", infer=False)
        for i in range(adds):
            start = time.perf_counter()
            await memory.add(f"turn {i} about {TOPICS[i % 8]}", user_id="alone", infer=False)
            out["add"].append(time.perf_counter() - start)
    settings = MemhubSettings(data_dir=home, embedder=embedder)
    async with AsyncMemory(settings=settings) as memory:
        for i in range(memories):
            text = f"I talked about {TOPICS[i % 8]} on day {i} with friend {i % 97}"
            await memory.add(text, user_id="u", infer=False, wait=(i == memories - 1))
        await memory.search("warm up", user_id="u")
        for i in range(searches):
            start = time.perf_counter()
            await memory.search(f"what did I say about {TOPICS[i % 8]}?", user_id="u")
            out["search"].append(time.perf_counter() - start)
    print(json.dumps(out))

asyncio.run(main())
"""


def _round(tree: Path, adds: int, memories: int, searches: int, embedder: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    done = subprocess.run(
        [sys.executable, "-c", _ROUND, str(adds), str(memories), str(searches), embedder],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH, twice or more")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--adds", type=int, default=1000)
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--embedder", default="minilm")
    args = parser.parse_args()
    trees = [(name, Path(path).resolve()) for name, path in (t.split("=", 1) for t in args.tree)]
    samples: dict[str, dict[str, list[float]]] = {n: {"add": [], "search": []} for n, _ in trees}
    for number in range(1, args.rounds + 1):
        for name, path in trees:
            got = _round(path, args.adds, args.memories, args.searches, args.embedder)
            for part in ("add", "search"):
                samples[name][part] += got[part]
                summary = latency_summary(got[part])
                print(f"round {number} {name:8} {part:6} {json.dumps(summary)}", flush=True)
    for name, _ in trees:
        for part in ("add", "search"):
            print(
                f"all rounds {name:8} {part:6} {json.dumps(latency_summary(samples[name][part]))}"
            )


if __name__ == "__main__":
    main()
