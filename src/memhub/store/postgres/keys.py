"""SQL for the API keys: create, list, revoke, and look up by hash (see ``store.api_keys``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from psycopg import sql

from memhub.store.api_keys import (
    KEY_PREFIX,
    SHOWN_CHARS,
    ApiKey,
    hash_key,
    keys_equal,
    new_key,
)
from memhub.store.postgres.database import AsyncConn

__all__ = [
    "KEY_CHANNEL",
    "KEY_PREFIX",
    "ApiKey",
    "bootstrap_admin_key",
    "create_key",
    "find_active_key",
    "hash_key",
    "keys_equal",
    "list_keys",
    "list_tenants",
    "listen_for_key_changes",
    "new_key",
    "revoke_key",
    "still_listening",
]

KEY_CHANNEL = "memhub_api_keys"
"""The NOTIFY channel of key changes; the payload is the key's id, or ``*`` for every key."""

# Serialises first-start bootstrap between processes: "apikeys" as ASCII, packed.
_BOOTSTRAP_LOCK_ID = 0x6170696B657973

_COLUMNS = sql.SQL("id, name, prefix, tenant, is_admin, created_at, revoked_at, last_used_at")


def _key(row: Sequence[Any]) -> ApiKey:
    return ApiKey(*row)


async def create_key(
    conn: AsyncConn, name: str, tenant: str | None, is_admin: bool
) -> tuple[ApiKey, str]:
    """Store a new key; returns it and the secret, which is never stored."""
    secret = new_key()
    cur = await conn.execute(
        sql.SQL(
            "INSERT INTO api_keys (name, key_hash, prefix, tenant, is_admin)"
            " VALUES (%s, %s, %s, %s, %s) RETURNING {}"
        ).format(_COLUMNS),
        (name, hash_key(secret), secret[:SHOWN_CHARS], tenant, is_admin),
    )
    row = await cur.fetchone()
    assert row is not None
    return _key(row), secret


async def list_keys(
    conn: AsyncConn, include_revoked: bool, tenant: str | None = None
) -> list[ApiKey]:
    """Every key (only ``tenant``'s when given), oldest first."""
    cur = await conn.execute(
        sql.SQL(
            "SELECT {} FROM api_keys WHERE (%s OR revoked_at IS NULL)"
            " AND (%s::text IS NULL OR tenant = %s) ORDER BY id"
        ).format(_COLUMNS),
        (include_revoked, tenant, tenant),
    )
    return [_key(row) for row in await cur.fetchall()]


async def revoke_key(conn: AsyncConn, key_id: int, tenant: str | None = None) -> ApiKey | None:
    """Revoke a key (idempotent); None if there is no such key (of ``tenant``, when given).

    The same statement, hence the same transaction, notifies ``KEY_CHANNEL`` with the key's
    id: PostgreSQL delivers it to every listening process when, and only if, it commits.
    """
    cur = await conn.execute(
        sql.SQL(
            "WITH k AS (UPDATE api_keys SET revoked_at = coalesce(revoked_at, now())"
            "   WHERE id = %s AND (%s::text IS NULL OR tenant = %s) RETURNING {cols})"
            " SELECT {cols}, pg_notify(%s, id::text) FROM k"
        ).format(cols=_COLUMNS),
        (key_id, tenant, tenant, KEY_CHANNEL),
    )
    row = await cur.fetchone()
    return None if row is None else _key(row[:-1])


async def listen_for_key_changes(conn: AsyncConn) -> None:
    """Subscribe ``conn`` (a dedicated autocommit session) to ``KEY_CHANNEL``."""
    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(KEY_CHANNEL)))


async def still_listening(conn: AsyncConn) -> bool:
    """Whether ``conn``'s session still listens on ``KEY_CHANNEL`` (a round trip).

    False when the statement ran in another server session than the LISTEN did: a pooler in
    transaction mode hands each transaction to any of its server connections.
    """
    cur = await conn.execute(
        "SELECT %s = ANY (ARRAY(SELECT pg_listening_channels()))", (KEY_CHANNEL,)
    )
    row = await cur.fetchone()
    return bool(row is not None and row[0])


async def list_tenants(conn: AsyncConn) -> dict[str, int]:
    """``{tenant: active keys}`` for every tenant that ever had a key, by name."""
    cur = await conn.execute(
        "SELECT tenant, count(*) FILTER (WHERE revoked_at IS NULL) FROM api_keys"
        " WHERE tenant IS NOT NULL GROUP BY tenant ORDER BY tenant"
    )
    return {str(tenant): int(n) for tenant, n in await cur.fetchall()}


async def find_active_key(conn: AsyncConn, key: str) -> ApiKey | None:
    """The unrevoked key ``key`` is, marking it used (at most once a minute, to spare writes)."""
    cur = await conn.execute(
        sql.SQL(
            "WITH k AS (SELECT {cols} FROM api_keys WHERE key_hash = %s AND revoked_at IS NULL),"
            " touched AS (UPDATE api_keys SET last_used_at = now() WHERE id = (SELECT id FROM k)"
            "   AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute'))"
            " SELECT {cols} FROM k"
        ).format(cols=_COLUMNS),
        (hash_key(key),),
    )
    row = await cur.fetchone()
    return None if row is None else _key(row)


async def bootstrap_admin_key(conn: AsyncConn) -> str | None:
    """On a database without any key, create an admin key and return its secret; else None."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_BOOTSTRAP_LOCK_ID,))
        cur = await conn.execute("SELECT EXISTS (SELECT 1 FROM api_keys)")
        row = await cur.fetchone()
        if row is not None and row[0]:
            return None
        _, secret = await create_key(conn, "bootstrap admin", None, True)
        return secret
