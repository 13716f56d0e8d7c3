"""CPU work off the event loop, at the priority of the request it serves.

Embedding a query or reranking passages is CPU work that releases the GIL, so it runs in a
worker thread. Most of it runs at the process's own priority. A request of a client that is
over its quota (a tenant key refused within the last seconds, see
``memhub.doors.access.Quotas``) runs it under :func:`background`: in threads at the lowest
CPU priority (nice 19), which the kernel schedules only on CPU that nothing else at normal
priority wants. A flooding tenant keeps what its quota admits when the machine has CPU to
spare, and costs the other tenants what a nice-19 neighbour costs them when it has not
(``bench/server_limits.py`` measures both).

Linux sets a nice value per thread; elsewhere ``setpriority`` would lower the whole process,
so on other systems the background threads keep the process's priority.

All of it also takes turns: an event loop runs at most one such call per core at a time,
and when more want to run, a :class:`memhub._fair.FairShare` picks the next by owner (the
tenant a request serves, :func:`owned_by`): the owner with the fewest calls running, owners
with as many in turn, and bulk work (:func:`bulk`: the worker's embedding of queued turns)
and over-quota work after the rest. So one tenant's hundred queued embeddings delay another's
query embedding by at most the calls already running.
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
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from memhub._fair import FairShare

__all__ = [
    "BACKGROUND_NICE",
    "background",
    "bulk",
    "cpu_share",
    "cpu_slots",
    "in_background",
    "owned_by",
    "run_cpu",
]

P = ParamSpec("P")
T = TypeVar("T")

BACKGROUND_NICE = 19
"""The nice value of background threads: the lowest priority, a share of 15 to a normal 1024."""

logger = logging.getLogger(__name__)

_background: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "memhub_background_cpu", default=False
)
_bulk: contextvars.ContextVar[bool] = contextvars.ContextVar("memhub_bulk_cpu", default=False)
_owner: contextvars.ContextVar[str] = contextvars.ContextVar("memhub_cpu_owner", default="")
_executor: ThreadPoolExecutor | None = None
_executor_lock = threading.Lock()
_shares: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, FairShare] = (
    weakref.WeakKeyDictionary()
)


def cpu_slots() -> int:
    """CPU calls run at once: one per core this process may use (each runs one thread)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cpu_share() -> FairShare:
    """The running loop's turns at the CPU slots."""
    loop = asyncio.get_running_loop()
    share = _shares.get(loop)
    if share is None:
        share = _shares[loop] = FairShare(cpu_slots())
    return share


@contextlib.contextmanager
def owned_by(owner: str) -> Iterator[None]:
    """The CPU work started inside this block is ``owner``'s (a tenant): it takes turns
    with other owners' (see the module's docstring)."""
    token = _owner.set(owner)
    try:
        yield
    finally:
        _owner.reset(token)


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """The CPU work started inside this block waits for queries: it starts when none waits
    (or after a few in a row, so it is never starved)."""
    token = _bulk.set(True)
    try:
        yield
    finally:
        _bulk.reset(token)


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
    """``asyncio.to_thread`` at its owner's turn; in a background thread inside
    :func:`background`."""
    owner, niced = _owner.get(), _background.get()
    share = cpu_share()
    await share.enter(owner, later=niced or _bulk.get())
    try:
        call = functools.partial(contextvars.copy_context().run, func, *args, **kwargs)
        executor = _background_executor() if niced else None
        running = asyncio.get_running_loop().run_in_executor(executor, call)
    except BaseException:
        share.leave(owner)
        raise
    # The slot is the thread's, not the caller's: a cancelled caller leaves it running, and
    # its slot is freed when it ends.
    running.add_done_callback(lambda _: share.leave(owner))
    return await asyncio.shield(running)


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
