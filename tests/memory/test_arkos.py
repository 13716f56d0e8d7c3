"""ARKOS's memory API on memhub, against a real PostgreSQL: as ARKOS's own code uses it."""

from __future__ import annotations

import asyncio
import json
import logging
import threading

import psycopg
import pytest
from psycopg import sql

from memhub import (
    AIMessage,
    AsyncMemory,
    MemhubSettings,
    Memory,
    SystemMessage,
    UsageError,
    UserMessage,
)
from memhub.messages import message_class
from tests.fix_postgres import database_url

# ARKOS's DDL, verbatim from its memory module documentation.
ARKOS_DDL = """
CREATE TABLE conversation_context (
    id SERIAL PRIMARY KEY,
    user_id VARCHAR(255) NOT NULL,
    session_id VARCHAR(255) NOT NULL,
    role VARCHAR(50) NOT NULL,
    message TEXT NOT NULL,
    created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX idx_user_id ON conversation_context(user_id);
CREATE INDEX idx_session_id ON conversation_context(session_id);
"""


@pytest.fixture
def arkos_db_url(pg_admin_url: str) -> str:
    """A database created by ARKOS's DDL alone, before memhub ever saw it."""
    name = "arkos_made"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = database_url(pg_admin_url, name)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(ARKOS_DDL.encode())
    return url


def test_seed_example_runs_as_written(settings: MemhubSettings) -> None:
    memory = Memory(user_id="alice", session_id=None, db_url=settings.database_url)
    assert memory.add_memory(UserMessage(content="My favorite color is blue"))
    assert memory.add_memory(AIMessage(content="I'll remember that you like blue!"))
    context = memory.retrieve_short_memory(turns=5)
    assert [(m.role, m.content) for m in context] == [
        ("user", "My favorite color is blue"),
        ("assistant", "I'll remember that you like blue!"),
    ]
    memory.close()


def test_arkos_database_works_both_ways(arkos_db_url: str, tmp_path: object) -> None:
    # Rows written by ARKOS's own SQL, before and after memhub migrated the table.
    with psycopg.connect(arkos_db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO conversation_context (user_id, session_id, role, message) VALUES (%s, %s, %s, %s)",
            ("bob", "s1", "user", json.dumps({"content": "from ARKOS", "role": "user"})),
        )
    memory = Memory(user_id="bob", session_id="s1", db_url=arkos_db_url, use_long_term=False)
    assert memory.add_memory(AIMessage(content="from memhub"))
    with psycopg.connect(arkos_db_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO conversation_context (user_id, session_id, role, message) VALUES (%s, %s, %s, %s)",
            ("bob", "s1", "user", json.dumps({"content": "ARKOS again", "role": "user"})),
        )
        # ARKOS's read: newest first, deserialised by role.
        rows = conn.execute(
            "SELECT role, message FROM conversation_context WHERE user_id = %s AND session_id = %s"
            " ORDER BY id DESC LIMIT 10",
            ("bob", "s1"),
        ).fetchall()
    arkos_view = [message_class(role)(**json.loads(text)) for role, text in reversed(rows)]
    assert [m.content for m in arkos_view] == ["from ARKOS", "from memhub", "ARKOS again"]
    assert [m.content for m in memory.retrieve_short_memory(turns=10)] == [
        "from ARKOS",
        "from memhub",
        "ARKOS again",
    ]
    memory.close()


def test_sessions_and_users_are_scoped(settings: MemhubSettings) -> None:
    alice = Memory(user_id="alice", session_id="s1", settings=settings)
    alice_other = Memory(user_id="alice", session_id="s2", settings=settings)
    bob = Memory(user_id="bob", session_id="s1", settings=settings)
    for i in range(3):
        assert alice.add_memory(UserMessage(content=f"alice s1 {i}"))
        assert alice_other.add_memory(UserMessage(content=f"alice s2 {i}"))
        assert bob.add_memory(UserMessage(content=f"bob s1 {i}"))
    assert [m.content for m in alice.retrieve_short_memory(turns=10)] == [
        "alice s1 0",
        "alice s1 1",
        "alice s1 2",
    ]
    assert [m.content for m in bob.retrieve_short_memory(turns=2)] == ["bob s1 1", "bob s1 2"]
    new_session = alice.start_new_session()
    assert alice.session_id == new_session != "s1"
    assert alice.retrieve_short_memory(turns=5) == []


def test_concurrent_threads_lose_nothing(settings: MemhubSettings, db_url: str) -> None:
    memory = Memory(user_id="busy", session_id="one", settings=settings)
    results: list[bool] = []
    lock = threading.Lock()

    def writer(thread_no: int) -> None:
        for i in range(200):
            ok = memory.add_memory(UserMessage(content=f"t{thread_no}-m{i}"))
            with lock:
                results.append(ok)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) == 1600
    with psycopg.connect(db_url) as conn:
        rows = conn.execute(
            "SELECT message FROM conversation_context WHERE session_id = 'one'"
        ).fetchall()
    contents = [json.loads(text)["content"] for (text,) in rows]
    assert len(contents) == 1600
    assert len(set(contents)) == 1600
    # Each thread's own messages come back in the order it wrote them.
    history = memory.retrieve_short_memory(turns=1600)
    for n in range(8):
        mine = [m.content for m in history if m.content.startswith(f"t{n}-")]
        assert mine == [f"t{n}-m{i}" for i in range(200)]


async def test_async_api_under_gather(settings: MemhubSettings) -> None:
    # 200 adds queue for the pool's 10 connections; the fixture's 3 s wait for one is a
    # deadline a loaded machine misses (seen beside eight CPU burners), not what is tested
    patient = settings.model_copy(update={"connect_timeout": 120.0})
    async with AsyncMemory(user_id="async", session_id="g", settings=patient) as memory:
        oks = await asyncio.gather(
            *(memory.add_memory(UserMessage(content=f"m{i}")) for i in range(200))
        )
        assert all(oks)
        history = await memory.retrieve_short_memory(turns=500)
        assert sorted(m.content for m in history) == sorted(f"m{i}" for i in range(200))


def test_long_term_turn_and_job_commit_together(settings: MemhubSettings, db_url: str) -> None:
    memory = Memory(user_id="carol", session_id="s", settings=settings, use_long_term=True)
    assert memory.add_memory(SystemMessage(content="My favorite color is blue"))
    short_only = Memory(user_id="carol", session_id="s", settings=settings, use_long_term=False)
    assert short_only.add_memory(UserMessage(content="not for long-term"))
    with psycopg.connect(db_url) as conn:
        jobs = conn.execute("SELECT payload FROM memory_jobs WHERE user_id = 'carol'").fetchall()
        first_id = conn.execute("SELECT min(id) FROM conversation_context").fetchone()
    assert first_id is not None
    assert [payload["turn_ids"] for (payload,) in jobs] == [[first_id[0]]]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"user_id": ""}, "user_id must not be empty"),
        ({"user_id": "x" * 256}, "the limit is 255"),
        ({"user_id": "ok", "session_id": "  "}, "session_id must not be empty"),
        ({"user_id": 7}, "user_id must be a string"),
    ],
)
def test_bad_ids_are_clear_errors(
    kwargs: dict[str, object], message: str, settings: MemhubSettings
) -> None:
    with pytest.raises(UsageError, match=message):
        Memory(settings=settings, **kwargs)  # type: ignore[arg-type]


def test_bad_input_returns_false_and_logs(
    settings: MemhubSettings, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    memory = Memory(user_id="dave", session_id="s", settings=settings)
    with caplog.at_level(logging.ERROR, logger="memhub"):
        assert memory.add_memory("not a message") is False  # type: ignore[arg-type]
        assert memory.add_memory(UserMessage(content="x" * 40_000)) is False
        assert memory.add_memory(UserMessage(content="nul \x00 byte")) is False
        assert memory.retrieve_short_memory(turns=0) == []
        assert memory.retrieve_short_memory(turns=-3) == []
    assert "expected a memhub Message" in caplog.text
    assert "the limit is 32000" in caplog.text
    assert "turns must be a positive integer" in caplog.text
    with pytest.raises(UsageError):
        memory.short_memory(0)
    with psycopg.connect(db_url) as conn:
        count = conn.execute("SELECT count(*) FROM conversation_context").fetchone()
        jobs = conn.execute("SELECT count(*) FROM memory_jobs").fetchone()
    assert count == (0,) and jobs == (0,)
