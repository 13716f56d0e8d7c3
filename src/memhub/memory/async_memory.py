"""``AsyncMemory``: the one implementation behind every public memory call.

ARKOS's methods keep ARKOS's contract (False / [] / an empty SystemMessage on failure), and
also log the cause; the Mem0-style methods raise typed errors from :mod:`memhub.errors`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Sequence
from typing import Any

from memhub.config import MemhubSettings
from memhub.engine.inputs import Limits, check_id
from memhub.errors import MemhubError, UsageError
from memhub.messages import Message, SystemMessage
from memhub.messages import deserialize as _deserialize
from memhub.messages import serialize as _serialize
from memhub.store.postgres import PostgresStore
from memhub.store.records import NewJob, NewTurn, Scope

__all__ = ["AsyncMemory"]

log = logging.getLogger("memhub")

INGEST_JOB = "ingest"


class AsyncMemory:
    """Short- and long-term memory for one application, optionally bound to a user and session.

    Args:
        user_id: The user ARKOS's methods act for (the Mem0-style methods take it per call).
        session_id: The conversation; a new UUID when None.
        db_url: A PostgreSQL URL; None means ``MEMHUB_DATABASE_URL`` / ``DB_URL``, and failing
            those the embedded server.
        use_long_term: Also queue every turn for long-term memory.
        settings: Explicit settings; by default they come from the environment.
    """

    def __init__(
        self,
        user_id: str | None = None,
        session_id: str | None = None,
        db_url: str | None = None,
        use_long_term: bool = True,
        *,
        settings: MemhubSettings | None = None,
    ) -> None:
        self.settings = settings or MemhubSettings.from_env(database_url=db_url)
        if settings is not None and db_url is not None:
            self.settings = settings.model_copy(update={"database_url": db_url})
        self.limits = Limits(self.settings.max_id_length, self.settings.max_text_chars)
        self.user_id = None if user_id is None else check_id("user_id", user_id, self.limits)
        self.session_id = (
            str(uuid.uuid4())
            if session_id is None
            else check_id("session_id", session_id, self.limits)
        )
        self.use_long_term = use_long_term
        self._store: PostgresStore | None = None
        self._open_lock: asyncio.Lock | None = None

    # -- lifecycle --------------------------------------------------------------------------
    async def _storage(self) -> PostgresStore:
        if self._store is None:
            if self._open_lock is None:
                self._open_lock = asyncio.Lock()
            async with self._open_lock:
                if self._store is None:
                    self._store = await PostgresStore.open(self.settings)
        return self._store

    async def aclose(self) -> None:
        """Release this object's database connections and background work."""
        store, self._store = self._store, None
        if store is not None:
            await store.aclose()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # -- ARKOS ------------------------------------------------------------------------------
    def start_new_session(self) -> str:
        """Begin a new conversation; returns its id."""
        self.session_id = str(uuid.uuid4())
        return self.session_id

    @staticmethod
    def serialize(message: Message) -> str:
        """ARKOS's stored JSON form of ``message``."""
        return _serialize(message)

    @staticmethod
    def deserialize(data: str, role: str | None = None) -> Message:
        """The message stored as ``data`` in the class of ``role``."""
        return _deserialize(data, role)

    def _require_user(self) -> str:
        if self.user_id is None:
            raise UsageError("this Memory has no user_id; pass Memory(user_id=...)")
        return self.user_id

    async def add_turn(self, message: Message) -> int:
        """Store one message of the current session (typed errors); returns its turn id."""
        user_id = self._require_user()
        if not isinstance(message, Message):
            raise UsageError(f"expected a memhub Message, got {type(message).__name__}")
        from memhub.engine.inputs import check_text

        check_text("message content", message.content, self.limits, allow_empty=True)
        turn = NewTurn(
            user_id=user_id,
            session_id=self.session_id,
            role=message.role,
            message=_serialize(message),
        )
        job = (
            NewJob(kind=INGEST_JOB, scope=Scope(user_id=user_id), payload={"infer": True})
            if self.use_long_term
            else None
        )
        store = await self._storage()
        (turn_id,) = await store.append_turns([turn], job)
        return turn_id

    async def add_memory(self, message: Message) -> bool:
        """ARKOS: store ``message``; True on success, False (logged) on any error."""
        try:
            await self.add_turn(message)
        except Exception:
            log.exception("add_memory failed for user %s session %s", self.user_id, self.session_id)
            return False
        return True

    async def short_memory(self, turns: int) -> list[Message]:
        """The last ``turns`` messages of this session, oldest first (typed errors)."""
        user_id = self._require_user()
        if isinstance(turns, bool) or not isinstance(turns, int) or turns <= 0:
            raise UsageError(f"turns must be a positive integer, got {turns!r}")
        store = await self._storage()
        rows = await store.recent_turns(user_id, self.session_id, turns)
        return [_deserialize(row.message, row.role) for row in rows]

    async def retrieve_short_memory(self, turns: int) -> list[Message]:
        """ARKOS: the last ``turns`` messages of this session, oldest first; [] on error."""
        try:
            return await self.short_memory(turns)
        except Exception:
            log.exception("retrieve_short_memory failed for user %s", self.user_id)
            return []

    async def retrieve_long_memory(
        self, context: Sequence[Message] | None = None, mem0_limit: int = 10
    ) -> SystemMessage:
        """ARKOS: memories relevant to the last two messages of ``context``.

        Returns ``SystemMessage("retrieved memories:\\n...")``, or an empty one on error or
        when nothing relevant is stored.
        """
        try:
            user_id = self._require_user()
            query = "\n".join(m.content for m in list(context or [])[-2:] if m.content.strip())
            if not query:
                return SystemMessage(content="")
            found = await self.search(query, user_id=user_id, limit=mem0_limit)
            lines = [
                f"{hit['metadata'].get('role', 'user')}: {hit['memory']}"
                for hit in found["results"]
            ]
        except Exception:
            log.exception("retrieve_long_memory failed for user %s", self.user_id)
            return SystemMessage(content="")
        if not lines:
            return SystemMessage(content="")
        return SystemMessage(content="retrieved memories:\n" + "\n".join(lines))

    async def search(self, query: str, **kwargs: Any) -> dict[str, Any]:  # replaced in issue 3
        raise MemhubError("long-term search is not available yet")
