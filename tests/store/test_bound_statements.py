"""Scoped statements carry no values: one text for every user, so psycopg prepares it once."""

from __future__ import annotations

import hashlib
import re
import uuid
from pathlib import Path

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector_async

from memhub.filters import parse_filters
from memhub.store.postgres import memories as pg_memories
from memhub.store.postgres import search as pg_search
from memhub.store.postgres import space as pg_space
from memhub.store.postgres.bind import Params, scope_where, vector_type_modifier
from memhub.store.records import NewMemory, Scope
from tests.memory.test_awkward_values import AWKWARD

SRC = Path(__file__).resolve().parents[2] / "src" / "memhub"


def test_no_value_is_ever_inlined_as_a_literal() -> None:
    offenders = [
        str(path.relative_to(SRC))
        for path in SRC.rglob("*.py")
        if re.search(r"sql\.Literal\(", path.read_text("utf-8"))
    ]
    assert offenders == []


def test_scope_text_is_the_same_for_every_user() -> None:
    texts = set()
    for user in AWKWARD:
        params = Params()
        where = scope_where(Scope(user_id=user, run_id=user + "%"), params)
        texts.add(where.as_string(None))
        assert list(params.values.values()) == [user, user + "%"]
    assert texts == {'"m"."user_id" = %(p0)s AND "m"."run_id" = %(p1)s'}


def test_only_a_positive_int_is_a_vector_dimension() -> None:
    assert vector_type_modifier(384).as_string(None) == "384"
    for bad in (0, -3, "384); DROP TABLE memories; --", 3.0, True):
        with pytest.raises(ValueError):
            vector_type_modifier(bad)  # type: ignore[arg-type]


async def test_scoped_reads_are_prepared_once_and_stay_correct(db_url: str) -> None:
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
        conn.prepare_threshold = 2
        await pg_space.ensure_embedding_space(conn, "test-3d", 3)
        await register_vector_async(conn)
        vector = np.array([1.0, 0.0, 0.0], dtype=np.float32)
        await pg_memories.insert_memories(
            conn,
            [
                NewMemory(
                    id=uuid.uuid4(),
                    scope=Scope(user_id=user),
                    memory=f"note of {user}",
                    hash=hashlib.sha256(user.encode()).hexdigest(),
                    embedding=vector,
                    metadata={"tag": user},
                )
                for user in AWKWARD
            ],
            actor="test",
        )
        for user in AWKWARD:
            scope = Scope(user_id=user)
            tagged = parse_filters({"tag": user})
            listed = await pg_memories.list_memories(conn, scope, tagged, 10, False)
            assert [r.memory for r in listed] == [f"note of {user}"]
            hits = await pg_search.text_hits(conn, scope, "note", 5, tagged, False)
            found = await pg_search.vector_candidates(conn, scope, vector, 5, tagged, False, hits)
            assert [c.record.memory for c in found] == [f"note of {user}"]
        cur = await conn.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [str(row[0]) for row in await cur.fetchall()]
    # Search's two statements are never prepared: a generic plan cannot tell a scope of 80
    # memories from one of 200,000 (pg_search.text_hits). Their texts carry no value either.
    scoped = [s for s in prepared if "FROM memories m" in s]
    assert len(scoped) == 1, prepared  # the list statement
    hits = pg_search.TextHits([], [], [], [], 1.0)
    for user in AWKWARD:
        scope, tagged = Scope(user_id=user), parse_filters({"tag": user})
        statements = (
            pg_search.text_statement(scope, "note", 5, tagged, False)[0],
            pg_search.vector_statement(scope, vector, 5, tagged, False, hits)[0],
        )
        scoped += [statement.as_string(None) for statement in statements]
    # "%(p0)s" is itself how an unprepared statement's text spells its first placeholder.
    values = [user for user in AWKWARD if len(user) > 2 and user != "%(p0)s"]
    for text in scoped:
        assert not any(user in text for user in values), text
