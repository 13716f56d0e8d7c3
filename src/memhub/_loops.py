"""Objects shared per event loop: reference-counted, keyed by the loop object itself.

A loop is held weakly (a new loop never inherits a dead one's objects, as it could when keyed
by ``id(loop)``), and each loop has its own lock, so two ``asyncio.run()`` in threads never
share an ``asyncio.Lock``.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["LoopShared"]

V = TypeVar("V")


@dataclass
class _Entry(Generic[V]):
    value: V
    users: int = 0


@dataclass
class _Shelf(Generic[V]):
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    entries: dict[Hashable, _Entry[V]] = field(default_factory=dict)


class LoopShared(Generic[V]):
    """Values opened once per (running loop, key) and closed with their last user."""

    def __init__(self) -> None:
        self._shelves: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Shelf[V]] = (
            weakref.WeakKeyDictionary()
        )
        self._guard = threading.Lock()  # loops of several threads add shelves concurrently

    def _shelf(self) -> _Shelf[V]:
        loop = asyncio.get_running_loop()
        with self._guard:
            shelf = self._shelves.get(loop)
            if shelf is None:
                shelf = self._shelves[loop] = _Shelf()
            return shelf

    async def acquire(self, key: Hashable, open_: Callable[[], Awaitable[V]]) -> V:
        """The value for ``key`` on the running loop, opened by ``open_`` on first use."""
        shelf = self._shelf()
        async with shelf.lock:
            entry = shelf.entries.get(key)
            if entry is None:
                entry = shelf.entries[key] = _Entry(await open_())
            entry.users += 1
            return entry.value

    async def release(self, value: V) -> bool:
        """Drop one user of ``value``; True when that was the last one (the caller closes it)."""
        shelf = self._shelf()
        async with shelf.lock:
            for key, entry in shelf.entries.items():
                if entry.value is value:
                    entry.users -= 1
                    if entry.users > 0:
                        return False
                    del shelf.entries[key]
                    return True
        return False

    def take_all(self) -> list[V]:
        """Forget every value of the running loop and return them (for closing at exit)."""
        loop = asyncio.get_running_loop()
        with self._guard:
            shelf = self._shelves.pop(loop, None)
        return [] if shelf is None else [entry.value for entry in shelf.entries.values()]

    def count(self) -> int:
        """How many values the running loop holds."""
        loop = asyncio.get_running_loop()
        with self._guard:
            shelf = self._shelves.get(loop)
        return 0 if shelf is None else len(shelf.entries)
