"""What ``add()`` acknowledges is there at once: its ids resolve, its words are found, and a
search right after it finds it by meaning, with no ``wait=True``.

The memories are written with their turns (text first); the ingest job fills in the vector
under the same id. These tests pin the races of that fill: an update or a delete before it,
and ``delete_all`` racing it. The real default embedder (MiniLM) runs wherever a search is
by meaning; the race tests need no meaning and use it too (it is loaded once per process).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence

import numpy as np
import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings, MemoryNotFound
from memhub.memory.importer import Importer, ImportRecord
from memhub.store.records import Scope

pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

QUICKSTART = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hi, I'm Alex. I'm a vegetarian and I'm allergic to nuts."},
    {"role": "assistant", "content": "Hello Alex! I'll remember your dietary preferences."},
]


async def quickstart_flow(memory: AsyncMemory, user: str) -> None:
    """Mem0's quickstart, then every call on the ids add() returned, with no waits."""
    added = await memory.add(QUICKSTART, user_id=user)
    ids = [r["id"] for r in added["results"]]
    assert [r["role"] for r in added["results"]] == ["user", "assistant"]  # no system prompt
    mine = ids[0]
    got = await memory.get(mine)
    assert got is not None and got["memory"] == QUICKSTART[1]["content"]
    assert [e["event"] for e in await memory.history(mine)] == ["ADD"]
    found = (await memory.search("allergic nuts", user_id=user))["results"]
    assert mine in [hit["id"] for hit in found]  # by its words
    await memory.update(mine, "Alex is vegan and allergic to nuts and peanuts.")
    hits = (await memory.search("What can I cook for dinner tonight?", user_id=user))["results"]
    assert hits and hits[0]["id"] in ids, hits  # by meaning: no shared word with the query
    assert "vegan" in {hit["id"]: hit["memory"] for hit in hits}[mine]
    await memory.delete(mine)
    assert await memory.get(mine) is None
    assert [e["event"] for e in await memory.history(mine)] == ["ADD", "UPDATE", "DELETE"]


async def test_quickstart_fifty_times_quiet(settings: MemhubSettings) -> None:
    async with AsyncMemory(settings=settings) as memory:
        for n in range(50):
            await quickstart_flow(memory, f"alex-{n}")


@pytest.fixture
async def busy_worker(settings: MemhubSettings, db_url: str) -> AsyncIterator[None]:
    """A ``memhub worker`` process holding 10,000 other users' turns (imported in bulk,
    keyword-searchable at once, embedded by that worker with the same real model)."""
    records = [
        ImportRecord(
            f"backlog turn {n} about gardening and tomatoes",
            f"bulk-{n % 40}",
            None,
            None,
            None,
            None,
            False,
        )
        for n in range(10_000)
    ]
    async with Importer(settings, infer=False) as importer:
        for start in range(0, len(records), 2_000):
            await importer.write([importer.check(r) for r in records[start : start + 2_000]], None)
    env = {**os.environ, "MEMHUB_DATABASE_URL": db_url, "MEMHUB_WORKER_CONCURRENCY": "1"}
    # One batch loop at nice 10, as a batch worker beside interactive callers runs: it takes
    # a core's cycles all through the test without starving the callers.
    worker = subprocess.Popen(  # noqa: ASYNC220 (starting it does not block)
        ["nice", "-n", "10", sys.executable, "-m", "memhub.cli", "worker"],
        env=env,
        stderr=subprocess.DEVNULL,
    )
    try:
        # at nice 10 beside eight CPU burners the worker gets a few percent of a core, and
        # its start (imports, the embedder) takes minutes: a generous deadline, not a bound
        deadline = time.monotonic() + 600
        async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as conn:
            while True:  # the backlog is that worker's: it holds leases on it
                cur = await conn.execute("SELECT count(lease_owner) FROM memory_jobs")
                row = await cur.fetchone()
                if row is not None and row[0] > 0:
                    break
                assert time.monotonic() < deadline, "the worker never claimed the backlog"
                await asyncio.sleep(0.2)
            cur = await conn.execute(
                "SELECT count(*) FILTER (WHERE embedding IS NULL) FROM memories"
                " WHERE user_id LIKE 'bulk-%%'"
            )
            row = await cur.fetchone()
        # Busy when the flow starts; on a quiet machine it may finish the backlog (about
        # 30 s of embedding) before the 50 rounds do, so "throughout" is not asserted.
        assert row is not None and row[0] > 5_000, "the worker is not busy"
        yield
    finally:
        worker.send_signal(signal.SIGTERM)
        try:
            worker.wait(120)
        except subprocess.TimeoutExpired:  # a starved worker still finishing its batch
            worker.kill()
            worker.wait()


async def test_quickstart_fifty_times_with_a_busy_worker(
    settings: MemhubSettings, busy_worker: None
) -> None:
    async with AsyncMemory(settings=settings) as memory:
        for n in range(50):
            await quickstart_flow(memory, f"alex-{n}")


@pytest.fixture(params=["postgres", "in-process"])
async def unworked(
    request: pytest.FixtureRequest, settings: MemhubSettings
) -> AsyncIterator[AsyncMemory]:
    """No worker and no search wait: what add() wrote, before any job ran."""
    update: dict[str, object] = {"worker": "off", "search_wait_timeout": 0}
    if request.param == "in-process":
        update["database_url"] = "memory://"
    async with AsyncMemory(settings=settings.model_copy(update=update)) as memory:
        yield memory


async def test_ids_resolve_before_the_job_runs(unworked: AsyncMemory) -> None:
    added = await unworked.add(["I keep bees.", "My hive is blue."], user_id="u")
    ids = [r["id"] for r in added["results"]]
    assert [(await unworked.get(i) or {}).get("memory") for i in ids] == [
        "I keep bees.",
        "My hive is blue.",
    ]
    assert [e["event"] for e in await unworked.history(ids[0])] == ["ADD"]
    hits = (await unworked.search("bees", user_id="u"))["results"]
    # The one holding the word first, then the one said after it, found by the words said
    # around it (docs/retrieval.md, "The words said around a memory") before any job ran.
    assert [hit["id"] for hit in hits] == ids
    listed = (await unworked.get_all(user_id="u"))["results"]
    assert sorted(m["id"] for m in listed) == sorted(ids)
    await unworked.wait_idle()  # the job fills the vectors in: the same ids, no duplicates
    listed = (await unworked.get_all(user_id="u"))["results"]
    assert sorted(m["id"] for m in listed) == sorted(ids)
    assert [e["event"] for e in await unworked.history(ids[0])] == ["ADD"]


async def test_an_update_before_the_job_keeps_its_own_vector(
    unworked: AsyncMemory, settings: MemhubSettings, db_url: str
) -> None:
    added = await unworked.add("I drive a red car.", user_id="u")
    mine = added["results"][0]["id"]
    await unworked.update(mine, "I ride a green bicycle.")
    await unworked.wait_idle()  # the job embeds the turn's old text: it must not land
    hits = (await unworked.search("I ride a green bicycle.", user_id="u"))["results"]
    assert hits[0]["id"] == mine and hits[0]["memory"] == "I ride a green bicycle."
    if unworked.settings.database_url == "memory://":
        return
    services = await unworked._services()
    (expected,) = await services.embedder.embed(["I ride a green bicycle."])
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT embedding::text FROM memories WHERE id = %s", (mine,))
        row = await cur.fetchone()
    assert row is not None
    stored = np.array([float(x) for x in row[0].strip("[]").split(",")])
    assert np.allclose(stored, expected, atol=1e-5)


async def test_a_delete_before_the_job_stays_deleted(unworked: AsyncMemory) -> None:
    added = await unworked.add(["I like jazz.", "I like blues."], user_id="u")
    first, second = (r["id"] for r in added["results"])
    await unworked.delete(first)
    await unworked.wait_idle()  # the fill must not bring it back
    assert await unworked.get(first) is None
    assert [m["id"] for m in (await unworked.get_all(user_id="u"))["results"]] == [second]
    with pytest.raises(MemoryNotFound):
        await unworked.update(first, "resurrected?")


async def test_delete_all_before_the_job_leaves_nothing(unworked: AsyncMemory) -> None:
    await unworked.add(["I like jazz.", "I like blues."], user_id="u")
    await unworked.delete_all(user_id="u")
    await unworked.wait_idle()
    assert (await unworked.get_all(user_id="u"))["results"] == []


async def test_foreign_and_unknown_ids_are_not_found(unworked: AsyncMemory) -> None:
    added = await unworked.add("My PIN is 1234.", user_id="owner")
    theirs = added["results"][0]["id"]
    assert await unworked.get(theirs, user_id="intruder") is None
    for call in (
        unworked.history(theirs, user_id="intruder"),
        unworked.update(theirs, "mine now", user_id="intruder"),
        unworked.delete(theirs, user_id="intruder"),
        unworked.history(str(uuid.uuid4())),
        unworked.delete(str(uuid.uuid4())),
    ):
        with pytest.raises(MemoryNotFound):
            await call
    assert (await unworked.get(theirs) or {}).get("memory") == "My PIN is 1234."


async def test_a_search_waits_for_its_own_scope_only(
    settings: MemhubSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Who waited is read from the queue polls each search made, not from how long it took."""
    # worker off: nothing will ever embed; a search of another scope must not wait for it.
    off = settings.model_copy(update={"worker": "off", "search_wait_timeout": 1.5})
    async with AsyncMemory(settings=off) as memory:
        await memory.add("I like tea.", user_id="mine")
        store = (await memory._services()).store
        polls: list[tuple[str | None, int]] = []  # (whose turns, still queued) of each poll
        poll = store.pending_turn_jobs

        async def counted(
            scope: Scope, turn_ids: Sequence[int], kinds: Sequence[str] | None
        ) -> int:
            queued = await poll(scope, turn_ids, kinds)
            polls.append((scope.user_id, queued))
            return queued

        monkeypatch.setattr(store, "pending_turn_jobs", counted)
        await memory.search("tea", user_id="someone-else")
        assert polls == [], "another scope's search waited for my turns"
        hits = (await memory.search("tea", user_id="mine"))["results"]
        assert [h["memory"] for h in hits] == ["I like tea."]  # by its words, unembedded
        assert polls and polls == [("mine", 1)] * len(polls), "waited, to its deadline"
        waits = len(polls)
        await memory.search("tea", user_id="mine")
        assert len(polls) == waits, "the same turns are not waited for twice"


async def test_with_an_llm_the_raw_turn_is_found_at_once_until_facts_replace_it(
    settings: MemhubSettings,
) -> None:
    # An LLM is configured but never called here: consolidation waits an hour (its window),
    # so what is checked is the raw turn before any fact exists. Replacing it by facts is
    # tests/engine/test_consolidation.py's (scripted OpenAI-compatible server).
    with_llm = settings.model_copy(
        update={
            "llm_base_url": "http://127.0.0.1:9/v1",
            "llm_model": "never-called",
            "consolidation_delay": 3600,
        }
    )
    async with AsyncMemory(settings=with_llm) as memory:
        added = await memory.add("I moved to Lisbon in March.", user_id="lia")
        assert added["results"][0]["status"] == "PENDING" and "id" not in added["results"][0]
        by_words = (await memory.search("Lisbon", user_id="lia"))["results"]
        assert [(h["memory"], h["kind"]) for h in by_words] == [
            ("I moved to Lisbon in March.", "episode")
        ]
        by_meaning = (await memory.search("Where do I live now?", user_id="lia"))["results"]
        assert [h["memory"] for h in by_meaning][:1] == ["I moved to Lisbon in March."]
