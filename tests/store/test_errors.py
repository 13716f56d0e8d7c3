"""psycopg's failures become memhub's error tree at the store boundary (real PostgreSQL)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from memhub.errors import StatementTimeout, StoreError, StoreUnavailable
from memhub.store.postgres.errors import translate_errors


async def test_a_statement_timeout_is_a_failure_not_an_outage(
    aconn: psycopg.AsyncConnection[tuple[object, ...]],
) -> None:
    await aconn.execute("SET statement_timeout = 50")
    with pytest.raises(StatementTimeout) as info, translate_errors("slow query"):
        await aconn.execute("SELECT pg_sleep(2)")
    # A worker retries StoreUnavailable without counting an attempt; a timeout must count.
    assert not isinstance(info.value, StoreUnavailable)
    assert isinstance(info.value, StoreError)
    assert isinstance(info.value.__cause__, psycopg.errors.QueryCanceled)


async def test_an_unreachable_server_is_unavailable() -> None:
    with pytest.raises(StoreUnavailable), translate_errors("connect"):
        await psycopg.AsyncConnection.connect(
            "postgresql://nobody@127.0.0.1:1/none", connect_timeout=2
        )


def _relation_files(conn: psycopg.Connection[tuple[object, ...]], table: str) -> list[Path]:
    data_directory = conn.execute("SHOW data_directory").fetchone()
    relation = conn.execute("SELECT pg_relation_filepath(%s::regclass)", (table,)).fetchone()
    assert data_directory is not None and relation is not None
    main = Path(str(data_directory[0])) / str(relation[0])
    return sorted(main.parent.glob(f"{main.name}*"))  # its forks and segments too


def test_a_table_file_the_server_may_not_open_is_unavailable_not_a_failure(db_url: str) -> None:
    """A real permission fault: the table's files are made unreadable to the server's OS user
    (as root the embedded server runs as its own user, which chmod does stop)."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE locked_out (n int)")
        conn.execute("INSERT INTO locked_out VALUES (1)")
        files = _relation_files(conn, "locked_out")
    modes = {path: path.stat().st_mode for path in files}
    try:
        for path in files:
            path.chmod(0)
        # A new session opens the files afresh (a session keeps those it opened).
        with psycopg.connect(db_url, autocommit=True) as conn:
            with pytest.raises(StoreUnavailable) as info, translate_errors("adding"):
                conn.execute("INSERT INTO locked_out VALUES (2)")
            cause = info.value.__cause__
            assert isinstance(cause, psycopg.errors.InsufficientPrivilege)
            assert "Permission denied" in str(cause)
    finally:
        for path, mode in modes.items():
            path.chmod(mode)
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("INSERT INTO locked_out VALUES (3)")  # cured by the fix, not the request
        assert conn.execute("SELECT count(*) FROM locked_out").fetchone() == (2,)


def test_a_missing_grant_is_still_a_failure(db_url: str) -> None:
    """The same SQLSTATE (42501) about a privilege, not a file: no retry cures it."""
    with psycopg.connect(db_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE guarded (n int)")
        role = sql.Identifier(f"no_grant_{conn.info.dbname}")  # roles are the cluster's
        conn.execute(sql.SQL("CREATE ROLE {}").format(role))
        try:
            conn.execute(sql.SQL("SET ROLE {}").format(role))
            with pytest.raises(StoreError) as info, translate_errors("reading"):
                conn.execute("SELECT * FROM guarded")
            assert not isinstance(info.value, StoreUnavailable)
        finally:
            conn.execute("RESET ROLE")
            conn.execute(sql.SQL("DROP ROLE {}").format(role))
