"""``Memory``: the synchronous face of :class:`AsyncMemory`, one line per method.

Each call runs on memhub's process-wide event loop thread, so every thread shares one pool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memhub._portal import run_sync
from memhub.config import MemhubSettings
from memhub.memory.async_memory import AsyncMemory
from memhub.messages import Message, SystemMessage

__all__ = ["Memory"]


class Memory:
    """Synchronous memory; see :class:`AsyncMemory` for every method's meaning."""

    def __init__(
        self,
        user_id: str | None = None,
        session_id: str | None = None,
        db_url: str | None = None,
        use_long_term: bool = True,
        *,
        settings: MemhubSettings | None = None,
    ) -> None:
        self._async = AsyncMemory(user_id, session_id, db_url, use_long_term, settings=settings)

    @property
    def user_id(self) -> str | None:
        return self._async.user_id

    @property
    def session_id(self) -> str:
        return self._async.session_id

    @session_id.setter
    def session_id(self, value: str) -> None:
        self._async.session_id = value

    @property
    def settings(self) -> MemhubSettings:
        return self._async.settings

    def close(self) -> None:
        run_sync(self._async.aclose())

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- ARKOS ------------------------------------------------------------------------------
    def start_new_session(self) -> str:
        return self._async.start_new_session()

    serialize = staticmethod(AsyncMemory.serialize)
    deserialize = staticmethod(AsyncMemory.deserialize)

    def add_turn(self, message: Message) -> int:
        return run_sync(self._async.add_turn(message))

    def add_memory(self, message: Message) -> bool:
        return run_sync(self._async.add_memory(message))

    def short_memory(self, turns: int) -> list[Message]:
        return run_sync(self._async.short_memory(turns))

    def retrieve_short_memory(self, turns: int) -> list[Message]:
        return run_sync(self._async.retrieve_short_memory(turns))

    def retrieve_long_memory(
        self, context: Sequence[Message] | None = None, mem0_limit: int = 10
    ) -> SystemMessage:
        return run_sync(self._async.retrieve_long_memory(context, mem0_limit))

    def search(self, query: str, **kwargs: Any) -> dict[str, Any]:
        return run_sync(self._async.search(query, **kwargs))
