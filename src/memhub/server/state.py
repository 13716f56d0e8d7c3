"""What the app's routes share: the memory facade, its admin API and the server settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from fastapi import Request

from memhub.engine.inputs import Limits
from memhub.memory.admin import AsyncAdmin
from memhub.memory.async_memory import AsyncMemory
from memhub.server.gate import KeyCache, Quotas
from memhub.server.limits import RateLimiter
from memhub.server.settings import ServerSettings

__all__ = ["ServerState", "get_state"]


@dataclass
class ServerState:
    """Opened by the app's lifespan, closed with it; ``admin`` shares ``memory``'s pool."""

    memory: AsyncMemory
    admin: AsyncAdmin
    server: ServerSettings
    quotas: Quotas = field(init=False)
    turns: RateLimiter = field(init=False)
    keys: KeyCache = field(init=False)

    def __post_init__(self) -> None:
        requests = RateLimiter(self.server.rate_limit, self.server.rate_burst)
        self.quotas = Quotas(requests, self.server.max_in_flight_per_key)
        self.turns = RateLimiter(self.server.turn_rate_limit, self.server.turn_burst)
        self.keys = KeyCache(self.server.key_cache_seconds)

    @property
    def limits(self) -> Limits:
        return self.memory.limits


def get_state(request: Request) -> ServerState:
    """The running app's state (set by its lifespan)."""
    state = getattr(request.app.state, "memhub", None)
    if not isinstance(state, ServerState):
        raise RuntimeError("the memhub app is not started: run it under its lifespan")
    return state
