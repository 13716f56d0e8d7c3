"""Where the time of one ``search()`` goes when its parts run as search runs them.

``bench.query`` times each part alone. Inside ``search()`` the full-text statement runs beside
the query's embedding, and on two cores the two slow each other; this module times the parts
in place, by wrapping the functions ``search()`` calls, and reports each query's critical path.

    python -m bench.search_timeline --queries 300
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench import synth
from bench.metrics import summary
from bench.profile_search import USER
from memhub import AsyncMemory, MemhubSettings
from memhub.engine import retrieve
from memhub.store.postgres import search as pg_search

#: The rows of the report, in order (milliseconds, p50 and p95 over the queries).
STEPS = (
    "search",
    "embedding, beside the text statement",
    "text statement, beside the embedding",
    "text statement ends after the embedding by",
    "vector statement",
    "after the vector statement (fusion, results)",
)


@contextmanager
def _marked(marks: dict[str, float]) -> Iterator[None]:
    """Record when the embedding and both statements start and end, for every search."""
    real_text, real_vector = pg_search.text_hits, pg_search.vector_candidates
    real_embed = getattr(retrieve, "embed_one")  # noqa: B009 - the name a search calls

    def timed(name: str, call: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            marks[f"{name} start"] = time.perf_counter()
            result = await call(*args, **kwargs)
            marks[f"{name} end"] = time.perf_counter()
            return result

        return wrapper

    def embed(embedder: Any, text: str) -> Awaitable[Any]:
        return timed("embed", lambda: real_embed(embedder, text))()

    pg_search.text_hits = timed("text", real_text)  # type: ignore[assignment]
    pg_search.vector_candidates = timed("vector", real_vector)  # type: ignore[assignment]
    setattr(retrieve, "embed_one", embed)  # noqa: B010
    try:
        yield
    finally:
        pg_search.text_hits, pg_search.vector_candidates = real_text, real_vector
        setattr(retrieve, "embed_one", real_embed)  # noqa: B010


async def measure(memory: AsyncMemory, queries: list[str]) -> dict[str, Any]:
    """Each step's p50 / p95 over ``queries``, and how often the text statement was last."""
    marks: dict[str, float] = {}
    steps: dict[str, list[float]] = {name: [] for name in STEPS}
    with _marked(marks):
        for q in queries:
            marks.clear()
            began = time.perf_counter()
            await memory.search(q, user_id=USER, limit=10)
            ended = time.perf_counter()
            ms = {key: (value - began) * 1000 for key, value in marks.items()}
            for name, value in zip(STEPS, _steps(ms, (ended - began) * 1000), strict=True):
                steps[name].append(value)
    late = sum(1 for v in steps["text statement ends after the embedding by"] if v > 0)
    return {
        "steps": {name: summary(values) for name, values in steps.items()},
        "text_last_share": late / max(len(queries), 1),
    }


def _steps(ms: dict[str, float], total: float) -> tuple[float, ...]:
    return (
        total,
        ms["embed end"] - ms["embed start"],
        ms["text end"] - ms["text start"],
        max(0.0, ms["text end"] - ms["embed end"]),
        ms["vector end"] - ms["vector start"],
        total - ms["vector end"],
    )


def markdown(result: dict[str, Any]) -> list[str]:
    """The table bench.query adds to its "Search profile" section."""
    lines = ["| inside one search() | p50 | p95 |", "|---|---|---|"]
    for name, value in result["steps"].items():
        lines.append(f"| {name} | {value['p50']:.2f} | {value['p95']:.2f} |")
    share = result["text_last_share"]
    return [*lines, "", f"The text statement ended after the embedding in {share:.0%} of searches."]


Measure = Callable[[AsyncMemory, list[str]], Awaitable[dict[str, Any]]]


async def on_query_database(home: Path, n_queries: int, measure: Measure) -> dict[str, Any]:
    """``measure`` on bench.query's database in ``home``, after 30 warm-up searches."""
    memory = AsyncMemory(settings=MemhubSettings(data_dir=home, worker="off"))
    try:
        asked = [q for _, q in synth.queries(n_queries + 30, users=1)]
        for q in asked[:30]:  # warm up: model, pool, buffers
            await memory.search(q, user_id=USER, limit=10)
        return await measure(memory, asked[30:])
    finally:
        await memory.aclose()


def main() -> None:
    from bench.query import DEFAULT_HOME

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME, help="bench.query's database")
    args = parser.parse_args()
    result = asyncio.run(on_query_database(args.home, args.queries, measure))
    print(json.dumps(result, indent=2))
    print("\n".join(markdown(result)))


if __name__ == "__main__":
    main()
