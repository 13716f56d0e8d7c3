"""Fair shares of a few slots among the owners (tenants) that want them.

A server has a few cores and many tenants. When more work wants to run than there are
slots, who runs next decides what a quiet tenant pays for a busy one: first come, first
served makes one query wait behind a hundred of another tenant's. :class:`FairQueue` decides
instead: an owner with nothing running or waiting starts at once (in a spare slot if need
be), else the owner with the fewest calls running goes next, owners with as many take turns
(round-robin), and a call in the ``later`` lane (a worker's bulk embedding, an over-quota
tenant's request) starts only when no ``first``-lane call waits, or after ``later_every``
first-lane starts in a row, so it is delayed, never starved. :class:`FairShare` is the same
decision for asyncio tasks.

Two instances use it: the server's request slots (``memhub.server.gate``, owner = the API
key's tenant) and the CPU slots of embedding and reranking (``memhub._cpu``, one per core).
A request waiting for something that takes no CPU (the ingestion a read waits for) steps
aside (:func:`step_aside`) and queues again after.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections import Counter, deque
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

__all__ = ["FairQueue", "FairShare", "held_slot", "lending", "step_aside"]

T = TypeVar("T")

LATER_EVERY = 4
"""A waiting later-lane call starts at the latest after this many first-lane starts."""


@dataclass
class FairQueue(Generic[T]):
    """Which waiting call starts when a slot frees (no clock, no I/O: the decision alone).

    Callers :meth:`arrive` with a ticket; True means it may start now, else it waits until a
    :meth:`finish` returns it. A waiting ticket can be :meth:`withdraw`-n.

    Attributes:
        slots: How many calls run at once.
        later_every: First-lane starts in a row after which a waiting later-lane call goes.
        spare: Slots beyond ``slots`` that only an idle owner's first-lane call may take
            (an owner with nothing running or waiting), so that it starts at once.
    """

    slots: int
    later_every: int = LATER_EVERY
    spare: int = 1
    running: Counter[str] = field(default_factory=Counter)
    _first: dict[str, deque[T]] = field(default_factory=dict)
    _later: dict[str, deque[T]] = field(default_factory=dict)
    _firsts_in_a_row: int = 0
    _starts: int = 0  # calls started so far: the stamp of the next start
    _last_start: dict[str, int] = field(default_factory=dict)  # of owners not idle

    def __post_init__(self) -> None:
        self.slots = max(1, self.slots)

    @property
    def busy(self) -> int:
        """Calls running."""
        return sum(self.running.values())

    def waiting(self, owner: str | None = None) -> int:
        """Calls waiting (of ``owner``, or of everyone)."""
        lanes = (self._first, self._later)
        if owner is not None:
            return sum(len(lane.get(owner, ())) for lane in lanes)
        return sum(len(queue) for lane in lanes for queue in lane.values())

    def arrive(self, ticket: T, owner: str, later: bool = False) -> bool:
        """A call wants a slot: True if it starts now, else it waits its turn."""
        if self.busy < self.slots and not self._first and not self._later:
            self._started(owner)
            return True
        if self.busy < self.slots + self.spare and self._idle(owner) and not later:
            # An owner with nothing running or waiting (a quiet tenant) starts at once in a
            # spare slot: it waits neither for the others' queue nor for a running call.
            self._started(owner)
            return True
        (self._later if later else self._first).setdefault(owner, deque()).append(ticket)
        return False

    def _idle(self, owner: str) -> bool:
        return owner not in self.running and not self.waiting(owner)

    def withdraw(self, ticket: T, owner: str) -> bool:
        """Take a waiting ticket out of its queue; False if it is not waiting (it started)."""
        for lane in (self._first, self._later):
            queue = lane.get(owner)
            if queue is not None and ticket in queue:
                queue.remove(ticket)
                if not queue:
                    del lane[owner]
                return True
        return False

    def finish(self, owner: str) -> list[tuple[T, str]]:
        """A call of ``owner`` ended: the tickets (and their owners) that start now."""
        self.running[owner] -= 1
        if self.running[owner] <= 0:
            del self.running[owner]
            if not self.waiting(owner):  # idle: back later, it is a quiet owner again
                self._last_start.pop(owner, None)
        started = []
        while self.busy < self.slots and (self._first or self._later):
            started.append(self._start_next())
        return started

    def _start_next(self) -> tuple[T, str]:
        turn_of_later = bool(self._later) and (
            not self._first or self._firsts_in_a_row >= self.later_every
        )
        lane = self._later if turn_of_later else self._first
        # The owner with the fewest calls running; among equals the one whose last start is
        # oldest (an owner that just arrived has none): round-robin.
        owner = min(lane, key=lambda name: (self.running[name], self._last_start.get(name, -1)))
        queue = lane[owner]
        ticket = queue.popleft()
        if not queue:
            del lane[owner]
        self._firsts_in_a_row = 0 if turn_of_later or not self._later else self._firsts_in_a_row + 1
        self._started(owner)
        return ticket, owner

    def _started(self, owner: str) -> None:
        self.running[owner] += 1
        self._last_start[owner] = self._starts
        self._starts += 1


@dataclass
class _Hold:
    """The slot a task holds: whose, in which lane, whether it holds it right now, and whether
    its block ended (``closed``: a task it was lent to must then not take it again)."""

    share: FairShare
    owner: str
    later: bool
    held: bool = True
    closed: bool = False


_held: contextvars.ContextVar[_Hold | None] = contextvars.ContextVar(
    "memhub_fair_slot", default=None
)


class FairShare:
    """A :class:`FairQueue` of asyncio tasks: :meth:`enter` waits for a slot, :meth:`leave`
    frees it and starts whoever is next. One event loop's; not thread-safe."""

    def __init__(self, slots: int, later_every: int = LATER_EVERY, spare: int = 1) -> None:
        self.queue: FairQueue[asyncio.Future[None]] = FairQueue(slots, later_every, spare)

    async def enter(self, owner: str, later: bool = False) -> None:
        """Wait for a slot for ``owner`` (at once if one is free and nobody waits)."""
        turn = asyncio.get_running_loop().create_future()
        if self.queue.arrive(turn, owner, later):
            return
        try:
            await turn
        except asyncio.CancelledError:
            if not self.queue.withdraw(turn, owner):
                self.leave(owner)  # its turn came as it was cancelled: pass the slot on
            raise

    def leave(self, owner: str) -> None:
        """Free a slot of ``owner``'s; the next in line starts."""
        for turn, _ in self.queue.finish(owner):
            # A cancelled waiter is not withdrawn yet: its own handler passes the slot on.
            if not turn.done():
                turn.set_result(None)

    @contextlib.asynccontextmanager
    async def slot(self, owner: str, later: bool = False) -> AsyncIterator[None]:
        """Hold a slot for the block; :func:`step_aside` inside it lends the slot out."""
        await self.enter(owner, later)
        hold = _Hold(self, owner, later)
        token = _held.set(hold)
        try:
            yield
        finally:
            _held.reset(token)
            hold.closed = True
            if hold.held:
                hold.held = False
                self.leave(owner)


@contextlib.asynccontextmanager
async def step_aside() -> AsyncIterator[None]:
    """Lend the slot this task holds (if any) while it waits for something that takes no
    CPU of this process (a poll of the database, a sleep); queue for it again after."""
    hold = _held.get()
    if hold is None or not hold.held or hold.closed:
        yield
        return
    hold.held = False
    hold.share.leave(hold.owner)
    try:
        yield
    finally:
        if not hold.closed:
            await hold.share.enter(hold.owner, hold.later)
            if hold.closed:  # the holder's block ended meanwhile: nobody is left to free it
                hold.share.leave(hold.owner)
            else:
                hold.held = True


def held_slot() -> object | None:
    """The slot this task holds (opaque; None if none), for :func:`lending` in another task."""
    return _held.get()


@contextlib.contextmanager
def lending(slot: object | None) -> Iterator[None]:
    """Let :func:`step_aside` in this block lend ``slot``, a slot another task holds (from
    :func:`held_slot`) and waits on this one for: the MCP SDK runs a request's tool call in
    its session's task, not in the request's."""
    if not isinstance(slot, _Hold):
        yield
        return
    token = _held.set(slot)
    try:
        yield
    finally:
        _held.reset(token)
