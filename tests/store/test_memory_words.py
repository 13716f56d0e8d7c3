"""``memory_words``, search's narrow copy of each memory's words, stays exact (migration 0019).

Triggers on ``memories`` keep it in the writing statement's transaction (inserts, updates of
the copied columns, deletes, truncates); these tests make every kind of write and compare the
copy with what it copies.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from memhub.store.postgres.store import PostgresStore
from memhub.store.records import Scope
from tests.store.contract import U, V, X, Y, insert, mem

COPIED = "id, user_id, agent_id, run_id, valid_to, hash, tsv"
# What search reads of a memory's neighbours (migration 0029): its role and expiry, and where
# its first source turn stands in its session.
PLACED = (
    "SELECT m.id, m.role, m.expires_at, c.session_first, c.position FROM memories m"
    " LEFT JOIN conversation_context c ON c.id = m.source_turn_ids[1]"
)


# conftest's store, PostgreSQL only: these tests look at its tables.
pytestmark = pytest.mark.parametrize("store", ["postgres"], indirect=True)


async def differences(store: PostgresStore) -> tuple[int, int, int]:
    """Rows of memories missing from the copy, rows of the copy not in memories, copy size."""
    async with store.database.connection() as conn:
        cur = await conn.execute(
            f"SELECT (SELECT count(*) FROM (SELECT {COPIED} FROM memories"
            f"  EXCEPT SELECT {COPIED} FROM memory_words) a),"
            f" (SELECT count(*) FROM (SELECT {COPIED} FROM memory_words"
            f"  EXCEPT SELECT {COPIED} FROM memories) b),"
            " (SELECT count(*) FROM memory_words)"
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


async def misplaced(store: PostgresStore) -> int:
    """Rows of the copy whose role, expiry or turn position is not what memories say."""
    async with store.database.connection() as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM (SELECT id, role, expires_at, first_turn_session,"
            f" first_turn_position FROM memory_words EXCEPT {PLACED}) a"
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def test_every_write_keeps_the_copy_exact(store: PostgresStore) -> None:
    a, b, c, d, _, _ = await insert(
        store,
        mem("likes tea"),
        mem("lives in Paris"),
        mem("plays chess"),
        mem("owns a cat", scope=V),
        mem("said hello", role="user", source_turn_ids=(1,)),
        mem("likes tea"),  # an exact duplicate: skipped, so not copied either
    )
    assert a and b and c and d
    assert await differences(store) == (0, 0, 5)
    assert await misplaced(store) == 0

    await store.update_memory(U, a, "likes green tea", "h2", np.asarray(Y, np.float32), None, "u")
    assert await differences(store) == (0, 0, 5)

    async with store.apply_jobs([], "t", {}) as batch:
        assert await batch.refine(U, a, "likes oolong tea", "h3", np.asarray(X, np.float32), [2])
        new = await batch.supersede(U, b, mem("lives in Rome"), datetime.now(UTC))
        await batch.forget(U, c, [3])
    assert new is not None
    # tea and its earlier wording (closed), Paris (closed), Rome, chess (retired by forget,
    # restorable), the cat, the episode "said hello"
    assert await differences(store) == (0, 0, 7)
    assert await misplaced(store) == 0

    await store.delete_memory(U, new, actor="u")
    assert await differences(store) == (0, 0, 6)
    assert await store.delete_all(Scope(user_id=V.user_id)) == 1
    assert await differences(store) == (0, 0, 5)
    assert await misplaced(store) == 0
    await store.reset()
    assert await differences(store) == (0, 0, 0)


async def test_filling_in_a_vector_leaves_the_copy_alone(store: PostgresStore) -> None:
    # The worker's vector update is most of ingestion's writes; the trigger names its columns.
    (mid,) = await insert(store, mem("likes tea"))
    async with store.database.connection() as conn:
        before = await (await conn.execute("SELECT xmin::text FROM memory_words")).fetchone()
        await conn.execute(
            "UPDATE memories SET embedding = %s WHERE id = %s", (np.asarray(Y, np.float32), mid)
        )
        after = await (await conn.execute("SELECT xmin::text FROM memory_words")).fetchone()
    assert before == after


async def test_the_migration_copies_memories_stored_before_it(store: PostgresStore) -> None:
    await insert(store, mem("likes tea"), mem("lives in Paris"), mem("owns a cat", scope=V))
    migration = resources.files("memhub.store.postgres.migrations") / "0019_memory_words.sql"
    async with store.database.connection() as conn:
        await conn.execute("DELETE FROM memory_words")  # as before the migration ran
        assert await differences(store) == (3, 0, 0)
        await conn.execute(migration.read_text("utf-8"))  # also safe to run twice
    assert await differences(store) == (0, 0, 3)


async def test_the_refill_in_operations_md_restores_the_copy(store: PostgresStore) -> None:
    # For restores that skip triggers; the statement is taken from the doc itself.
    await insert(store, mem("likes tea"), mem("owns a cat", scope=V))
    docs = (Path(__file__).parents[2] / "docs" / "operations.md").read_text(encoding="utf-8")
    found = re.search(r"`(TRUNCATE memory_words;.*?)`", docs, re.DOTALL)
    assert found is not None
    async with store.database.connection() as conn:
        await conn.execute("ALTER TABLE memories DISABLE TRIGGER USER")  # as pg_restore's option
        await conn.execute("DELETE FROM memories WHERE memory = 'owns a cat'")
        await insert(store, mem("plays chess"))
        assert await differences(store) == (1, 1, 2)  # chess missing, the cat left over
        await conn.execute("ALTER TABLE memories ENABLE TRIGGER USER")
        await conn.execute(" ".join(found.group(1).split()))  # type: ignore[call-overload]
    assert await differences(store) == (0, 0, 2)
    assert await misplaced(store) == 0


async def test_memories_keep_no_full_text_index_of_their_own(store: PostgresStore) -> None:
    # Migration 0020 dropped them: search probes memory_words, and they only cost inserts.
    async with store.database.connection() as conn:
        cur = await conn.execute(
            "SELECT i.relname FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid"
            " JOIN pg_am a ON a.oid = i.relam"
            " WHERE x.indrelid = %s::regclass AND a.amname = 'gin' ORDER BY 1",
            ("memory_words",),
        )
        on_words = [r[0] for r in await cur.fetchall()]
        cur = await conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'memories'"
            " AND (indexdef LIKE '%%(tsv)%%' OR indexdef LIKE '%%, tsv)%%')"
        )
        on_memories = [r[0] for r in await cur.fetchall()]
    assert on_words == ["memory_words_scope_tsv", "memory_words_tsv"]
    assert on_memories == []
