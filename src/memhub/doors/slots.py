"""The per-tenant request slots of a door: admitted requests take turns by tenant.

A process serves at most ``MEMHUB_REQUEST_SLOTS`` tenant requests at once (0: one fewer than
the cores it may use, at least one); more wait for their tenant's turn, decided by
:class:`memhub._fair.FairShare`: a tenant with nothing running or waiting starts at once (one
spare slot), the tenant with the fewest requests running goes next, a key over its quota
after the others. While a tenant has requests waiting, its running one's CPU work is niced
as an over-quota key's is (:func:`memhub._cpu.background`), and every CPU call it makes
takes its turn under the tenant's name (:func:`memhub._cpu.owned_by`).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from memhub._cpu import background, cpu_slots, owned_by
from memhub._fair import FairShare

__all__ = ["RequestSlots", "default_request_slots"]


def default_request_slots() -> int:
    """One fewer than the cores this process may use, at least one.

    The core left over is for what every tenant shares: a quiet tenant's request in the
    spare slot, the event loop and the database. With a slot per core, tenants flooding
    within their quotas filled both cores of a 2-core machine and moved a quiet tenant's
    search p95 1.4-1.7x; with one fewer, 1.2-1.3x (docs/api.md, "Several tenants flooding at
    once", 4 December).
    """
    return max(1, cpu_slots() - 1)


class RequestSlots:
    """``slots`` request slots shared in turns by tenant (0: :func:`default_request_slots`).

    One event loop's (the door's); made anywhere, it binds to a loop on first use.
    """

    def __init__(self, slots: int = 0) -> None:
        self.share = FairShare(slots or default_request_slots())

    @property
    def slots(self) -> int:
        """How many requests run at once (besides the spare slot of an idle tenant)."""
        return self.share.queue.slots

    def waiting(self, tenant: str | None = None) -> int:
        """Requests waiting for their turn (of ``tenant``, or of everyone)."""
        return self.share.queue.waiting(tenant)

    @contextlib.asynccontextmanager
    async def serve(self, tenant: str, over_quota: bool = False) -> AsyncIterator[bool]:
        """Hold a slot of ``tenant``'s for the block, once its turn comes.

        Yields whether the request's CPU work runs niced (the key is over its quota, or its
        tenant has more requests waiting): a door whose work runs in other tasks (the MCP
        SDK's sessions) passes it on to them.
        """
        async with self.share.slot(tenant, later=over_quota):
            # A tenant with more requests waiting for their turn wants more than its share:
            # this one's CPU work, too, runs from what the others leave.
            busy = over_quota or self.share.queue.waiting(tenant) > 0
            with background(busy), owned_by(tenant):
                yield busy
