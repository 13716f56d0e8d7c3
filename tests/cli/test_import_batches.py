"""``memhub import`` in batched transactions: searchable at once, atomic, resumable after a kill."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.cli.imports import import_jsonl
from memhub.memory.importer import CheckedItem, Importer, ImportRecord, source_identity
from memhub.store.records import Scope
from tests.ops.procs import memhub_env

Conn = psycopg.AsyncConnection[tuple[Any, ...]]
TABLES = ("conversation_context", "memories", "memory_history", "memory_jobs", "import_cursors")


def write_lines(path: Path, lines: list[object]) -> Path:
    path.write_text("".join(x if isinstance(x, str) else json.dumps(x) + "\n" for x in lines))
    return path


def facts(n: int, start: int = 0) -> list[object]:
    return [{"user_id": "ada", "text": f"imported fact number {i}"} for i in range(start, n)]


async def counts(aconn: Conn) -> dict[str, int]:
    found = {}
    for table in TABLES:
        cur = await aconn.execute(f"SELECT count(*) FROM {table}")
        found[table] = int((await cur.fetchone() or (0,))[0])
    return found


def quiet(settings: MemhubSettings) -> MemhubSettings:
    return settings.model_copy(update={"worker": "off"})


async def test_a_committed_batch_is_keyword_searchable_before_any_worker_runs(
    settings: MemhubSettings, tmp_path: Path, aconn: Conn
) -> None:
    path = write_lines(tmp_path / "in.jsonl", facts(30))
    report = await import_jsonl(
        quiet(settings), path, batch=7, wait=False, stream=io.StringIO(), infer=False
    )
    assert (report.lines, report.added, report.bad) == (30, 30, [])
    cur = await aconn.execute("SELECT count(*), count(embedding) FROM memories")
    assert await cur.fetchone() == (30, 0)  # text only: no worker has run
    async with AsyncMemory(settings=quiet(settings)) as memory:
        hits = (await memory.search("fact number 17", user_id="ada", limit=3))["results"]
        assert hits[0]["memory"] == "imported fact number 17"
        before = {m["id"] for m in (await memory.get_all(user_id="ada", limit=100))["results"]}
        await memory.wait_idle()  # the worker embeds them: same memories, now with vectors
        after = {m["id"] for m in (await memory.get_all(user_id="ada", limit=100))["results"]}
    assert before == after and len(after) == 30
    cur = await aconn.execute("SELECT count(*), count(embedding) FROM memories")
    assert await cur.fetchone() == (30, 30)
    # With its vector, each gets the turn before its own stored for search (migration 0018).
    cur = await aconn.execute(
        "SELECT count(previous_turn_id), count(*) FILTER (WHERE previous_turn_id > 0) FROM memories"
    )
    assert await cur.fetchone() == (30, 29)  # one session: all but the first have one
    cur = await aconn.execute("SELECT count(*) FROM memory_history WHERE event = 'ADD'")
    assert await cur.fetchone() == (30,)  # one ADD each: filling a vector is no second add


async def test_items_an_llm_reads_are_keyword_searchable_before_any_worker_runs(
    settings: MemhubSettings, tmp_path: Path, aconn: Conn
) -> None:
    """With an LLM configured, an item's turns are also written as their memories (episodes)
    in the batch, as add() writes them: the worker only embeds them and asks the model. No
    worker runs here, so no model is called (the URL is never dialled)."""
    reads = quiet(settings).model_copy(
        update={"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "never-called"}
    )
    path = write_lines(tmp_path / "in.jsonl", facts(5))
    report = await import_jsonl(reads, path, wait=False, stream=io.StringIO(), infer=True)
    assert (report.lines, report.added, report.bad) == (5, 5, [])
    cur = await aconn.execute("SELECT count(*), count(embedding), count(role) FROM memories")
    assert await cur.fetchone() == (5, 0, 5)  # episodes, text only
    cur = await aconn.execute(
        "SELECT count(*), count(*) FILTER (WHERE payload ? 'memory_ids')"
        " FROM memory_jobs WHERE kind = 'ingest'"
    )
    assert await cur.fetchone() == (5, 5)  # one job per item, as add() queues it
    async with AsyncMemory(settings=reads) as memory:
        hits = (await memory.search("fact number 3", user_id="ada", limit=2))["results"]
    assert hits[0]["memory"] == "imported fact number 3"


async def test_a_memory_deleted_before_it_is_embedded_stays_deleted(
    settings: MemhubSettings, tmp_path: Path, aconn: Conn
) -> None:
    path = write_lines(tmp_path / "in.jsonl", facts(3))
    await import_jsonl(quiet(settings), path, wait=False, stream=io.StringIO(), infer=False)
    async with AsyncMemory(settings=quiet(settings)) as memory:
        listed = (await memory.get_all(user_id="ada"))["results"]
        gone = next(m["id"] for m in listed if m["memory"].endswith("number 1"))
        await memory.delete(gone, user_id="ada")
        await memory.wait_idle()
        assert await memory.get(gone) is None
    cur = await aconn.execute("SELECT count(*), count(embedding) FROM memories")
    assert await cur.fetchone() == (2, 2)
    cur = await aconn.execute("SELECT count(*) FROM memory_jobs")
    assert await cur.fetchone() == (0,)


async def test_a_bad_line_stops_the_import_before_its_batch_and_a_rerun_continues(
    settings: MemhubSettings, tmp_path: Path, aconn: Conn
) -> None:
    lines = facts(10)
    lines[6] = {"user_id": "ada", "text": "bad", "timestamp": "last tuesday"}  # line 7
    path = write_lines(tmp_path / "in.jsonl", lines)
    err = io.StringIO()
    report = await import_jsonl(settings, path, batch=4, wait=False, stream=err, infer=False)
    assert report.stopped_at == "line 5" and [w for w, _ in report.bad] == ["line 7"]
    assert "line 7: timestamp 'last tuesday' is not ISO 8601" in err.getvalue()
    assert "nothing from line 5 on was written" in err.getvalue()
    # Lines 1-4 committed with their cursor; nothing of lines 5-8.
    assert (await counts(aconn))["conversation_context"] == 4
    cur = await aconn.execute("SELECT position, finished FROM import_cursors")
    assert await cur.fetchall() == [(4, False)]

    lines[6] = {"user_id": "ada", "text": "imported fact number 6"}
    write_lines(path, lines)
    again = await import_jsonl(settings, path, batch=4, wait=False, stream=io.StringIO())
    assert (again.resumed_at, again.added, again.stopped_at) == (4, 6, None)
    cur = await aconn.execute("SELECT count(*), count(DISTINCT memory) FROM memories")
    assert await cur.fetchone() == (10, 10)
    cur = await aconn.execute("SELECT position, finished FROM import_cursors")
    assert await cur.fetchall() == [(10, True)]

    err = io.StringIO()
    done = await import_jsonl(settings, path, wait=False, stream=err)
    assert done.added == 0 and "all 10 items" in err.getvalue()
    restarted = await import_jsonl(settings, path, wait=False, stream=err, restart=True)
    assert restarted.added == 10
    assert (await counts(aconn))["conversation_context"] == 20


async def test_a_batch_the_database_refuses_writes_nothing(
    settings: MemhubSettings, tmp_path: Path, aconn: Conn
) -> None:
    from memhub.errors import UsageError

    path = write_lines(tmp_path / "in.jsonl", facts(3))
    async with Importer(settings, infer=False) as importer:
        good = [
            importer.check(ImportRecord(f"fact {n}", "ada", None, None, None, None, None))
            for n in range(3)
        ]
        # Past the checks (built by hand): the session column holds 255 characters at most.
        turn = replace(good[0].turns[0], session_id="s" * 300)
        refused = CheckedItem(Scope(user_id="ada"), [turn], True, {"infer": False})
        before = await counts(aconn)
        cursor = source_identity(path)
        with pytest.raises(UsageError, match="the database refused a value"):
            await importer.write([*good, refused], cursor)
        assert await counts(aconn) == before
        assert await importer.cursor(cursor) is None
        assert await importer.write(good, cursor) == 3
    after = await counts(aconn)
    assert after["conversation_context"] == after["memories"] == 3


def test_a_killed_import_resumes_with_nothing_lost_and_nothing_twice(
    db_url: str, tmp_path: Path
) -> None:
    total = 20_000
    path = write_lines(tmp_path / "big.jsonl", facts(total))
    env = memhub_env(MEMHUB_DATA_DIR=str(tmp_path / "data"))
    argv = [sys.executable, "-m", "memhub.cli", "--database-url", db_url, "import", str(path)]
    argv += ["--no-wait", "--no-infer", "--batch", "250"]
    log = tmp_path / "import.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, env=env, stdout=out, stderr=out)
    try:
        with psycopg.connect(db_url, autocommit=True) as conn:
            position = 0
            deadline = time.monotonic() + 120
            while position < 2_000 and time.monotonic() < deadline and proc.poll() is None:
                row = conn.execute("SELECT max(position) FROM import_cursors").fetchone()
                position = int(row[0] or 0) if row else 0
                time.sleep(0.01)
            proc.send_signal(signal.SIGKILL)
            proc.wait(30)
            assert proc.returncode == -signal.SIGKILL, log.read_text()
            row = conn.execute("SELECT position FROM import_cursors").fetchone()
            assert row is not None and 0 < row[0] < total, "the kill came too late to test"
            cursor = int(row[0])
            turns = conn.execute("SELECT count(*) FROM conversation_context").fetchone()
            assert turns == (cursor,)  # the cursor moves with its batch, never apart
            rerun = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
            assert rerun.returncode == 0, rerun.stderr
            assert f"resumed after {cursor} done before" in rerun.stderr
            row = conn.execute(
                "SELECT count(*), count(DISTINCT memory) FROM memories WHERE user_id = 'ada'"
            ).fetchone()
            assert row == (total, total)
            turns = conn.execute("SELECT count(*) FROM conversation_context").fetchone()
            assert turns == (total,)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(30)


async def test_with_an_llm_messages_are_queued_for_it_and_memory_items_stored(
    settings: MemhubSettings, tmp_path: Path, aconn: Conn
) -> None:
    # The LLM is the scripted OpenAI-compatible server of memhub.testing (no model runs here).
    from memhub.testing import ScriptedOpenAIServer

    with ScriptedOpenAIServer() as llm:
        llm.enqueue(
            json.dumps({"operations": [{"op": "ADD", "text": "Ada keeps bees.", "turns": [1]}]})
        )
        llm_settings = settings.model_copy(
            update={
                "llm_base_url": llm.base_url,
                "llm_model": "scripted-model",
                "llm_max_retries": 0,
                "consolidation_delay": 0.0,
            }
        )
        path = write_lines(
            tmp_path / "in.jsonl",
            [
                {"user_id": "ada", "text": "I keep bees."},
                {"user_id": "ada", "memory": "Ada lives in Oslo", "created_at": "2024-01-02"},
            ],
        )
        report = await import_jsonl(llm_settings, path, wait=False, stream=io.StringIO())
        assert report.added == 2
        cur = await aconn.execute("SELECT memory FROM memories ORDER BY memory")
        # the message is written as its episode at once, as add() writes it; facts await the LLM
        assert await cur.fetchall() == [("Ada lives in Oslo",), ("I keep bees.",)]
        cur = await aconn.execute("SELECT count(*) FROM memory_jobs")
        assert await cur.fetchone() == (2,)
        err = io.StringIO()
        again = await import_jsonl(llm_settings, path, stream=err, restart=False)
        assert again.added == 0 and "imported already" in err.getvalue()
        async with AsyncMemory(settings=quiet(llm_settings)) as memory:
            await memory.wait_idle()
            found = (await memory.get_all(user_id="ada"))["results"]
    assert sorted((m["memory"], m["kind"]) for m in found) == [
        ("Ada keeps bees.", "fact"),
        ("Ada lives in Oslo", "episode"),  # an imported memory item is stored as said
        ("I keep bees.", "episode"),  # what was said stays beside the fact drawn from it
    ]


async def test_an_import_embeds_its_own_items_and_leaves_another_users_backlog(
    settings: MemhubSettings, tmp_path: Path, aconn: Conn
) -> None:
    # Another user's backlog, queued first (no worker runs here): the import embeds its own
    # two items, counts only its own jobs, and leaves the backlog to the workers.
    async with AsyncMemory(settings=quiet(settings)) as other:
        for n in range(5):
            await other.add(f"backlog note {n}", user_id="backlog", infer=False)
    path = write_lines(tmp_path / "in.jsonl", facts(2))
    progress = io.StringIO()
    report = await import_jsonl(quiet(settings), path, wait=True, stream=progress, infer=False)
    assert (report.added, report.bad) == (2, [])
    cur = await aconn.execute(
        "SELECT user_id, count(*) FILTER (WHERE status = 'queued') FROM memory_jobs"
        " GROUP BY user_id ORDER BY user_id"
    )
    assert await cur.fetchall() == [("backlog", 5)], "the other user's jobs are not run"
    cur = await aconn.execute(
        "SELECT user_id, count(embedding) FROM memories GROUP BY user_id ORDER BY user_id"
    )
    assert await cur.fetchall() == [("ada", 2), ("backlog", 0)]
    # one job for ada's two items; the backlog's five are not counted
    assert "embed: 1/1 jobs (100%)" in progress.getvalue(), progress.getvalue()
