"""Fair turns at a few slots (memhub._fair): the decision itself, then the asyncio form.

No clock: each test counts who starts, in what order.
"""

from __future__ import annotations

import asyncio

import pytest

from memhub._fair import FairQueue, FairShare, held_slot, lending, step_aside


def _fill(queue: FairQueue[str], owner: str, count: int, later: bool = False) -> list[str]:
    """``count`` calls of ``owner`` arrive; the ones that started at once."""
    started = []
    for n in range(count):
        ticket = f"{owner}{n}"
        if queue.arrive(ticket, owner, later):
            started.append(ticket)
    return started


def test_a_quiet_owner_is_next_whatever_another_has_queued() -> None:
    queue: FairQueue[str] = FairQueue(slots=2, spare=0)
    assert _fill(queue, "a", 100) == ["a0", "a1"], "free slots start at once"
    assert queue.waiting("a") == 98
    assert not queue.arrive("b0", "b")
    # The next slot to free goes to b: it has none running, a has one.
    assert queue.finish("a") == [("b0", "b")]
    assert queue.running == {"a": 1, "b": 1}
    assert queue.finish("a") == [("a2", "a")]


def test_owners_with_as_many_running_take_turns() -> None:
    queue: FairQueue[str] = FairQueue(slots=1, spare=0)
    assert _fill(queue, "a", 10) == ["a0"]
    _fill(queue, "b", 10)
    _fill(queue, "c", 10)
    order = []
    owner = "a"
    for _ in range(9):
        ((ticket, owner),) = queue.finish(owner)
        order.append(ticket)
    assert order == ["b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2", "a3"]


def test_no_owner_holds_more_than_its_share_while_others_wait() -> None:
    """With 4 slots and 4 owners queued deep, every owner runs exactly one call at a time."""
    queue: FairQueue[str] = FairQueue(slots=4, spare=0)
    for owner in "abcd":
        _fill(queue, owner, 50)
    assert queue.running == {"a": 4}, "a arrived first, to free slots"
    for _ in range(3):
        queue.finish("a")
    assert queue.running == {"a": 1, "b": 1, "c": 1, "d": 1}
    for step in range(100):
        owner = "abcd"[step % 4]
        queue.finish(owner)
        assert max(queue.running.values()) == 1, queue.running
        assert queue.busy == 4


def test_later_lane_waits_for_the_first_lane_but_is_never_starved() -> None:
    queue: FairQueue[str] = FairQueue(slots=1, later_every=4, spare=0)
    assert queue.arrive("w0", "worker", later=True), "an idle slot takes bulk work at once"
    _fill(queue, "w", 5, later=True)
    _fill(queue, "q", 20)
    starts = []
    owner = "worker"
    for _ in range(10):
        ((ticket, owner),) = queue.finish(owner)
        starts.append(ticket)
    assert starts == ["q0", "q1", "q2", "q3", "w0", "q4", "q5", "q6", "q7", "w1"]


def test_a_query_goes_before_queued_bulk_work_of_its_own_owner_too() -> None:
    queue: FairQueue[str] = FairQueue(slots=1, spare=0)
    queue.arrive("bulk-running", "t", later=True)
    _fill(queue, "t", 3, later=True)
    queue.arrive("query", "t")
    assert queue.finish("t") == [("query", "t")]


def test_an_idle_owner_starts_at_once_in_the_spare_slot() -> None:
    """A quiet tenant waits neither for another's queue nor for its running calls; the spare
    slot is its alone: an owner already running or waiting, and bulk work, queue."""
    queue: FairQueue[str] = FairQueue(slots=2, spare=1)
    assert _fill(queue, "a", 100) == ["a0", "a1"]
    assert queue.arrive("b0", "b"), "b has nothing running or waiting: it starts at once"
    assert not queue.arrive("b1", "b"), "b is running: its next call waits its turn"
    assert not queue.arrive("c0", "c", later=True), "bulk work never takes the spare slot"
    assert not queue.arrive("d0", "d"), "the spare slot is taken: d waits"
    assert queue.busy == 3
    # Freed slots refill only up to `slots`: b's running call holds the spare one.
    assert queue.finish("a") == []
    assert queue.finish("a") == [("d0", "d")]
    assert queue.finish("b") == [("a2", "a")]


def test_withdrawn_tickets_never_start() -> None:
    queue: FairQueue[str] = FairQueue(slots=1, spare=0)
    queue.arrive("a0", "a")
    queue.arrive("b0", "b")
    queue.arrive("c0", "c")
    assert queue.withdraw("b0", "b")
    assert not queue.withdraw("a0", "a"), "a running call is not waiting"
    assert queue.finish("a") == [("c0", "c")]
    assert queue.waiting() == 0


async def test_share_serves_a_quiet_tenant_within_one_round() -> None:
    """Real tasks: tenant a queues 100 calls on 2 slots, then b one; b's runs third at the
    latest (after the calls already running), before a's 98 waiting ones."""
    share = FairShare(2, spare=0)
    order: list[str] = []
    gate = asyncio.Event()

    async def call(owner: str, n: int) -> None:
        async with share.slot(owner):
            order.append(f"{owner}{n}")
            await gate.wait()

    tasks = [asyncio.create_task(call("a", n)) for n in range(100)]
    await asyncio.sleep(0)
    tasks.append(asyncio.create_task(call("b", 0)))
    await asyncio.sleep(0)
    assert order == ["a0", "a1"]
    gate.set()
    await asyncio.gather(*tasks)
    assert order.index("b0") == 2
    assert share.queue.busy == 0 and share.queue.waiting() == 0


async def test_cancelled_waiters_give_their_turn_on() -> None:
    share = FairShare(1, spare=0)
    release = asyncio.Event()
    entered: list[str] = []

    async def call(owner: str) -> None:
        async with share.slot(owner):
            entered.append(owner)
            await release.wait()

    first = asyncio.create_task(call("a"))
    await asyncio.sleep(0)
    doomed = asyncio.create_task(call("b"))
    third = asyncio.create_task(call("c"))
    await asyncio.sleep(0)
    doomed.cancel()
    release.set()
    await asyncio.gather(first, third)
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert entered == ["a", "c"]
    assert share.queue.busy == 0


async def _runs_when_lent(
    share: FairShare, lent: asyncio.Event, done: asyncio.Event, order: list[str]
) -> None:
    """Tenant b: once a's slot is lent, runs in it, then lets a's wait end."""
    await lent.wait()
    async with share.slot("b"):
        order.append("b runs")
    done.set()


async def test_step_aside_lends_the_slot_and_queues_again() -> None:
    """A request waiting for the worker lends its slot: another tenant's runs meanwhile."""
    share = FairShare(1, spare=0)
    lent = asyncio.Event()
    done = asyncio.Event()
    order: list[str] = []

    async def waiting_reader() -> None:
        async with share.slot("a"):
            order.append("a starts")
            async with step_aside():
                lent.set()
                await done.wait()
            order.append("a resumes")

    await asyncio.gather(waiting_reader(), _runs_when_lent(share, lent, done, order))
    assert order == ["a starts", "b runs", "a resumes"]
    assert share.queue.busy == 0


async def test_step_aside_outside_a_slot_changes_nothing() -> None:
    async with step_aside():
        pass


async def test_a_slot_lent_to_another_task_is_stepped_out_of_there() -> None:
    """The MCP SDK runs a request's tool call in another task: the request hands its slot
    over (held_slot / lending), and the tool's wait for the worker lends it to others."""
    share = FairShare(1, spare=0)
    lent, done = asyncio.Event(), asyncio.Event()
    order: list[str] = []

    async def tool(slot: object | None) -> None:
        with lending(slot):
            async with step_aside():
                lent.set()
                await done.wait()
            order.append("tool resumes")

    async def request() -> None:
        async with share.slot("a"):
            order.append("a starts")
            await asyncio.create_task(tool(held_slot()))
        order.append("a ends")

    await asyncio.gather(request(), _runs_when_lent(share, lent, done, order))
    assert order == ["a starts", "b runs", "tool resumes", "a ends"]
    assert share.queue.busy == 0


async def test_a_request_that_ends_while_its_slot_is_lent_leaks_no_slot() -> None:
    """A client that disconnects ends the request while its tool still waits: the tool must
    not take the slot again for nobody to free."""
    share = FairShare(1, spare=0)
    lent, done = asyncio.Event(), asyncio.Event()

    async def tool(slot: object | None) -> None:
        with lending(slot):
            async with step_aside():
                lent.set()
                await done.wait()
            async with step_aside():  # a second wait after the request ended: no-op
                pass

    async with share.slot("a"):
        waiting = asyncio.create_task(tool(held_slot()))
        await lent.wait()
    # The request's block is over (it held nothing then); the tool goes on.
    assert share.queue.busy == 0
    done.set()
    await waiting
    assert share.queue.busy == 0 and share.queue.waiting() == 0
    async with share.slot("b"):  # the one slot is free
        assert share.queue.running == {"b": 1}


@pytest.mark.parametrize(("cores", "slots"), [(1, 1), (2, 1), (4, 3), (8, 7)])
def test_request_slots_leave_one_core_to_what_every_tenant_shares(
    monkeypatch: pytest.MonkeyPatch, cores: int, slots: int
) -> None:
    # A quiet tenant's spare slot, the event loop and the database share the core left over.
    from memhub.doors import slots as door_slots

    monkeypatch.setattr(door_slots, "cpu_slots", lambda: cores)
    assert door_slots.RequestSlots().slots == slots
    assert door_slots.RequestSlots(5).slots == 5, "a configured number is kept as given"
