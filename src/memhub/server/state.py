"""What the app's routes share: the memory facade, the database and the server settings."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from fastapi import Request

from memhub.engine.inputs import Limits
from memhub.memory.async_memory import AsyncMemory
from memhub.server.gate import KeyCache, Quotas
from memhub.server.limits import RateLimiter
from memhub.server.settings import ServerSettings
from memhub.store.database import AsyncConn, Database
from memhub.store.errors import translate_errors

__all__ = ["ServerState", "get_state"]


@dataclass
class ServerState:
    """Opened by the app's lifespan, closed with it."""

    memory: AsyncMemory
    database: Database
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

    @asynccontextmanager
    async def connection(self, action: str) -> AsyncIterator[AsyncConn]:
        """A pooled connection whose failures surface as memhub's store errors."""
        with translate_errors(action):
            async with self.database.connection() as conn:
                yield conn


def get_state(request: Request) -> ServerState:
    """The running app's state (set by its lifespan)."""
    state = getattr(request.app.state, "memhub", None)
    if not isinstance(state, ServerState):
        raise RuntimeError("the memhub app is not started: run it under its lifespan")
    return state
