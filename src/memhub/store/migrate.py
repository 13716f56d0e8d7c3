"""Versioned SQL migrations, applied in order under an advisory lock, each exactly once.

The lock serialises concurrent starters (two processes, or a server and a worker), which also
serialises ``CREATE EXTENSION vector``: run unserialised, it races between connections.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from importlib import resources

import psycopg

__all__ = ["Migration", "apply_migrations", "available_migrations"]

log = logging.getLogger(__name__)

# An arbitrary constant shared by every memhub process: "memhub" as ASCII, packed.
MIGRATION_LOCK_ID = 0x6D656D687562


@dataclass(frozen=True)
class Migration:
    """One SQL file of ``memhub/store/migrations``."""

    version: str
    sql: str


def available_migrations() -> list[Migration]:
    """Every migration shipped with memhub, oldest first."""
    folder = resources.files("memhub.store.migrations")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [Migration(version=f.name.removesuffix(".sql"), sql=f.read_text("utf-8")) for f in files]


async def apply_migrations(conn: psycopg.AsyncConnection[object]) -> list[str]:
    """Apply the migrations this database lacks; returns the versions applied now.

    ``conn`` must be in autocommit mode: each migration runs in its own transaction.
    """
    applied_now: list[str] = []
    await conn.execute("SELECT pg_advisory_lock(%s)", (MIGRATION_LOCK_ID,))
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS memhub_schema_migrations ("
            " version TEXT PRIMARY KEY, applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        cur = await conn.execute("SELECT version FROM memhub_schema_migrations")
        done = {str(row[0]) for row in await cur.fetchall()}  # type: ignore[index]
        for migration in available_migrations():
            if migration.version in done:
                continue
            async with conn.transaction():
                await conn.execute(migration.sql.encode())
                await conn.execute(
                    "INSERT INTO memhub_schema_migrations (version) VALUES (%s)",
                    (migration.version,),
                )
            log.info("applied migration %s", migration.version)
            applied_now.append(migration.version)
    finally:
        await conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_ID,))
    return applied_now
