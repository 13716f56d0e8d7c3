"""ARKOS's methods: the bound user and session, and the False / [] / empty-message contract."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memhub.engine.consolidate import TURN_MEMORY
from memhub.engine.ingest import turns_and_job
from memhub.engine.inputs import check_text
from memhub.errors import UsageError
from memhub.memory.core import MemoryCore
from memhub.memory.results import MemoryItem
from memhub.messages import Message, SystemMessage
from memhub.messages import deserialize as _deserialize
from memhub.messages import serialize as _serialize
from memhub.store.records import JobPayload, Scope

__all__ = ["ArkosMethods"]

log = logging.getLogger("memhub")


class ArkosMethods(MemoryCore):
    """ARKOS's API over the Mem0-style one: typed errors, each with a never-raising twin.

    ARKOS's methods keep ARKOS's contract (False / [] / an empty SystemMessage on failure),
    and log the cause.
    """

    if TYPE_CHECKING:  # AsyncMemory defines them; these are the parts ARKOS's methods use

        async def search(
            self, query: str, *, user_id: str | None = None, limit: int | None = None
        ) -> dict[str, list[MemoryItem]]: ...

        async def recent_turns(
            self, *, user_id: str, session_id: str, limit: int = 10
        ) -> list[Message]: ...

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

    async def add_turn(self, message: Message) -> int:
        """Store one message of the current session (typed errors); returns its turn id."""
        user_id = self._require_user()
        if not isinstance(message, Message):
            raise UsageError(f"expected a memhub Message, got {type(message).__name__}")
        check_text("message content", message.content, self.limits, allow_empty=True)
        payload = None
        if self.use_long_term:  # the turn's memory is written with it, as add()'s
            payload = JobPayload(
                infer=True,
                event_id=str(uuid.uuid4()),
                instructions=self.settings.custom_instructions or None,
                memory_ids=(uuid.uuid4(),),
            )
        # ARKOS queues every turn it is given, system messages too ("use_long_term"); the
        # raw-mode rule for system messages is add()'s (Mem0's).
        turns, job = turns_and_job(
            [message],
            Scope(user_id=user_id),
            session_id=self.session_id,
            metadata=None,
            created_at=None,
            job_payload=payload,
            memory_type=TURN_MEMORY if self.extracts_facts else None,
        )
        engine = await self._engine()
        (turn_id,) = await engine.store.append_turns(turns, job)
        if job is not None:
            engine.worker.wake()
            self._queued(engine, Scope(user_id=user_id), [turn_id])
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
        return await self.recent_turns(user_id=user_id, session_id=self.session_id, limit=turns)

    async def retrieve_short_memory(self, turns: int) -> list[Message]:
        """ARKOS: the last ``turns`` messages of this session, oldest first; [] on error."""
        try:
            return await self.short_memory(turns)
        except Exception:
            log.exception("retrieve_short_memory failed for user %s", self.user_id)
            return []

    async def long_memory(
        self, context: Sequence[Message] | None = None, mem0_limit: int = 10
    ) -> SystemMessage:
        """Memories relevant to the last two messages of ``context`` (typed errors)."""
        user_id = self._require_user()
        query = "\n".join(m.content for m in list(context or [])[-2:] if m.content.strip())
        if not query:
            return SystemMessage(content="")
        # Read your own writes: ARKOS adds a turn and asks right after. Wait, briefly, for this
        # object's own turns to be ingested (searchable as raw turns); never for consolidation
        # (an LLM that is slow or down must not delay recall), never for anyone else's work.
        engine = await self._engine()
        await self._settle(engine, Scope(user_id=user_id), self.settings.recall_wait_timeout)
        found = await self.search(
            query[-self.limits.max_text_chars :], user_id=user_id, limit=mem0_limit
        )
        lines = [f"{hit.get('role', 'user')}: {hit['memory']}" for hit in found["results"]]
        if not lines:
            return SystemMessage(content="")
        return SystemMessage(content="retrieved memories:\n" + "\n".join(lines))

    async def retrieve_long_memory(
        self, context: Sequence[Message] | None = None, mem0_limit: int = 10
    ) -> SystemMessage:
        """ARKOS: ``SystemMessage("retrieved memories:\\n...")``; empty on error or no hits."""
        try:
            return await self.long_memory(context, mem0_limit)
        except Exception:
            log.exception("retrieve_long_memory failed for user %s", self.user_id)
            return SystemMessage(content="")
