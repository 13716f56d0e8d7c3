"""Engines and pools are shared per event loop and per effective settings, nothing more."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psycopg
from psycopg import sql

from memhub import AsyncMemory, MemhubSettings
from memhub.embed import Embedder, create_embedder
from memhub.memory.services import acquire_services, release_services
from memhub.store.postgres.database import acquire_database, release_database
from memhub.store.postgres.embedded import embedded_database_url


async def _add_and_list(memory: AsyncMemory, user: str, n: int) -> list[str]:
    for i in range(n):
        await memory.add(f"{user} fact {i}", user_id=user, infer=False, wait=True)
        await asyncio.sleep(0)
    listed = (await memory.get_all(user_id=user))["results"]
    return sorted(str(item["memory"]) for item in listed)


def test_two_asyncio_runs_in_a_row(settings: MemhubSettings) -> None:
    async def run(user: str) -> tuple[object, list[str]]:
        memory = AsyncMemory(settings=settings)
        services = await memory._services()
        try:
            return services, await _add_and_list(memory, user, 2)
        finally:
            await memory.aclose()

    first, listed = asyncio.run(run("one"))
    assert listed == ["one fact 0", "one fact 1"]
    second, listed = asyncio.run(run("two"))
    assert listed == ["two fact 0", "two fact 1"]
    assert second is not first


async def test_a_memory_opened_after_another_closed_on_the_same_loop_still_works(
    settings: MemhubSettings,
) -> None:
    # The first close() released the loop's exit guard; a release by cancellation landed
    # only after the second memory had opened, and "finished" (closed) its new engine: its
    # adds from the second on stayed PENDING and wait_idle() never returned.
    # On memory:// the second engine opens without waiting on I/O, before the cancelled
    # guard ran: the order in which it happened every time (on PostgreSQL, only sometimes).
    quick = settings.model_copy(update={"wait_timeout": 10.0, "database_url": "memory://"})
    for user in ("first", "second"):
        async with AsyncMemory(settings=quick) as memory:
            for i in range(3):
                added = await memory.add(f"{user} fact {i}", user_id=user, infer=False, wait=True)
                assert added["status"] == "DONE", (user, i)
            await asyncio.wait_for(memory.wait_idle(), 10)


def test_a_new_loop_never_inherits_an_unclosed_engine(settings: MemhubSettings) -> None:
    async def leave_open() -> object:
        return await acquire_services(settings)  # never released: its loop dies with it

    leaked = asyncio.run(leave_open())

    async def reopen() -> None:
        services = await acquire_services(settings)
        try:
            assert services is not leaked
            assert await services.store.pending_jobs() == 0  # its pool works on this loop
        finally:
            await release_services(services)

    asyncio.run(reopen())


def test_two_overlapping_asyncio_runs_in_threads(settings: MemhubSettings) -> None:
    barrier = threading.Barrier(2, timeout=60)
    results: dict[str, list[str]] = {}
    errors: list[BaseException] = []

    async def run(user: str) -> None:
        async with AsyncMemory(settings=settings) as memory:
            await memory._services()
            await asyncio.to_thread(barrier.wait)  # both engines are open now
            results[user] = await _add_and_list(memory, user, 3)
            await asyncio.to_thread(barrier.wait)  # and both are still open here

    def thread(user: str) -> None:
        try:
            asyncio.run(run(user))
        except BaseException as exc:  # reported below, with the thread's traceback
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=thread, args=(u,)) for u in ("left", "right")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    assert results == {u: [f"{u} fact {i}" for i in range(3)] for u in ("left", "right")}


def test_two_database_names_each_get_their_own_writes(pg_home: Path, tmp_path: Path) -> None:
    names = ["memhub_test_name_a", "memhub_test_name_b"]

    async def run() -> None:
        memories = [
            AsyncMemory(
                settings=MemhubSettings(
                    embedder="minilm", data_dir=pg_home, database_name=name, connect_timeout=10
                )
            )
            for name in names
        ]
        try:
            for memory, name in zip(memories, names, strict=True):
                await memory.add(f"stored in {name}", user_id="u", infer=False, wait=True)
        finally:
            for memory in memories:
                await memory.aclose()

    admin = embedded_database_url(pg_home, "postgres")
    try:
        asyncio.run(run())
        for name in names:
            with psycopg.connect(embedded_database_url(pg_home, name)) as conn:
                rows = conn.execute("SELECT memory FROM memories").fetchall()
            assert [r[0] for r in rows] == [f"stored in {name}"]
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            for name in names:
                conn.execute(
                    sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
                )


async def test_engines_differ_with_any_setting(settings: MemhubSettings) -> None:
    variants = [
        settings,
        settings.model_copy(update={"job_max_attempts": 2}),
        settings.model_copy(update={"consolidation_delay": 9.0}),
        settings.model_copy(update={"worker": "off"}),
        settings.model_copy(update={"statement_timeout_ms": 12_345}),
    ]
    engines = [await acquire_services(s) for s in variants]
    again = await acquire_services(settings.model_copy())
    try:
        assert len({id(e) for e in engines}) == len(variants)
        assert again is engines[0]
    finally:
        for services in [*engines, again]:
            await release_services(services)


async def test_pools_differ_with_pool_settings(settings: MemhubSettings) -> None:
    small = await acquire_database(settings.model_copy(update={"pool_max_size": 2}))
    large = await acquire_database(settings.model_copy(update={"pool_max_size": 7}))
    same = await acquire_database(settings.model_copy(update={"pool_max_size": 7}))
    try:
        assert small is not large and same is large
        assert small.pool is not None and small.pool.max_size == 2
        assert large.pool is not None and large.pool.max_size == 7
    finally:
        for database in (small, large, same):
            await release_database(database)


class CallersEmbedder:
    """The real default embedder, owned by the caller; it records whether memhub closed it."""

    def __init__(self) -> None:
        self.inner = create_embedder("minilm")
        self.closed = False

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def model_name(self) -> str:
        return self.inner.model_name

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return await self.inner.embed(texts)

    async def aclose(self) -> None:
        self.closed = True
        await self.inner.aclose()


async def test_closing_an_engine_leaves_the_callers_embedder_alone(
    settings: MemhubSettings,
) -> None:
    embedder = CallersEmbedder()
    mine: Embedder = embedder
    async with AsyncMemory(settings=settings, embedder=mine) as memory:
        await memory.add("I like tea", user_id="u", infer=False, wait=True)
    assert not embedder.closed
    assert (await embedder.embed(["still usable"])).shape == (1, embedder.dimension)
    await embedder.aclose()
