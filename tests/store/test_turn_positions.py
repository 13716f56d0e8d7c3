"""Where each turn stands in its session, and each memory's first source turn (migration 0029).

Search finds the memories said around a memory by these positions (docs/retrieval.md, "The
words said around a memory"); they are set by triggers, so every write path keeps them. The
contract suites check what search returns with them on both back ends; these look at the
PostgreSQL columns themselves.
"""

from __future__ import annotations

from importlib import resources
from uuid import uuid4

import pytest

from memhub.store.postgres.store import PostgresStore
from memhub.store.records import NewJob, NewTurn, PendingMemory
from tests.store.contract import U, insert, mem

# conftest's store, PostgreSQL only: these tests look at its tables.
pytestmark = pytest.mark.parametrize("store", ["postgres"], indirect=True)


async def positions(store: PostgresStore) -> list[tuple[str, str, int, int]]:
    """(user, session, the session's first turn id, position) of every turn, in id order."""
    async with store.database.connection() as conn:
        cur = await conn.execute(
            "SELECT user_id, session_id, session_first, position FROM conversation_context"
            " ORDER BY id"
        )
        return [(r[0], r[1], int(r[2]), int(r[3])) for r in await cur.fetchall()]


async def placed(store: PostgresStore) -> list[tuple[str, int | None, int | None]]:
    """(memory, its session, its position) from memory_words, by memory text."""
    async with store.database.connection() as conn:
        cur = await conn.execute(
            "SELECT m.memory, w.first_turn_session, w.first_turn_position FROM memories m"
            " JOIN memory_words w ON w.id = m.id ORDER BY m.memory"
        )
        return [(r[0], r[1], r[2]) for r in await cur.fetchall()]


async def test_turns_count_from_one_in_each_session(store: PostgresStore) -> None:
    # one statement holding two sessions' turns, interleaved, then a later one
    first = await store.append_turns(
        [
            NewTurn("u", "a", "user", "a1"),
            NewTurn("u", "b", "user", "b1"),
            NewTurn("u", "a", "assistant", "a2"),
            NewTurn("v", "a", "user", "another user's session a"),
        ],
        None,
    )
    later = await store.append_turns(
        [NewTurn("u", "a", "user", "a3"), NewTurn("u", "b", "user", "b2")], None
    )
    a, b, v = first[0], first[1], first[3]
    assert await positions(store) == [
        ("u", "a", a, 1),
        ("u", "b", b, 1),
        ("u", "a", a, 2),
        ("v", "a", v, 1),
        ("u", "a", a, 3),
        ("u", "b", b, 2),
    ]
    assert later == [first[-1] + 1, first[-1] + 2]


async def test_a_memory_carries_its_first_turns_place(store: PostgresStore) -> None:
    turns = await store.append_turns(
        [NewTurn("u", "s", "user", f"turn {n}") for n in range(3)], None
    )
    await insert(
        store,
        mem("said at the third turn", source_turn_ids=(turns[2], turns[0])),
        mem("cites no turn"),
        mem("cites a turn memhub does not hold", source_turn_ids=(10**9,)),
    )
    assert await placed(store) == [
        ("cites a turn memhub does not hold", None, None),
        ("cites no turn", None, None),
        ("said at the third turn", turns[0], 3),
    ]


async def test_turns_and_their_memories_added_in_one_statement(store: PostgresStore) -> None:
    # add() writes the turns and their episodes in one statement: the episodes' rows reach
    # memory_words with the places of the turns inserted beside them
    said = ["I paint.", "Nice.", "A sunset over the lake."]
    turns = [
        NewTurn("u", "s", "user", text, memory=PendingMemory(uuid4(), text, text)) for text in said
    ]
    ids = await store.append_turns(turns[:2], NewJob("ingest", U))
    ids += await store.append_turns(turns[2:], NewJob("ingest", U))
    assert await placed(store) == [
        ("A sunset over the lake.", ids[0], 3),
        ("I paint.", ids[0], 1),
        ("Nice.", ids[0], 2),
    ]


async def test_the_migration_places_turns_and_memories_stored_before_it(
    store: PostgresStore,
) -> None:
    turns = await store.append_turns(
        [NewTurn("u", s, "user", f"{s} {n}") for n in range(3) for s in ("a", "b")], None
    )
    await insert(store, *(mem(f"memory {t}", source_turn_ids=(t,)) for t in turns))
    before = (await positions(store), await placed(store))
    migration = resources.files("memhub.store.postgres.migrations") / "0029_turn_positions.sql"
    async with store.database.connection() as conn:
        # as before the migration ran
        await conn.execute("UPDATE conversation_context SET session_first = NULL, position = NULL")
        await conn.execute(
            "UPDATE memory_words SET first_turn_session = NULL, first_turn_position = NULL,"
            " role = NULL"
        )
        await conn.execute(migration.read_text("utf-8"))  # also safe to run twice
    assert (await positions(store), await placed(store)) == before
