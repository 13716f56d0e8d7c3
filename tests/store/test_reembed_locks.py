"""``memhub reembed`` embeds with no table lock held: reads and adds go on meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import psycopg

from memhub import AsyncMemory, MemhubSettings
from memhub.embed import create_embedder
from memhub.store.postgres import reembed as pg_reembed
from memhub.store.postgres.database import acquire_database, release_database
from memhub.store.records import EmbeddedText

Conn = psycopg.AsyncConnection[tuple[Any, ...]]


# The table locks a read (SELECT) or an add (INSERT) waits for.
_BLOCKING = {"ShareLock", "ShareRowExclusiveLock", "ExclusiveLock", "AccessExclusiveLock"}


async def _memories_locks(watcher: Conn) -> list[str]:
    # Every granted lock on memories but the watcher's own. Autovacuum may hold its
    # ShareUpdateExclusiveLock at any moment; it blocks no read or add, so it is allowed.
    cur = await watcher.execute(
        "SELECT mode FROM pg_locks WHERE relation = 'memories'::regclass AND granted"
        " AND pid <> pg_backend_pid()"
    )
    return sorted(str(row[0]) for row in await cur.fetchall())


async def test_reads_and_adds_proceed_while_reembed_embeds(
    settings: MemhubSettings, aconn: Conn
) -> None:
    embedder = create_embedder("minilm")
    calls: list[list[str]] = []
    async with AsyncMemory(settings=settings) as memory:
        for n in range(10):
            await memory.add(f"fact number {n}", user_id="ada", infer=False, wait=True)

        async def embed(texts: Sequence[str]) -> list[EmbeddedText]:
            # Every embedding call of the run, the swap's catch-up included: no lock that
            # blocks anyone, and another client reads and adds (a held lock would time out).
            calls.append(await _memories_locks(aconn))
            found = await asyncio.wait_for(memory.search("fact", user_id="ada"), 10)
            assert found["results"]
            if len(calls) <= 3:  # rows added while the run embeds
                await asyncio.wait_for(
                    memory.add(f"added during call {len(calls)}", user_id="ada", infer=False),
                    10,
                )
                await asyncio.wait_for(memory.wait_idle(), 10)
            return [EmbeddedText(v) for v in await embedder.embed(list(texts))]

        database = await acquire_database(settings)
        try:
            async with database.connection() as conn:
                assert not await pg_reembed.prepare(conn, embedder.model_name, 384)
                filled = await pg_reembed.catch_up(conn, embed, batch=4)
                # Ids are not time-ordered, so the pass may or may not have met the rows added
                # during it; this one it cannot have met: the swap must catch it up.
                await memory.add("added after the pass", user_id="ada", infer=False, wait=True)
                await pg_reembed.build_index(conn)
                caught_up = await pg_reembed.swap(conn, embedder.model_name, 384, embed)
        finally:
            await release_database(database)
    assert filled >= 10 and caught_up >= 1 and filled + caught_up == 14
    assert calls and not any(_BLOCKING.intersection(locks) for locks in calls), calls
    cur = await aconn.execute("SELECT count(*), count(embedding) FROM memories")
    total, embedded = await cur.fetchone() or (0, 0)
    assert total == embedded == 14
    async with AsyncMemory(settings=settings) as memory:
        hits = (await memory.search("added during call 2", user_id="ada", limit=1))["results"]
    assert hits[0]["memory"] == "added during call 2"
