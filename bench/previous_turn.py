"""Search with the previous turn stored (migration 0018) against looking it up, alternated.

Each query is searched twice in one process on ``bench.query``'s database, once reading
``memories.previous_turn_id`` and once with the per-candidate lookup search ran before 0018,
in alternating order, so the machine's drift hits both. Both must return the same results.

    python -m bench.previous_turn --queries 400
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from typing import Any

from psycopg import sql

from bench.metrics import summary
from bench.profile_search import USER
from bench.search_timeline import on_query_database
from memhub import AsyncMemory
from memhub.store.postgres import search as pg_search
from memhub.store.postgres.memories import previous_turn

VARIANTS = {
    "stored": pg_search._PREVIOUS_TURN,
    "looked up": previous_turn(sql.SQL("m.source_turn_ids[1]")),  # search before 0018
}


async def compare(memory: AsyncMemory, queries: list[str]) -> dict[str, Any]:
    """Per variant p50 / p95 of ``search()`` in ms, and how many queries' results differed."""
    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    differed = 0
    try:
        for n, q in enumerate(queries):
            found = {}
            for name in list(VARIANTS)[:: 1 if n % 2 else -1]:
                pg_search._PREVIOUS_TURN = VARIANTS[name]
                began = time.perf_counter()
                results = (await memory.search(q, user_id=USER, limit=10))["results"]
                times[name].append((time.perf_counter() - began) * 1000)
                found[name] = [(r["id"], r["score"]) for r in results]
            differed += len({json.dumps(v) for v in found.values()}) > 1
    finally:
        pg_search._PREVIOUS_TURN = VARIANTS["stored"]
    return {"search": {k: summary(v) for k, v in times.items()}, "differed": differed}


def main() -> None:
    from bench.query import DEFAULT_HOME

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME, help="bench.query's database")
    args = parser.parse_args()
    result = on_query_database(args.home, args.queries, compare)
    print(json.dumps(asyncio.run(result), indent=2))


if __name__ == "__main__":
    main()
