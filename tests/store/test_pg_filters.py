"""Compiled filters on real PostgreSQL select exactly the rows Python's ``matches`` does."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from memhub.filters import And, Filter, Not, Or, parse_filters
from memhub.store.postgres.bind import Params
from memhub.store.postgres.filters import compile_filter
from tests.fix_postgres import TEMPLATE, database_url
from tests.test_filters import (
    ALL,
    CASES,
    RAW_FILTERS,
    ROWS,
    case_id,
    day,
    python_selection,
    records,
)

_COLUMNS = (
    "id",
    "user_id",
    "agent_id",
    "run_id",
    "memory_type",
    "created_at",
    "valid_from",
    "updated_at",
    "valid_to",
    "metadata",
    "role",
)
Conn = psycopg.Connection[dict[str, Any]]


def insert(conn: Conn, rows: Sequence[dict[str, Any]]) -> None:
    names = sql.SQL(", ").join(map(sql.Identifier, (*_COLUMNS, "memory", "hash")))
    marks = sql.SQL(", ").join(sql.Placeholder() * (len(_COLUMNS) + 2))
    query = sql.SQL("INSERT INTO memories ({}) VALUES ({})").format(names, marks)
    with conn.cursor() as cur:
        cur.executemany(
            query,
            [
                (
                    *(Jsonb(r["metadata"]) if c == "metadata" else r.get(c) for c in _COLUMNS),
                    f"memory {r['id']}",
                    hashlib.sha256(str(r["id"]).encode()).hexdigest(),
                )
                for r in rows
            ],
        )


def select_ids(conn: Conn, f: Filter | None) -> set[int]:
    params = Params()
    where = sql.SQL("TRUE") if f is None else compile_filter(f, params, "mem")
    query = sql.SQL("SELECT mem.id FROM memories AS mem WHERE {}").format(where)
    return {row["id"].int for row in conn.execute(query, params.values)}


@pytest.fixture(scope="module")
def seeded(pg_admin_url: str) -> Iterator[tuple[Conn, list[dict[str, Any]]]]:
    """One database holding ``ROWS`` for every case, and the rows as PostgreSQL returns them.

    Module-scoped because the cases only read: a fresh database per case would cost ~70
    template copies for nothing.
    """
    name = "memhub_test_pg_filters"
    with psycopg.connect(pg_admin_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE)
            )
        )
    try:
        url = database_url(pg_admin_url, name)
        with psycopg.connect(url, autocommit=True, row_factory=dict_row) as conn:
            insert(conn, ROWS)
            stored = conn.execute(sql.SQL("SELECT * FROM memories")).fetchall()
            yield conn, stored
    finally:
        with psycopg.connect(pg_admin_url, autocommit=True) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_sql_python_and_expectation_agree(
    seeded: tuple[Conn, list[dict[str, Any]]], case: tuple[dict[str, Any], set[int]]
) -> None:
    conn, stored = seeded
    raw, expected = case
    f = parse_filters(raw)
    assert f is not None
    assert select_ids(conn, f) == python_selection(f, stored) == set(expected)
    assert select_ids(conn, Not(f)) == ALL - set(expected)


def test_rows_round_trip_and_empty_groups(seeded: tuple[Conn, list[dict[str, Any]]]) -> None:
    conn, stored = seeded
    assert {r["id"]: r["metadata"] for r in stored} == {r["id"]: r["metadata"] for r in ROWS}
    assert select_ids(conn, None) == ALL
    assert select_ids(conn, And(())) == ALL and select_ids(conn, Or(())) == set()


def test_the_metadata_index_serves_equality(seeded: tuple[Conn, list[dict[str, Any]]]) -> None:
    conn, _ = seeded
    f = parse_filters({"category": "work"})
    assert f is not None
    conn.execute("SET enable_seqscan = off")
    try:
        params = Params()
        where = compile_filter(f, params)
        query = sql.SQL("EXPLAIN SELECT 1 FROM memories AS m WHERE {}").format(where)
        plan = "\n".join(str(row["QUERY PLAN"]) for row in conn.execute(query, params.values))
    finally:
        conn.execute("RESET enable_seqscan")
    assert "memories_metadata" in plan


def test_values_cannot_inject_sql(seeded: tuple[Conn, list[dict[str, Any]]]) -> None:
    conn, _ = seeded
    hostile = "x'); DROP TABLE memories; --"
    for raw in (
        {"user_id": hostile},
        {hostile: 1},
        {"k": {"contains": hostile}},
        {"k": {"gt": hostile}},
        {f'a".{hostile}': {"icontains": hostile}},
    ):
        f = parse_filters(raw)
        assert f is not None
        assert select_ids(conn, f) == set()
    assert select_ids(conn, None) == ALL


@st.composite
def datasets(draw: st.DrawFn) -> list[dict[str, Any]]:
    size = draw(st.integers(1, 6))
    rows = [draw(records(n)) for n in range(1, size + 1)]
    for n, row in enumerate(rows, start=1):
        row["agent_id"] = "agent"  # the table wants some scope on every row
        row["created_at"] = row["valid_from"] = day(n)
    return rows


@settings(
    max_examples=50,
    deadline=None,  # a real database round trip per example
    suppress_health_check=[HealthCheck.function_scoped_fixture],  # each example cleans up
)
@given(rows=datasets(), raws=st.lists(RAW_FILTERS, min_size=1, max_size=4))
def test_random_filters_agree_on_random_metadata(
    db_url: str, rows: list[dict[str, Any]], raws: list[dict[str, Any]]
) -> None:
    with psycopg.connect(db_url, autocommit=True, row_factory=dict_row) as conn:
        conn.execute("DELETE FROM memories")
        insert(conn, rows)
        stored = conn.execute(sql.SQL("SELECT * FROM memories")).fetchall()
        for raw in raws:
            f = parse_filters(raw)
            assert select_ids(conn, f) == python_selection(f, stored), raw
            assert select_ids(conn, f) == python_selection(f, rows), raw
