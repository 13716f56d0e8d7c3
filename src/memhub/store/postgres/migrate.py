"""Versioned SQL migrations, applied in order under an advisory lock, each exactly once.

The lock serialises concurrent starters (two processes, or a server and a worker), which also
serialises ``CREATE EXTENSION vector``: run unserialised, it races between connections. An
up-to-date database costs one version read and takes no lock. A file whose first line is
``-- memhub: no-transaction`` runs statement by statement outside a transaction (for
``CREATE INDEX CONCURRENTLY`` on big tables); its statements end with ``;`` at a line's end
and must be safe to run again, since a failure part-way leaves the version unrecorded.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

import psycopg

__all__ = ["Migration", "apply_migrations", "available_migrations"]

log = logging.getLogger(__name__)

# An arbitrary constant shared by every memhub process: "memhub" as ASCII, packed.
MIGRATION_LOCK_ID = 0x6D656D687562
NO_TRANSACTION = "-- memhub: no-transaction"


@dataclass(frozen=True)
class Migration:
    """One SQL file of ``memhub/store/postgres/migrations``."""

    version: str
    sql: str

    @property
    def transactional(self) -> bool:
        """False for a file marked ``-- memhub: no-transaction`` on its first line."""
        return self.sql.lstrip().partition("\n")[0].strip() != NO_TRANSACTION

    def statements(self) -> list[str]:
        """The file's statements, one per ``;`` at a line's end; comment-only parts dropped."""
        parts = re.split(r";[ \t]*(?:\n|$)", self.sql)
        return [p.strip() for p in parts if _code(p)]


def _code(part: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in part.splitlines())


def available_migrations() -> list[Migration]:
    """Every migration shipped with memhub, oldest first."""
    folder = resources.files("memhub.store.postgres.migrations")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [Migration(version=f.name.removesuffix(".sql"), sql=f.read_text("utf-8")) for f in files]


async def _applied(conn: psycopg.AsyncConnection[object]) -> set[str] | None:
    """The recorded versions, or None when the version table does not exist yet."""
    try:
        cur = await conn.execute("SELECT version FROM memhub_schema_migrations")
    except psycopg.errors.UndefinedTable:
        return None
    return {str(row[0]) for row in await cur.fetchall()}  # type: ignore[index]


async def apply_migrations(
    conn: psycopg.AsyncConnection[object], migrations: Sequence[Migration] | None = None
) -> list[str]:
    """Apply the migrations this database lacks; returns the versions applied now.

    ``conn`` must be in autocommit mode: each migration runs in its own transaction (or, when
    marked, in none). ``migrations`` defaults to every file shipped with memhub.
    """
    wanted = list(available_migrations() if migrations is None else migrations)
    done = await _applied(conn)
    if done is not None and {m.version for m in wanted} <= done:
        return []  # the common case: one read, no lock
    applied_now: list[str] = []
    await _lock(conn)
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS memhub_schema_migrations ("
            " version TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        done = await _applied(conn) or set()
        for migration in wanted:
            if migration.version in done:
                continue
            await _apply(conn, migration)
            log.info("applied migration %s", migration.version)
            applied_now.append(migration.version)
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_ID,))
    return applied_now


async def _lock(conn: psycopg.AsyncConnection[object]) -> None:
    # Polled, not waited for: a waiting statement holds a snapshot, and CREATE INDEX
    # CONCURRENTLY in the holder's migration waits for every older snapshot (a deadlock).
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (MIGRATION_LOCK_ID,))
        row = await cur.fetchone()
        if row is not None and row[0]:  # type: ignore[index]
            return
        await asyncio.sleep(0.05)


async def _apply(conn: psycopg.AsyncConnection[object], migration: Migration) -> None:
    record = "INSERT INTO memhub_schema_migrations (version) VALUES (%s)"
    if migration.transactional:
        async with conn.transaction():
            await conn.execute(migration.sql.encode())
            await conn.execute(record, (migration.version,))
        return
    for statement in migration.statements():
        await conn.execute(statement.encode())
    await conn.execute(record, (migration.version,))
