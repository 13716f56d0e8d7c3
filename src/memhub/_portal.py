"""Run memhub's async core from synchronous code: one event loop thread per process.

A dedicated loop (rather than ``asyncio.run`` per call) keeps one connection pool per process
for every sync caller and every thread, and works inside a running loop (Jupyter) too.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["is_portal_loop", "portal_loop", "run_sync"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def portal_loop() -> asyncio.AbstractEventLoop:
    """The process's background loop, started on first use."""
    global _loop, _thread
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="memhub-loop", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
            _at_exit(_stop_portal)
        return _loop


def _at_exit(hook: Callable[[], None]) -> None:
    """Run ``hook`` when the interpreter starts to exit, before anything else shuts down.

    ``atexit`` is too late: by then ``concurrent.futures`` has refused new work (so
    ``asyncio.to_thread`` fails), and the embedded server, whose own atexit hook was
    registered after this loop started, has stopped under the open pools. Hooks of
    ``threading`` run first, newest first: importing the executor module first puts this
    one ahead of its shutdown.
    """
    import concurrent.futures.thread  # noqa: F401  (registers its exit hook before ours)

    register = getattr(threading, "_register_atexit", None)
    try:
        if register is None:
            raise RuntimeError("no threading exit hooks")
        register(hook)
    except RuntimeError:  # already exiting, or another Python: plain atexit, best effort
        atexit.register(hook)


def run_sync(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the portal loop and wait for its result in the calling thread."""
    loop = portal_loop()
    if threading.current_thread() is _thread:
        coro.close()
        raise RuntimeError("memhub's sync API was called from its own event loop; use AsyncMemory")
    future: Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result(timeout)
    except BaseException:
        future.cancel()
        raise


def _stop_portal() -> None:
    global _loop
    with _lock:
        loop, _loop = _loop, None
    if loop is None or loop.is_closed():
        return
    from memhub.memory.services import finish_all_services
    from memhub.store import close_all_stores

    async def shutdown() -> None:
        await finish_all_services()  # workers first: they use the pools
        await close_all_stores()

    # Bounded (the engines' exit_timeout, then the pools' close); at interpreter exit a
    # pool that cannot close cleanly is not worth a traceback.
    with contextlib.suppress(Exception):
        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)


def is_portal_loop(loop: asyncio.AbstractEventLoop) -> bool:
    """``loop`` is the sync API's loop (whose exit :func:`_stop_portal` handles)."""
    return loop is _loop
