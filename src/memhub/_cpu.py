"""CPU work off the event loop, at the priority of the request it serves.

Embedding a query or reranking passages is CPU work that releases the GIL, so it runs in a
worker thread. Most of it runs at the process's own priority. A request of a client that is
over its quota (a tenant key refused within the last seconds, see
``memhub.memory.access.Quotas``) runs it under :func:`background`: in threads at the lowest
CPU priority (nice 19), which the kernel schedules only on CPU that nothing else at normal
priority wants. A flooding tenant keeps what its quota admits when the machine has CPU to
spare, and costs the other tenants what a nice-19 neighbour costs them when it has not
(``bench/server_limits.py`` measures both).

Linux sets a nice value per thread; elsewhere ``setpriority`` would lower the whole process,
so on other systems the background threads keep the process's priority.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import os
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

__all__ = ["BACKGROUND_NICE", "background", "in_background", "run_cpu"]

P = ParamSpec("P")
T = TypeVar("T")

BACKGROUND_NICE = 19
"""The nice value of background threads: the lowest priority, a share of 15 to a normal 1024."""

logger = logging.getLogger(__name__)

_background: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "memhub_background_cpu", default=False
)
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()


@contextlib.contextmanager
def background(enabled: bool = True) -> Iterator[None]:
    """Run the CPU work started inside this block (in this task and its children) niced.

    ``background(False)`` changes nothing, so a caller says ``with background(over_quota):``.
    """
    if not enabled:
        yield
        return
    token = _background.set(True)
    try:
        yield
    finally:
        _background.reset(token)


def in_background() -> bool:
    """Whether CPU work started here would run at background priority."""
    return _background.get()


async def run_cpu(func: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """``asyncio.to_thread``, in a background thread inside :func:`background`."""
    if not _background.get():
        return await asyncio.to_thread(func, *args, **kwargs)
    call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_background_executor(), call)


def _background_executor() -> ThreadPoolExecutor:
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = ThreadPoolExecutor(
                max_workers=os.cpu_count() or 1,
                thread_name_prefix="memhub-background",
                initializer=_lower_priority,
            )
        return _executor


def _lower_priority() -> None:
    if sys.platform != "linux":  # setpriority on a thread id would lower the whole process
        return
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except OSError as exc:  # a sandbox may forbid it: the work still runs, at normal priority
        logger.debug("cannot lower a background thread's priority: %s", exc)
