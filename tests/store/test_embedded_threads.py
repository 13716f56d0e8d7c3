"""The embedded server's watch under several threads: one event loop per thread (a threaded
web app, several sync ``Memory`` users) and the restart thread look at one postmaster."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

from memhub import AsyncMemory, MemhubSettings
from memhub.errors import StatementTimeout, StoreUnavailable
from memhub.store.postgres import embedded
from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server
from memhub.testing import FakeEmbedder
from tests.ops.procs import postmaster_pid, private_home, wait_gone


def test_threads_polling_one_postmaster_at_once_never_collide() -> None:
    # A select.poll object raises "concurrent poll() invocation" when two threads poll it at
    # once; the pre-checkout check of every event loop polls the same one.
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    failures: list[BaseException] = []

    def look() -> None:
        try:
            for _ in range(20_000):
                assert not embedded._exited(child.pid)
        except BaseException as exc:
            failures.append(exc)

    try:
        threads = [threading.Thread(target=look) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        child.kill()
        child.wait()
    assert failures == []
    assert embedded._exited(child.pid)


Outcome = tuple[bool, str]  # (the call started after the kill, what it came to)


def _serve(
    settings: MemhubSettings,
    killed: threading.Event,
    stop: threading.Event,
    outcomes: list[Outcome],
    name: str,
) -> None:
    async def run() -> None:
        async with AsyncMemory(settings=settings, embedder=FakeEmbedder()) as memory:
            n = 0
            while not stop.is_set():
                n += 1
                after_kill = killed.is_set()
                try:
                    await memory.add(f"{name} note {n}", user_id=name, infer=False)
                    await memory.search(f"note {n}", user_id=name, limit=3)
                    outcomes.append((after_kill, "ok"))
                except (StoreUnavailable, StatementTimeout):
                    outcomes.append((after_kill, "unavailable"))
                    await asyncio.sleep(0.05)
                except Exception as exc:
                    outcomes.append((after_kill, f"{type(exc).__name__}: {exc}"))

    asyncio.run(run())


def _seen(outcomes: dict[str, list[Outcome]]) -> dict[str, list[Outcome]]:
    return {name: sorted(set(seen)) for name, seen in outcomes.items()}


def _wait_until_each(outcomes: dict[str, list[Outcome]], wanted: Outcome, what: str) -> None:
    """Poll until every thread has had ``wanted``; fail only after two minutes without it."""
    deadline = time.monotonic() + 120
    while not all(wanted in seen for seen in outcomes.values()):
        assert time.monotonic() < deadline, f"{what}: {_seen(outcomes)}"
        time.sleep(0.05)


def test_two_threads_with_their_own_loops_survive_a_postmaster_restart() -> None:
    home = private_home()
    # No worker here, so no search wait for one (search_wait_timeout): each call is quick.
    settings = MemhubSettings(
        embedder="minilm", data_dir=home, connect_timeout=2.0, worker="off", search_wait_timeout=0.0
    )
    killed, stop = threading.Event(), threading.Event()
    outcomes: dict[str, list[Outcome]] = {"a": [], "b": []}
    threads = [
        threading.Thread(target=_serve, args=(settings, killed, stop, outcomes[name], name))
        for name in outcomes
    ]
    try:
        embedded_database_url(home)  # started and migrated before the threads run

        async def migrate() -> None:
            async with AsyncMemory(settings=settings, embedder=FakeEmbedder()) as memory:
                await memory.open()

        asyncio.run(migrate())
        for thread in threads:
            thread.start()
        _wait_until_each(outcomes, (False, "ok"), "a thread never served before the kill")
        old = postmaster_pid(home / "pg")
        assert old is not None
        os.kill(old, signal.SIGKILL)
        killed.set()  # calls started from here on began after the kill
        _wait_until_each(outcomes, (True, "ok"), "a thread never served again after the restart")
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
        for name, seen in outcomes.items():
            kinds = {kind for _, kind in seen}
            assert kinds <= {"ok", "unavailable"}, f"thread {name}: {kinds - {'ok', 'unavailable'}}"
        new = postmaster_pid(home / "pg")
        assert new is not None and new != old
    finally:
        stop.set()
        stop_embedded_server(home, force=True)
        pid = postmaster_pid(home / "pg")
        if pid is not None:
            wait_gone(pid)
        shutil.rmtree(home, ignore_errors=True)
