"""What passages cost a search: the vector statement with and without them, on one database.

``python -m bench.passages_search`` adds the first ``--questions`` LongMemEval_S histories
(``bench.longmemeval``'s protocol: one user each, infer=False, sessions with their dates),
then times, for each question and the first ``--queries`` user turns of its history as
further queries, the vector statement as it is (the memories' ``k`` nearest, the passages'
``k`` nearest, each candidate's best passage) and as it was before passages (the memories'
``k`` nearest only), alternately on one connection, so both see the same data, cache and load.

``--query-home DIR`` times the same two statements on :mod:`bench.query`'s database instead
(100,000 short memories of one user, no passage): what passages cost a search where there are
none.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.longmemeval import MAX_TEXT_CHARS, default_data_path, ingest, parse_item
from bench.metrics import percentile

# The vector statement before migration 0026 (store/postgres/search.py then), score_all, with
# every candidate's text scored as search scores it now (the words said around it included),
# so that the two differ by the passages alone.
_BEFORE = (
    "WITH vec AS ("
    "  SELECT m.id FROM memories m"
    "  WHERE {where} AND m.embedding IS NOT NULL ORDER BY m.embedding <=> {v} LIMIT {k}"
    ")"
    " SELECT {cols}, 1 - (m.embedding <=> {v}), {text_score}, {previous} FROM memories m"
    " JOIN (SELECT id FROM vec UNION SELECT unnest({txt_ids}::uuid[])) ids ON ids.id = m.id"
    " LEFT JOIN LATERAL (SELECT {around_words} AS tsv FROM memory_words mw"
    "  WHERE mw.id = m.id OFFSET 0) pw ON TRUE"
    " WHERE {where}"
)


def _before_statement(scope: Any, vector: Any, k: int, hits: Any) -> tuple[Any, dict[str, Any]]:
    from psycopg import sql

    from memhub.store.postgres import search
    from memhub.store.postgres.bind import Params
    from memhub.store.postgres.memories import COLUMNS, memories_where

    params = Params()
    where = memories_where(scope, None, False, params)
    query = sql.SQL(_BEFORE).format(
        where=where,
        v=sql.Placeholder("v"),
        k=sql.Placeholder("k"),
        cols=COLUMNS,
        text_score=search._CANDIDATE_BM25,
        around_words=search._around_words(search._neighbour_where(scope, params), "mw"),
        previous=search._PREVIOUS_TURN,
        txt_ids=sql.Placeholder("txt_ids"),
    )
    _, values = search.vector_statement(scope, vector, k, None, False, hits)
    return query, {**values, **params.values}


async def _time(db_url: str, asked: list[tuple[str, str]], rounds: int) -> dict[str, Any]:
    from memhub import MemhubSettings
    from memhub.memory.services import embedder_from_settings
    from memhub.store.postgres import search
    from memhub.store.postgres.database import acquire_database, release_database
    from memhub.store.records import Scope

    embedder = embedder_from_settings(MemhubSettings.from_env())
    vectors = await embedder.embed([q for _, q in asked])
    database = await acquire_database(MemhubSettings.from_env(database_url=db_url))
    now: list[float] = []
    before: list[float] = []
    try:
        async with database.connection() as conn:
            for (user, query), vector in zip(asked, vectors, strict=True):
                scope = Scope(user_id=user)
                hits = await search.text_hits(conn, scope, query, 50, None, False)
                statements = [
                    (now, search.vector_statement(scope, vector, 50, None, False, hits)),
                    (before, _before_statement(scope, vector, 50, hits)),
                ]
                for _ in range(rounds):
                    for times, (statement, values) in statements:
                        started = time.perf_counter()
                        cur = await conn.execute(statement, values, prepare=False)
                        await cur.fetchall()
                        times.append(time.perf_counter() - started)
    finally:
        await release_database(database)
        await embedder.aclose()
    return {
        "queries": len(asked),
        "rounds": rounds,
        "with_passages_ms": {"p50": percentile(now, 50) * 1e3, "p95": percentile(now, 95) * 1e3},
        "before_ms": {"p50": percentile(before, 50) * 1e3, "p95": percentile(before, 95) * 1e3},
    }


async def _time_on_query_home(home: Path, queries: int, rounds: int) -> dict[str, Any]:
    """Both statements on bench.query's built database (its embedded server, its user)."""
    from bench import synth
    from bench.machine import describe, summary
    from bench.profile_search import USER
    from memhub import AsyncMemory, MemhubSettings

    memory = AsyncMemory(settings=MemhubSettings(data_dir=home, worker="off"))
    try:
        url = (await memory._services()).store.database.url  # type: ignore[attr-defined]
        asked = [(USER, q) for _, q in synth.queries(queries, users=1)]
        machine = describe(url)
        result = await _time(url, asked, rounds)
    finally:
        await memory.aclose()
    machine["load_after"] = os.getloadavg()
    return {**result, "machine": summary(machine)}


def main(argv: list[str] | None = None) -> int:
    """Ingest, then print both statements' p50 / p95 (milliseconds) and the machine."""
    from bench.machine import describe, summary
    from bench.pg import BenchPostgres
    from memhub import MemhubSettings, Memory

    parser = argparse.ArgumentParser(prog="python -m bench.passages_search", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_data_path())
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--queries", type=int, default=20, help="user turns asked per history")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--query-home", type=Path, default=None, help="bench.query's --home")
    args = parser.parse_args(argv)
    if args.query_home is not None:
        result = asyncio.run(_time_on_query_home(args.query_home, args.queries, args.rounds))
        print(json.dumps(result, indent=1))
        return 0
    raw = json.loads(args.data.read_text(encoding="utf-8"))[: args.questions]
    items = [parse_item(r) for r in raw]
    with BenchPostgres(Path(tempfile.mkdtemp(prefix="lme-search-")) / "pg") as postgres:
        db_url = postgres.create_database("lme")
        settings = MemhubSettings.from_env(
            database_url=db_url, worker="thread", max_text_chars=MAX_TEXT_CHARS
        )
        memory = Memory(settings=settings)
        asked: list[tuple[str, str]] = []
        try:
            for item in items:
                user = f"lme-{item.question_id}"
                ingest(memory, item, user)
                turns = [t["content"] for s in item.sessions for t in s if t["role"] == "user"]
                asked += [(user, item.question)] + [(user, t) for t in turns[: args.queries]]
            memory.wait_idle()
        finally:
            memory.close()
        machine = describe(db_url)
        result = asyncio.run(_time(db_url, asked, args.rounds))
    print(json.dumps(result, indent=1))
    print(f"machine: {summary(machine)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
