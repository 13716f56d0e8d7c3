"""What the app's routes share: the memory facade, its admin API and the server settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import HTTPException, Request

from memhub.doors.access import Access, KeyCache, Quotas, RateLimiter
from memhub.memory.admin import AsyncAdmin
from memhub.memory.async_memory import AsyncMemory
from memhub.memory.inputs import Limits
from memhub.server.health import WriteHealth
from memhub.server.settings import ServerSettings

__all__ = ["STARTING_RETRY_AFTER", "ServerState", "get_state"]

#: What ``Retry-After`` says while the server is starting (building its embedding model).
STARTING_RETRY_AFTER = 5


@dataclass
class ServerState:
    """Opened by the app's lifespan, closed with it; ``admin`` shares ``memory``'s pool."""

    memory: AsyncMemory
    admin: AsyncAdmin
    server: ServerSettings
    writes: WriteHealth = field(default_factory=WriteHealth)
    access: Access = field(init=False)
    turns: RateLimiter = field(init=False)

    def __post_init__(self) -> None:
        self.access = Access(self.admin, self.server)
        self.turns = RateLimiter(self.server.turn_rate_limit, self.server.turn_burst)

    @property
    def quotas(self) -> Quotas:
        return self.access.quotas

    @property
    def keys(self) -> KeyCache:
        return self.access.keys

    @property
    def limits(self) -> Limits:
        return self.memory.limits


def get_state(request: Request) -> ServerState:
    """The running app's state (set by its lifespan)."""
    state = getattr(request.app.state, "memhub", None)
    if not isinstance(state, ServerState):
        if getattr(request.app.state, "memhub_starting", None) is not None:
            raise HTTPException(
                503,
                "memhub is starting: its embedding model is being built (GET /healthz shows "
                "how far); retry later",
                headers={"Retry-After": str(STARTING_RETRY_AFTER)},
            )
        raise RuntimeError("the memhub app is not started: run it under its lifespan")
    return state
