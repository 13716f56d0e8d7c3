"""Per-query latency at 100k memories of one user: embedding, SQL, search(), engine overhead.

Reuses the database :mod:`bench.profile_search` builds once in ``--home`` (or builds it), then
reports each part alone, clients in parallel (with and without a worker ingesting), and where
the SQL's time goes (EXPLAIN ANALYZE per CTE). Parts are timed alternately, so load hits all.

    python -m bench.query --memories 100000 --home /tmp/memhub-query --json query.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from pgvector.psycopg import register_vector

from bench import search_timeline, synth
from bench.metrics import summary
from bench.profile_search import USER, build
from memhub import AsyncMemory, MemhubSettings
from memhub.engine.fusion import FusionConfig, fuse
from memhub.engine.retrieve import rank
from memhub.memory.results import memory_item
from memhub.memory.services import Services
from memhub.store.postgres import search as pg_search
from memhub.store.records import Scope

LIMIT = 10
INGEST_USER = "bench-ingest"


async def _ms(call: Callable[[], Awaitable[object]]) -> float:
    began = time.perf_counter()
    await call()
    return (time.perf_counter() - began) * 1000


#: What sequential() times; each SQL part includes its pool checkout.
PARTS = (
    "embedding",
    "pool checkout",
    "text statement",
    "vector statement",
    "fusion + results",
    "search",
)


async def _checkout(database: Any) -> None:
    async with database.connection():
        pass


async def sequential(memory: AsyncMemory, services: Services, queries: list[str]) -> dict[str, Any]:
    """Embedding alone, each SQL statement alone, search(): one query at a time, interleaved."""
    times: dict[str, list[float]] = {name: [] for name in PARTS}
    k = max(LIMIT, memory.search_config.fusion.candidates)
    database = services.store.database  # type: ignore[attr-defined]
    scope, ranking = Scope(user_id=USER), memory.search_config.fusion.text
    for q in queries:
        vector = (await services.embedder.embed([q]))[0]
        times["embedding"].append(await _ms(lambda q=q: services.embedder.embed([q])))
        times["pool checkout"].append(await _ms(lambda: _checkout(database)))
        began = time.perf_counter()
        async with database.connection() as conn:
            hits = await pg_search.text_hits(conn, scope, q, k, None, False, ranking)
        times["text statement"].append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        async with database.connection() as conn:
            candidates = await pg_search.vector_candidates(
                conn, scope, vector, k, None, False, hits, ranking
            )
        times["vector statement"].append((time.perf_counter() - began) * 1000)
        began = time.perf_counter()
        scored = fuse(rank(candidates), memory.search_config.fusion, datetime.now(UTC))
        [memory_item(s.candidate.record, s.score) for s in scored[:LIMIT]]
        times["fusion + results"].append((time.perf_counter() - began) * 1000)
        times["search"].append(await _ms(lambda q=q: memory.search(q, user_id=USER, limit=LIMIT)))
    result: dict[str, Any] = {name: summary(values) for name, values in times.items()}
    result["overhead_p95_ms"] = result["search"]["p95"] - result["embedding"]["p50"]
    result["embedder_qps"] = 1000 / result["embedding"]["mean"]
    return result


async def clients(memory: AsyncMemory, queries: list[str], n: int) -> dict[str, Any]:
    """``n`` concurrent callers sharing the queries: throughput and latency."""
    pending = iter(queries)
    latencies: list[float] = []

    async def caller() -> None:
        for q in pending:
            latencies.append(await _ms(lambda q=q: memory.search(q, user_id=USER, limit=LIMIT)))

    began = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(n)))
    seconds = time.perf_counter() - began
    return {"clients": n, "searches_per_s": len(queries) / seconds, **summary(latencies)}


async def while_ingesting(
    settings: MemhubSettings, queries: list[str], n: int, fusion: FusionConfig | None = None
) -> dict[str, Any]:
    """``n`` clients searching while an in-process worker ingests another user's turns."""
    writer = AsyncMemory(settings=settings.model_copy(update={"worker": "thread"}))
    reader = AsyncMemory(settings=settings, fusion=fusion)
    stop = asyncio.Event()
    added = 0

    async def ingest() -> None:
        nonlocal added
        for turn in synth.memories(0, 10**9, users=1):
            if stop.is_set():
                return
            await writer.add(turn.text, user_id=INGEST_USER, infer=False)
            added += 1
            await asyncio.sleep(0.002)  # a steady stream, not a flood (about 300 turns/s)

    try:
        task = asyncio.create_task(ingest())
        await asyncio.sleep(1.0)  # the worker is busy before the first search
        result = await clients(reader, queries, n)
        stop.set()
        await task
        result["turns_added"] = added
    finally:
        await writer.wait_idle()
        await writer.delete_all(user_id=INGEST_USER)
        await writer.aclose()
        await reader.aclose()
    return result


def explain(url: str, memory: AsyncMemory, vectors: list[tuple[str, Any]]) -> dict[str, Any]:
    """EXPLAIN ANALYZE of both statements: planning, execution and each CTE (medians)."""
    k = max(LIMIT, memory.search_config.fusion.candidates)
    scope, ranking = Scope(user_id=USER), memory.search_config.fusion.text
    parts: dict[str, list[float]] = {}

    def analyse(conn: psycopg.Connection[Any], name: str, statement: Any) -> None:
        query, values = statement
        explained = psycopg.sql.SQL("EXPLAIN (ANALYZE, FORMAT JSON) ") + query
        row = conn.execute(explained, values).fetchone()
        assert row is not None
        plan = row[0][0]
        parts.setdefault(f"{name}: planning", []).append(plan["Planning Time"])
        parts.setdefault(f"{name}: execution", []).append(plan["Execution Time"])
        for cte, ms in _ctes(plan["Plan"]):
            parts.setdefault(f"{name}: CTE {cte}", []).append(ms)

    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        for q, vector in vectors:
            analyse(conn, "text", pg_search.text_statement(scope, q, k, None, False, ranking))
            cur = conn.execute(*pg_search.text_statement(scope, q, k, None, False, ranking))
            row = cur.fetchone()
            assert row is not None
            hits = pg_search.text_hits_from_row(row)
            statement = pg_search.vector_statement(scope, vector, k, None, False, hits, ranking)
            analyse(conn, "vector", statement)
    return {name: statistics.median(values) for name, values in parts.items()}


def _ctes(node: dict[str, Any]) -> list[tuple[str, float]]:
    found: list[tuple[str, float]] = []
    name = node.get("Subplan Name", "")
    if name.startswith("CTE "):
        loops = node.get("Actual Loops", 1) or 1
        found.append((name[4:], node["Actual Total Time"] * loops))
    for child in node.get("Plans", []):
        found.extend(_ctes(child))
    return found


async def run(
    settings: MemhubSettings, n_queries: int, fusion: FusionConfig | None = None
) -> dict[str, Any]:
    """Every measurement of this module on the built database."""
    memory = AsyncMemory(settings=settings, fusion=fusion)
    services = await memory._services()
    asked = [q for _, q in synth.queries(n_queries + 30, users=1)]
    for q in asked[:30]:  # warm up: model, pool, prepared statements, buffers
        await memory.search(q, user_id=USER, limit=LIMIT)
    queries = asked[30:]
    load = os.getloadavg()[0]
    result: dict[str, Any] = {"sequential": await sequential(memory, services, queries)}
    result["timeline"] = await search_timeline.measure(memory, queries)
    result["clients"] = [await clients(memory, queries, n) for n in (1, 4, 8)]
    vectors = [(q, (await services.embedder.embed([q]))[0]) for q in queries[:100]]
    url = services.store.database.url  # type: ignore[attr-defined]
    result["explain_ms"] = await asyncio.to_thread(explain, url, memory, vectors)
    await memory.aclose()
    result["clients_while_ingesting"] = await while_ingesting(settings, queries, 8, fusion)
    result["load_average"] = max(load, os.getloadavg()[0])  # others' work on the same cores
    return result


BEGIN, END = "<!-- search-profile -->", "<!-- /search-profile -->"
DEFAULT_HOME = Path.home() / ".cache" / "memhub-bench" / "query-100k"


def markdown(result: dict[str, Any]) -> str:
    """The "Search profile" section of docs/benchmarks.md."""
    seq, cpu = result["sequential"], result.get("cpu", "")
    embedder, beside = (
        result.get("embedder", "default"),
        seq["search"]["p95"] - seq["embedding"]["p95"],
    )
    per_retriever = (
        f", {result['candidates']} candidates per retriever" if "candidates" in result else ""
    )
    lines = [
        BEGIN,
        "## Search profile",
        "",
        f"`.venv/bin/python -m bench.query` at {result['memories']:,} memories of one user, limit "
        f"{LIMIT}, embedder `{embedder}`{per_retriever}, on {cpu}, load average"
        f" {result.get('load_average', 0):.1f} (2 cores:"
        " above 2, other work competes). Milliseconds; parts timed alternately in one run.",
        "",
        "| part | p50 | p95 |",
        "|---|---|---|",
    ]
    for name in PARTS:
        lines.append(f"| {name} | {seq[name]['p50']:.2f} | {seq[name]['p95']:.2f} |")
    lines += [
        "",
        f"Engine overhead (search p95 minus embedding p50): **{seq['overhead_p95_ms']:.2f} ms**"
        f" (target 2); search p95 minus embedding p95: **{beside:.2f} ms** (issue 36's target 5)."
        f" The embedder alone answers {seq['embedder_qps']:.0f} queries/s.",
        "",
        "The same queries again, each part timed in place inside `search()`"
        " (`bench.search_timeline`): the embedding and the text statement run side by side,"
        " the vector statement after both.",
        "",
        *(search_timeline.markdown(result["timeline"]) if "timeline" in result else []),
        "",
        "| clients | searches/s | p50 | p95 |",
        "|---|---|---|---|",
    ]
    for row in [*result["clients"], result["clients_while_ingesting"]]:
        label = f"{row['clients']}" + (" + worker ingesting" if "turns_added" in row else "")
        lines.append(
            f"| {label} | {row['searches_per_s']:.0f} | {row['p50']:.2f} | {row['p95']:.2f} |"
        )
    lines += [
        "",
        "Search runs two statements. The text statement (BM25: `probe` is one LIMITed GIN"
        " probe per query word and feeds `idf`, `hits` and `avgdl`) needs no vector, so it runs"
        " on its own connection while the query is embedded; the vector statement (`vec` is"
        " the HNSW scan) then fetches the candidates and scores each on every query word."
        " EXPLAIN ANALYZE of each (medians):",
        "",
    ]
    lines += ["| step | ms |", "|---|---|"]
    explained = result["explain_ms"]
    lines += [f"| {name} | {ms:.2f} |" for name, ms in explained.items()]
    return "\n".join([*lines, END, ""])


def write_section(docs: Path, result: dict[str, Any]) -> None:
    """Replace (or append) the search-profile section of ``docs``."""
    text = docs.read_text(encoding="utf-8") if docs.exists() else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        text = head + rest.split(END, 1)[1].lstrip("\n")
    docs.write_text(text.rstrip("\n") + "\n\n" + markdown(result), encoding="utf-8")


def measure_into(results: dict[str, Any], path: Path, docs: Path | None) -> None:
    """``make bench``'s hook: measure at 100k, add to the results file and the docs."""
    settings = MemhubSettings(data_dir=DEFAULT_HOME, worker="off")
    asyncio.run(build(settings, 100_000))
    results["query"] = {
        "memories": 100_000,
        "cpu": cpu_name(),
        "embedder": settings.embedder,
        "candidates": FusionConfig().candidates,
        **asyncio.run(run(settings, 300)),
    }
    path.write_text(json.dumps(results, indent=1), encoding="utf-8")
    if docs is not None:
        write_section(docs, results["query"])


def cpu_name() -> str:
    """The CPU's model name and its vector extensions, from /proc/cpuinfo."""
    try:
        info = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return "an unknown CPU"
    pairs = (line.split(":", 1) for line in info.splitlines()[:40] if ":" in line)
    fields = {key.strip(): value.strip() for key, value in pairs}
    flags = set(fields.get("flags", "").split())
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_int8", "amx_bf16")
    model = fields.get("model name", "CPU")
    return f"{model} ({', '.join(f for f in wanted if f in flags) or 'no AVX2'})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--home", type=Path, default=DEFAULT_HOME)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--docs", type=Path, default=None, help="write the section here")
    parser.add_argument(
        "--embedder", default="default", help="default (all-mpnet-base-v2 int8) or minilm"
    )
    parser.add_argument(
        "--candidates", type=int, default=None, help="candidates per retriever (default: 50)"
    )
    args = parser.parse_args()
    settings = MemhubSettings(data_dir=args.home, worker="off", embedder=args.embedder)
    fusion = None if args.candidates is None else FusionConfig(candidates=args.candidates)
    asyncio.run(build(settings, args.memories))
    result = {"memories": args.memories, "cpu": cpu_name(), "embedder": args.embedder}
    result["candidates"] = (fusion or FusionConfig()).candidates
    result.update(asyncio.run(run(settings, args.queries, fusion)))
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2))
    if args.docs is not None:
        write_section(args.docs, result)


if __name__ == "__main__":
    main()
