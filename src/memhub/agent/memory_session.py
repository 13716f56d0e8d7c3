"""One agent call's memory: a client bound to the resolved user and thread.

Every operation is scoped to that user (the model can never name another), traced, and
guarded: a failure is reported to the agent (logged and counted) and the call goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memhub import telemetry
from memhub.agent.config import AgentMemoryConfig
from memhub.agent.forget_guard import ForgetRequest, confirmed
from memhub.agent.memory_flow import (
    MemoryClient,
    estimate_tokens,
    exchange,
    format_memories,
    new_turn,
    recall_query,
)
from memhub.engine.text import within_budget
from memhub.errors import MemoryNotFound
from memhub.messages import Message
from memhub.telemetry import record_guard

__all__ = ["ForgetRefused", "MemorySession"]


class ForgetRefused(PermissionError):
    """``forget`` was not allowed: the user did not ask for it, or the per-call cap is spent."""


log = logging.getLogger("memhub.agent")

ErrorHandler = Callable[[str, BaseException], None]


@dataclass
class MemorySession:
    """Memory operations for one user and thread, on behalf of one agent."""

    client: MemoryClient
    user_id: str
    thread_id: str
    config: AgentMemoryConfig
    agent_name: str
    on_error: ErrorHandler
    user_turn: str = ""
    """The user's latest message(s) of this call: what ``forget`` may act on."""
    forgotten: int = 0

    @property
    def _attributes(self) -> dict[str, str]:
        return {"memhub.agent": self.agent_name}

    # -- guarded flow (never raises) --------------------------------------------------------

    async def recall(self, conversation: Sequence[Message]) -> list[Mapping[str, Any]]:
        """Memories for this call's turn; [] when there is nothing to ask or memory failed."""
        turn = new_turn(conversation)
        if not turn:
            return []
        try:
            with telemetry.operation("agent.recall", self._attributes) as span:
                recent: list[Message] = []
                if len([m for m in conversation if m.role != "system"]) == 1:
                    recent = await self._recent_turns()
                hits = await self.search(recall_query(turn, recent), self.config.recall_limit)
                if self.config.recall_max_tokens is not None:
                    budget = self.config.recall_max_tokens
                    hits = list(
                        within_budget(((str(h.get("memory", "")), h) for h in hits), budget)
                    )
                span.set_attribute("memhub.recall.hits", len(hits))
        except Exception as exc:  # memory must never fail the agent call; reported, counted
            self.on_error("recall", exc)
            return []
        tokens = estimate_tokens(format_memories(hits, self.thread_id)) if hits else 0
        meters = telemetry.instruments()
        meters.recall_hits.record(len(hits), self._attributes)
        meters.injected_tokens.record(tokens, self._attributes)
        return hits

    async def persist(self, conversation: Sequence[Message], answer: str, partial: bool) -> bool:
        """Store the turn's user messages and the answer on the durable path; False on failure.

        ``add`` returns once the turns are committed; extraction runs later in the worker.
        """
        messages = exchange(new_turn(conversation), answer)
        if not messages:
            return False
        metadata: dict[str, Any] = {
            "thread_id": self.thread_id,
            "agent": self.agent_name,
            "partial": partial,
        }
        if self.config.tags:
            metadata["tags"] = list(self.config.tags)
        try:
            with telemetry.operation(
                "agent.persist", {**self._attributes, "memhub.partial": partial}
            ):
                await self.client.add(
                    messages,
                    user_id=self.user_id,
                    run_id=self.thread_id,
                    metadata=metadata,
                    infer=self.config.infer,
                    **self._roles(),
                )
        except Exception as exc:  # as in recall: logged and counted, the answer stands
            self.on_error("persist", exc)
            return False
        return True

    def _roles(self) -> dict[str, Any]:
        # Raw mode (turns kept as said): the agent's replies stay short-term. Only memhub's
        # client knows whether it extracts facts; others get Mem0's plain add() call.
        roles = self.config.long_term_roles
        if roles is None:
            extracts = getattr(self.client, "extracts_facts", None)
            if extracts is None or (extracts and self.config.infer):
                return {}
            roles = ("user",)
        return {"remember_roles": list(roles)}

    # -- scoped operations (raise; the memory tools use them) ------------------------------

    async def search(self, query: str, limit: int) -> list[Mapping[str, Any]]:
        """This user's memories for ``query``, from every thread."""
        found = await self.client.search(
            query, user_id=self.user_id, limit=limit, threshold=self.config.recall_threshold
        )
        return list(found.get("results", []))

    async def remember(self, fact: str) -> None:
        """Store ``fact`` for this user without extraction (queued, durable).

        Stored as the assistant's words with ``provenance`` ``"agent_tool"``: the model wrote
        it, so it must never pass for something the user said.
        """
        metadata = {
            "thread_id": self.thread_id,
            "agent": self.agent_name,
            "source": "remember",
            "provenance": "agent_tool",
        }
        await self.client.add(
            [{"role": "assistant", "content": fact}],
            user_id=self.user_id,
            run_id=self.thread_id,
            metadata=metadata,
            infer=False,
        )

    async def forget(self, memory_id: str) -> None:
        """Retire one of this user's memories, if the user's latest message asks for it.

        Retired, not erased (``restore`` brings it back); a client without ``retire`` (not
        memhub's) is refused rather than made to erase.

        Raises:
            ForgetRefused: the per-call cap is spent, or the user's message does not ask to
                forget this memory (or the application's ``confirm_forget`` said no).
            MemoryNotFound: no such memory for this user (another user's id included).
        """
        limit = self.config.forget_limit
        if self.forgotten >= limit:
            log.warning("forget of %s capped: %d per call", memory_id, limit)
            record_guard("agent.forget", "capped")
            raise ForgetRefused(f"at most {limit} memories can be forgotten per message")
        item = await self.client.get(memory_id, user_id=self.user_id)
        if item is None:
            raise MemoryNotFound(f"no memory {memory_id} in this scope")
        request = ForgetRequest(
            self.user_id, self.thread_id, self.user_turn, memory_id, str(item.get("memory", ""))
        )
        if not await confirmed(request, self.config.confirm_forget):
            log.warning("forget of %s refused: the user's message does not ask for it", memory_id)
            record_guard("agent.forget", "refused")
            raise ForgetRefused(
                "the user's latest message does not ask to forget this memory;"
                " only the user can ask to forget something"
            )
        retire = getattr(self.client, "retire", None)
        if retire is None:  # a client that cannot retire (Mem0's) would erase: refused
            record_guard("agent.forget", "refused")
            raise ForgetRefused("this memory client cannot forget restorably")
        await retire(
            memory_id,
            user_id=self.user_id,
            actor=f"agent:{self.agent_name}",
            reason=f"forget tool, thread {self.thread_id}: {self.user_turn[:200]}",
        )
        self.forgotten += 1

    async def _recent_turns(self) -> list[Message]:
        limit = self.config.short_term_turns
        if limit == 0:
            return []
        return list(
            await self.client.recent_turns(
                user_id=self.user_id, session_id=self.thread_id, limit=limit
            )
        )
