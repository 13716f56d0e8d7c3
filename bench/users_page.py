"""``GET /v1/users`` paging: the old aggregate (FULL JOIN + GROUP BY + OFFSET) vs keyset pages.

Run with the dev install: ``python -m bench.users_page [users] [turns_per_user]`` (defaults
20000 and 10). It starts an embedded PostgreSQL in a temporary directory, stores that many
users over 10 tenants, each with ``turns_per_user`` turns and as many memories, and prints
the median of 7 runs of a 100-user page for each query.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg

from memhub.store.postgres import users as pg_users
from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server
from memhub.store.postgres.migrate import apply_migrations

# The listing server/queries.py ran before issue 15, kept here to compare against.
OLD = """
WITH m AS (
    SELECT user_id, count(*) AS memories, max(coalesce(updated_at, created_at)) AS last_at
    FROM memories WHERE user_id IS NOT NULL AND valid_to IS NULL
      AND (%(prefix)s::text IS NULL OR starts_with(user_id, %(prefix)s)) GROUP BY user_id
), t AS (
    SELECT user_id, count(*) AS turns, max(created_at) AT TIME ZONE 'UTC' AS last_at
    FROM conversation_context WHERE %(prefix)s::text IS NULL OR starts_with(user_id, %(prefix)s)
    GROUP BY user_id
)
SELECT coalesce(m.user_id, t.user_id), coalesce(m.memories, 0), coalesce(t.turns, 0),
       greatest(m.last_at, t.last_at)
FROM m FULL JOIN t ON m.user_id = t.user_id ORDER BY 1 LIMIT %(limit)s OFFSET %(offset)s
"""

PAGE = 100


async def _median_ms(work: Callable[[], Awaitable[Any]], runs: int = 7) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        await work()
        times.append(time.perf_counter() - start)
    return sorted(times)[runs // 2] * 1000


async def _fill(conn: psycopg.AsyncConnection[Any], users: int, per_user: int) -> None:
    await conn.execute(
        "INSERT INTO conversation_context (user_id, session_id, role, message)"
        " SELECT 't' || (u %% 10) || ':user' || lpad(u::text, 7, '0'), 's', 'user', 'hello'"
        " FROM generate_series(1, %s) u, generate_series(1, %s) k",
        (users, per_user),
    )
    await conn.execute(
        "INSERT INTO memories (id, user_id, memory, hash)"
        " SELECT gen_random_uuid(), 't' || (u %% 10) || ':user' || lpad(u::text, 7, '0'),"
        " 'fact ' || k, md5(u::text || '-' || k)"
        " FROM generate_series(1, %s) u, generate_series(1, %s) k",
        (users, per_user),
    )
    await conn.execute("VACUUM ANALYZE")


async def main(users: int, per_user: int) -> None:
    home = Path(tempfile.mkdtemp(prefix="memhub-bench-users-"))
    try:
        url = embedded_database_url(home, "postgres")
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await apply_migrations(conn)
            await _fill(conn, users, per_user)
            middle = f"t0:user{users // 2:07d}"

            def old(prefix: str | None, offset: int) -> Callable[[], Awaitable[Any]]:
                params = {"prefix": prefix, "limit": PAGE, "offset": offset}
                return lambda: conn.execute(OLD, params)

            def keyset(prefix: str | None, after: str | None) -> Callable[[], Awaitable[Any]]:
                return lambda: pg_users.list_users(conn, prefix=prefix, after=after, limit=PAGE)

            cases = {
                "first page, all users (old)": old(None, 0),
                "first page, all users (keyset)": keyset(None, None),
                "middle page (old, offset)": old(None, users // 2),
                "middle page (keyset cursor)": keyset(None, middle),
                "a tenant's first page (old)": old("t7:", 0),
                "a tenant's first page (keyset)": keyset("t7:", None),
            }
            print(f"{users} users x {per_user} turns + {per_user} memories; {PAGE}-user page,")
            print("median of 7, ms")
            for name, work in cases.items():
                print(f"  {name:34s} {await _median_ms(work):9.1f}")
    finally:
        stop_embedded_server(home)


if __name__ == "__main__":
    numbers = [int(arg) for arg in sys.argv[1:3]]
    asyncio.run(main(*(numbers + [20000, 10][len(numbers) :])))
