"""``Memory``: the synchronous face of :class:`AsyncMemory`, one line per method.

Each call runs on memhub's process-wide event loop thread, so every thread shares one pool.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from memhub._portal import run_sync
from memhub.config import MemhubSettings
from memhub.embed import Embedder
from memhub.engine.fusion import FusionConfig
from memhub.memory.async_memory import AsyncMemory
from memhub.memory.results import HistoryItem, MemoryItem
from memhub.messages import Message, SystemMessage

__all__ = ["Memory"]


class Memory:
    """Synchronous memory; every method means what it means on :class:`AsyncMemory`."""

    def __init__(
        self,
        user_id: str | None = None,
        session_id: str | None = None,
        db_url: str | None = None,
        use_long_term: bool = True,
        *,
        settings: MemhubSettings | None = None,
        embedder: Embedder | None = None,
        fusion: FusionConfig | None = None,
    ) -> None:
        self._async = AsyncMemory(
            user_id,
            session_id,
            db_url,
            use_long_term,
            settings=settings,
            embedder=embedder,
            fusion=fusion,
        )

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Memory:
        """Build from a Mem0-style config dict."""
        memory = cls.__new__(cls)
        memory._async = AsyncMemory.from_config(config)
        return memory

    @property
    def async_memory(self) -> AsyncMemory:
        """The async object every call goes to."""
        return self._async

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

    # -- Mem0-style API ---------------------------------------------------------------------
    def add(
        self,
        messages: Any,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        infer: bool = True,
        memory_type: str | None = None,
        timestamp: datetime | str | float | None = None,
        wait: bool = False,
        idempotency_key: str | None = None,
    ) -> dict[str, Any]:
        return run_sync(
            self._async.add(
                messages,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                metadata=metadata,
                infer=infer,
                memory_type=memory_type,
                timestamp=timestamp,
                wait=wait,
                idempotency_key=idempotency_key,
            )
        )

    def wait_idle(self) -> None:
        run_sync(self._async.wait_idle())

    def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        include_superseded: bool = False,
        max_tokens: int | None = None,
    ) -> dict[str, list[MemoryItem]]:
        return run_sync(
            self._async.search(
                query,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                limit=limit,
                filters=filters,
                threshold=threshold,
                include_superseded=include_superseded,
                max_tokens=max_tokens,
            )
        )

    def get(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryItem | None:
        return run_sync(
            self._async.get(memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id)
        )

    def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int = 100,
        include_superseded: bool = False,
    ) -> dict[str, list[MemoryItem]]:
        return run_sync(
            self._async.get_all(
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                filters=filters,
                limit=limit,
                include_superseded=include_superseded,
            )
        )

    def update(
        self,
        memory_id: str | uuid.UUID,
        data: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        merge_metadata: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        return run_sync(
            self._async.update(
                memory_id,
                data,
                metadata=metadata,
                merge_metadata=merge_metadata,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
            )
        )

    def delete(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, str]:
        return run_sync(
            self._async.delete(memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id)
        )

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, Any]:
        return run_sync(self._async.delete_all(user_id=user_id, agent_id=agent_id, run_id=run_id))

    def history(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[HistoryItem]:
        return run_sync(
            self._async.history(memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id)
        )

    def recent_turns(self, *, user_id: str, session_id: str, limit: int = 10) -> list[Message]:
        return run_sync(
            self._async.recent_turns(user_id=user_id, session_id=session_id, limit=limit)
        )

    def reset(self) -> None:
        run_sync(self._async.reset())

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

    def long_memory(
        self, context: Sequence[Message] | None = None, mem0_limit: int = 10
    ) -> SystemMessage:
        return run_sync(self._async.long_memory(context, mem0_limit))

    def retrieve_long_memory(
        self, context: Sequence[Message] | None = None, mem0_limit: int = 10
    ) -> SystemMessage:
        return run_sync(self._async.retrieve_long_memory(context, mem0_limit))
