"""The search statements' plans on a database PostgreSQL has not analyzed yet.

A new database has no table statistics until autovacuum's first analyze, up to a minute after
the first writes; search must not plan the words said around a memory badly until then
(docs/retrieval.md, "The words said around a memory": 59 and 86 ms against 10 and 15 once
analyzed, before the statements were shaped for it). The plan's decisions are asserted, not
its time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest
from pgvector.psycopg import register_vector_async
from psycopg import sql

from memhub import MemhubSettings
from memhub.store.postgres import search as pg_search
from memhub.store.postgres.store import PostgresStore
from memhub.store.records import NewTurn, TextHits, TextRanking
from tests.store.contract import U, X, insert, mem


@pytest.fixture
async def store(settings: MemhubSettings) -> AsyncIterator[PostgresStore]:
    store = await PostgresStore.open(settings)
    await store.ensure_embedding_space("test-model", 3)
    yield store
    await store.aclose()


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


async def test_the_words_said_around_are_planned_on_their_indexes_without_statistics(
    store: PostgresStore, db_url: str
) -> None:
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        for table in ("memories", "conversation_context"):  # no analyze during the test
            await conn.execute(
                sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = false)").format(
                    sql.Identifier(table)
                )
            )
    for session in ("s1", "s2", "s3"):
        said = [f"{session} turn {n} about tea" for n in range(20)]
        turns = await store.append_turns([NewTurn("u", session, "user", t) for t in said], None)
        await insert(
            store, *(mem(t, source_turn_ids=(turn,)) for t, turn in zip(said, turns, strict=True))
        )
    text_query, values = pg_search.text_statement(U, "tea", 10, None, False, TextRanking())
    hits = TextHits([], [], ["tea"], [1.0], 1.0)
    vector_query, vector_values = pg_search.vector_statement(U, X, 10, None, False, hits)
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        await register_vector_async(conn)
        cur = await conn.execute(
            "SELECT relname FROM pg_class WHERE relname IN ('memories', 'conversation_context')"
            " AND reltuples >= 0"
        )
        assert await cur.fetchall() == []  # the precondition: never analyzed
        for query, params in ((text_query, values), (vector_query, vector_values)):
            explain = b"EXPLAIN (FORMAT JSON) " + query.as_bytes(conn)
            cur = await conn.execute(explain, params, prepare=False)
            row = await cur.fetchone()
            assert row is not None
            nodes = list(_nodes(row[0][0]["Plan"]))
            probes = [n for n in nodes if n.get("Relation Name") == "conversation_context"]
            # the turn probes on the (user_id, session_id, id) index, the turn on its key
            assert probes
            assert {n["Node Type"] for n in probes} <= {"Index Scan", "Index Only Scan"}
            assert {n["Index Name"] for n in probes} <= {
                "conversation_context_pkey",
                "conversation_context_user_session_id",
            }
            # a neighbour turn's memory on memories_first_turn; the words computed once
            used = {n.get("Index Name") for n in nodes if n.get("Relation Name") == "memories"}
            assert "memories_first_turn" in used
            assert any(n.get("Subplan Name") == "CTE lent" for n in nodes)
