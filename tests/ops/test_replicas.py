"""Reads on a real streaming replica (pg_basebackup from the same binaries): search, get and
list go there; a read after this process's own write sees it, by waiting or by the primary."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.replicas import ReadRouter
from tests.ops.procs import TcpPostgres, spawned, stop

WAIT = 1.0  # read_your_writes_wait of the test


@pytest.fixture
def primary_and_replica(home: Path) -> Iterator[tuple[str, TcpPostgres]]:
    primary = TcpPostgres(home / "primary")
    replica: TcpPostgres | None = None
    try:
        url = primary.create_database()
        replica = TcpPostgres(home / "replica", primary=primary)
        yield url, replica
    finally:
        for proc in spawned:
            if proc.poll() is None:
                stop(proc)
        if replica is not None:
            replica.stop()
        primary.stop()


def _replay(replica_url: str, paused: bool) -> None:
    with psycopg.connect(replica_url, autocommit=True) as conn:
        conn.execute("SELECT pg_wal_replay_pause()" if paused else "SELECT pg_wal_replay_resume()")


async def test_reads_go_to_the_replica_and_see_their_own_writes(
    primary_and_replica: tuple[str, TcpPostgres],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Whether a read waited for the replica is read from the router's answers (caught up
    or not, each after its wait) and its warnings, not from how long the read took."""
    caught_up: list[bool] = []  # each fenced read's answer: has the replica replayed it?
    check = ReadRouter._caught_up

    async def recorded(router: ReadRouter, conn: AsyncConn, fence: int) -> bool:
        caught_up.append(await check(router, conn, fence))
        return caught_up[-1]

    monkeypatch.setattr(ReadRouter, "_caught_up", recorded)
    primary_url, replica = primary_and_replica
    replica_url = replica.url()
    base = MemhubSettings(
        embedder="minilm", database_url=primary_url, data_dir=tmp_path, connect_timeout=2.0
    )
    routed = base.model_copy(
        update={"read_database_url": replica_url, "read_your_writes_wait": WAIT}
    )
    async with AsyncMemory(settings=base) as other, AsyncMemory(settings=routed) as memory:
        await other.add("warm-up so the schema exists", user_id="w", infer=False, wait=True)
        _wait_replayed(primary_url, replica_url)

        _replay(replica_url, paused=True)
        try:
            # Another process's write: the paused replica does not have it, so a routed
            # read shows the replica answered (no write of this process fences user "o").
            await other.add("the tram leaves at nine", user_id="o", infer=False, wait=True)
            assert (await memory.search("tram", user_id="o"))["results"] == []
            assert (await memory.get_all(user_id="o"))["results"] == []
            assert len((await other.get_all(user_id="o"))["results"]) == 1

            # This process's own write: the replica cannot replay it, so after waiting
            # read_your_writes_wait the read goes to the primary and sees it.
            added = await memory.add("my locker is 42", user_id="me", infer=False, wait=True)
            caught_up.clear()
            found = await memory.search("locker", user_id="me")
            assert [hit["memory"] for hit in found["results"]] == ["my locker is 42"]
            # each of the search's reads waited read_your_writes_wait, then used the primary
            assert caught_up and not any(caught_up), caught_up
            memory_id = added["results"][0]["id"]
            assert (await memory.get(memory_id))["memory"] == "my locker is 42"
        finally:
            _replay(replica_url, paused=False)

        # Replaying again: both users' data reach the replica, and fenced reads use it.
        _wait_replayed(primary_url, replica_url)
        assert len((await memory.search("tram", user_id="o"))["results"]) == 1
        await memory.add("my bike is green", user_id="me", infer=False, wait=True)
        caught_up.clear()
        found = await memory.search("bike", user_id="me")
        assert found["results"][0]["memory"] == "my bike is green"
        assert caught_up and all(caught_up), "the replica replayed the write: it answered"

        # The replica goes away: reads fall back to the primary, and only the first one
        # waits for the failed connection.
        replica.stop()
        caplog.set_level(logging.WARNING, logger="memhub.store.postgres.replicas")
        assert len((await memory.search("tram", user_id="o"))["results"]) == 1
        assert len((await memory.get_all(user_id="o"))["results"]) == 1
        tried = [r for r in caplog.records if "unavailable for" in r.getMessage()]
        assert len(tried) == 1, "the second read left the failed replica alone"


def _wait_replayed(primary_url: str, replica_url: str, timeout: float = 30) -> None:
    with psycopg.connect(primary_url) as conn:
        row = conn.execute("SELECT pg_current_wal_lsn()").fetchone()
    assert row is not None
    deadline = time.monotonic() + timeout
    with psycopg.connect(replica_url, autocommit=True) as conn:
        while time.monotonic() < deadline:
            if conn.execute("SELECT pg_last_wal_replay_lsn() >= %s", (row[0],)).fetchone() == (
                True,
            ):
                return
            time.sleep(0.05)
    raise AssertionError("the replica never caught up")
