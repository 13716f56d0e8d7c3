"""CPU work at the priority of the request it serves (memhub._cpu): real threads, and the
nice value the kernel reports for each."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest

from memhub._cpu import BACKGROUND_NICE, background, in_background, run_cpu

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
