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
        for table in ("memories", "memory_words", "conversation_context"):  # no analyze
            await conn.execute(
                sql.SQL("ALTER TABLE {} SET (autovacuum_enabled = false)").format(
                    sql.Identifier(table)
                )
            )
    for session in [f"s{n}" for n in range(20)]:  # pages enough that a scan costs more
        said = [f"{session} turn {n} about tea" for n in range(50)]
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
            # a memory's previous turn (the vector statement's) on the turn's key and the
            # (user_id, session_id, id) index; nothing else reads the turns
            probes = [n for n in nodes if n.get("Relation Name") == "conversation_context"]
            assert {n["Node Type"] for n in probes} <= {"Index Scan", "Index Only Scan"}
            assert {n["Index Name"] for n in probes} <= {
                "conversation_context_pkey",
                "conversation_context_user_session_id",
            }
            # the memories around a memory by one probe of memory_words_turn_position, once
            # for each memory whose neighbours' words are read: the text statement also
            # probes it for the memories around its matches
            around = [n for n in nodes if n.get("Index Name") == "memory_words_turn_position"]
            assert len(around) == (2 if query is text_query else 1)
            assert {n["Relation Name"] for n in around} == {"memory_words"}
