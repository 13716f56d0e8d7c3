"""CPU work at the priority of the request it serves (memhub._cpu): real threads, and the
nice value the kernel reports for each."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest

from memhub._cpu import (
    BACKGROUND_NICE,
    background,
    bulk,
    cpu_share,
    cpu_slots,
    in_background,
    owned_by,
    run_cpu,
)

linux_only = pytest.mark.skipif(sys.platform != "linux", reason="a nice value per thread")


def _nice() -> int:
    """The calling thread's own nice value (a thread id, not the process's)."""
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@linux_only
async def test_background_work_runs_niced_and_other_work_does_not() -> None:
    own = os.getpriority(os.PRIO_PROCESS, 0)
    assert await run_cpu(_nice) == own
    with background():
        assert await run_cpu(_nice) == BACKGROUND_NICE
        assert await asyncio.gather(*(run_cpu(_nice) for _ in range(4))) == [BACKGROUND_NICE] * 4
    assert await run_cpu(_nice) == own, "the block's end must end the background priority"
    assert _nice() == own, "the event loop's own thread must never be niced"


async def test_the_flag_reaches_the_thread_and_tasks_started_inside() -> None:
    assert not in_background()
    with background():
        assert await run_cpu(in_background)
        child = asyncio.create_task(run_cpu(in_background))
    assert await child, "a task started inside the block inherits the priority"
    assert not await run_cpu(in_background)


async def test_errors_and_arguments_pass_through() -> None:
    def divide(a: int, b: int = 1) -> float:
        return a / b

    with background():
        assert await run_cpu(divide, 6, b=3) == 2
        with pytest.raises(ZeroDivisionError):
            await run_cpu(divide, 1, b=0)


async def test_background_false_changes_nothing() -> None:
    with background(False):
        assert not await run_cpu(in_background)
    with background(), background(False):
        assert await run_cpu(in_background), "an inner background(False) does not lift it"


async def test_a_quiet_owners_call_starts_at_once_whatever_a_busy_one_queued() -> None:
    """Real threads: tenant a has 20 calls waiting for the CPU slots, then tenant b one.
    b has nothing running: its call starts at once, in the spare slot, before any of a's
    waiting calls."""
    go = threading.Event()
    started: list[str] = []
    lock = threading.Lock()

    def work(name: str) -> None:
        with lock:
            started.append(name)
        go.wait(10)

    async def call(owner: str, n: int) -> None:
        with owned_by(owner):
            await run_cpu(work, f"{owner}{n}")

    calls = [asyncio.create_task(call("a", n)) for n in range(20)]
    await asyncio.sleep(0)
    calls.append(asyncio.create_task(call("b", 0)))
    await asyncio.sleep(0)
    assert cpu_share().queue.waiting("a") == 20 - cpu_slots()
    assert cpu_share().queue.running["b"] == 1, "b's call waited"
    for _ in range(1_000):  # its thread records itself (a bounded number of loop turns)
        if "b0" in started:
            break
        await asyncio.sleep(0.01)
    go.set()
    await asyncio.gather(*calls)
    assert started.index("b0") <= cpu_slots()
    assert cpu_share().queue.busy == 0


async def test_bulk_work_starts_after_waiting_queries() -> None:
    """The worker's bulk calls wait while a query is waiting for a CPU slot."""
    go = threading.Event()
    started: list[str] = []

    def work(name: str) -> None:
        started.append(name)
        go.wait(10)

    async def call(name: str, is_bulk: bool) -> None:
        if is_bulk:
            with bulk(), owned_by("(worker)"):
                await run_cpu(work, name)
        else:
            with owned_by("t"):
                await run_cpu(work, name)

    slots = cpu_slots()
    calls = [asyncio.create_task(call(f"bulk{n}", True)) for n in range(slots + 2)]
    await asyncio.sleep(0)
    calls.append(asyncio.create_task(call("query", False)))
    await asyncio.sleep(0)
    go.set()
    await asyncio.gather(*calls)
    # The first slot freed goes to the query (first come, first served would start it
    # last); the thread of the next bulk call, started a moment later, may record itself first.
    assert started.index("query") <= slots + 1
    assert started[-1].startswith("bulk")
