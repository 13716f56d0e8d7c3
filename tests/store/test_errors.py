"""psycopg's failures become memhub's error tree at the store boundary (real PostgreSQL)."""

from __future__ import annotations

import psycopg
import pytest

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
