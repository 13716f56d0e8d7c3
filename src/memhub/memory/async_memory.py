"""``AsyncMemory``: the one implementation behind every public memory call.

The Mem0-style methods, which raise typed errors from :mod:`memhub.errors`, and ARKOS's
methods over them (the bound user and session, the False / [] / empty-message contract); the
shared state comes from :mod:`memhub.memory.core`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import date, datetime
from functools import partial
from typing import Any

from memhub.engine.consolidate import fact_scope
from memhub.engine.ingest import AddRequest, plan_add
from memhub.engine.passages import embed_texts
from memhub.engine.rerank import chosen_reranker
from memhub.engine.retrieve import Search, retrieve
from memhub.engine.text import memory_hash
from memhub.errors import MemoryNotFound, UsageError
from memhub.filters import parse_filters
from memhub.memory.compat import as_of_filters, pick_limit, queued_answer, split_scope
from memhub.memory.core import parse_memory_id
from memhub.memory.cursors import after_memory, memory_cursor
from memhub.memory.inputs import (
    check_add,
    check_id,
    check_limit,
    check_text,
    parse_expiration,
    scope_of,
)
from memhub.memory.results import HistoryItem, MemoryItem, history_item, memory_item
from memhub.memory.retirement import RetirementMethods
from memhub.memory.services import Services
from memhub.messages import Message, SystemMessage
from memhub.messages import deserialize as _deserialize
from memhub.messages import serialize as _serialize
from memhub.store.records import EmbeddedText, Scope
from memhub.telemetry import operation

__all__ = ["AsyncMemory"]

log = logging.getLogger("memhub")


class AsyncMemory(RetirementMethods):
    """Short- and long-term memory, optionally bound to one user and session (ARKOS's way).

    Args:
        user_id: The user ARKOS's methods act for (the Mem0-style methods take it per call).
        session_id: The conversation; a new UUID when None.
        db_url: A PostgreSQL URL; None means ``MEMHUB_DATABASE_URL`` / ``DB_URL``, and failing
            those the embedded server.
        use_long_term: Also queue every turn for long-term memory.
        settings: Explicit settings; by default they come from the environment.
        embedder: An embedder to use instead of the one the settings name.
        fusion: How search fuses its signals: the same as ``search_config`` holding it, with
            the settings' other search defaults.
        search_config: How search ranks and how much it returns (docs/retrieval.md); by
            default the settings' (``MEMHUB_SEARCH_*``).
        config: A Mem0 config (a dict, or Mem0's ``MemoryConfig``), as Mem0's
            ``AsyncMemory(config=...)`` takes it: the same as :meth:`from_config`.
    """

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> AsyncMemory:
        """Build from a Mem0-style config dict (``vector_store``, ``embedder``, ``llm``)."""
        return cls(config=config)

    # -- Mem0-style API ---------------------------------------------------------------------
    async def add(
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
        remember_roles: Sequence[str] | None = None,
        idempotency_key: str | None = None,
        expiration_date: date | datetime | str | None = None,
    ) -> dict[str, Any]:
        """Store messages as memories and queue their embedding; returns once they are durable.

        Args:
            messages: A string, a message dict, a :class:`Message`, or a list of them.
            user_id: Whose memory (one of user_id, agent_id, run_id is required).
            agent_id: The agent's memory.
            run_id: The run (conversation); also the turns' session id.
            metadata: Stored with every turn and memory; cannot override scope ids.
            infer: With an LLM configured, also extract facts; each turn is stored as it is
                (an episode) either way.
            memory_type: Mem0's ``"procedural_memory"`` for an agent run summary.
            timestamp: When the messages were said (historic imports); default now.
            wait: Wait (up to ``settings.wait_timeout`` seconds) until these messages' own
                jobs are done, then return what they became. Other scopes' jobs are never
                waited for, nor run: a worker (in-process or ``memhub worker``) does them.
            remember_roles: Only messages of these roles go to long-term memory (the others
                are kept as conversation turns only); None: every message but system ones
                (a system message only when ``"system"`` is named).
            idempotency_key: A key of the caller's choosing for this call; calling again with
                the same key, scope and messages returns the first call's result and writes
                nothing (a retry after a dropped connection). Another request under a used
                key raises :class:`UsageError`.
            expiration_date: When the memories made from these messages expire (Mem0's
                argument): a date (``"YYYY-MM-DD"``) is their last day (UTC), a datetime
                the instant. From then on no search, get or list returns them, and a worker
                purges them (a DELETE event by ``"expiry"`` stays in their history). Facts
                an LLM extracts from the messages do not expire.

        Returns:
            ``{"results": [...], "status": ..., "queued_turn_ids": [...]}``. Every user and
            assistant message becomes one memory, an *episode* (``"kind": "episode"``),
            stored before add() returns, whose words search finds at once; system messages
            are kept as conversation turns only (as Mem0 does). Without an LLM (or with
            ``infer=False``) the results are those episodes: ``{"id", "memory", "event":
            "ADD", "actor_id", "role", "status": "PENDING"}``, whose id works at once with
            get, history, update and delete; "PENDING" says its vector is being computed (a
            search by this object waits up to ``settings.search_wait_timeout`` for it). When
            an LLM will extract facts, they are not known yet: one ``{"message", "status":
            "PENDING", "event_id"}`` entry, as Mem0's asynchronous mode returns; the facts
            (``"kind": "fact"``) are added beside the episodes later, never instead of them.
            With ``wait``, the memories themselves, episodes and facts (``"status":
            "DONE"``); ``"timed_out": True`` says the deadline passed first: the results are
            what is searchable so far.
        """
        request = check_add(
            self.limits,
            messages,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            metadata=metadata,
            timestamp=timestamp,
            infer=infer,
            memory_type=memory_type,
            expiration_date=expiration_date,
            remember_roles=remember_roles,
            idempotency_key=idempotency_key,
        )
        plan = plan_add(
            request,
            extracts_facts=self.extracts_facts,
            instructions=self.settings.custom_instructions,
        )
        scope = plan.scope
        services = await self._services()
        with operation("add", {"memhub.turns": len(plan.turns)}):
            turn_ids = await services.store.append_turns(plan.turns, plan.job, plan.idempotency)
        services.worker.wake()
        if plan.job is not None:
            self._queued(services, scope, turn_ids)
        if wait:
            return await self._added(services, scope, turn_ids)
        return queued_answer(
            plan.job, plan.one_per_turn, plan.payload, plan.memory_ids, plan.remembered, turn_ids
        )

    async def _added(self, services: Services, scope: Scope, turn_ids: list[int]) -> dict[str, Any]:
        """``add(wait=True)``'s answer: what the turns became once their jobs are done."""
        settled = await self._wait_for_turns(
            services, scope, turn_ids, None, self.settings.wait_timeout
        )
        added = await services.store.memories_for_turns(scope, turn_ids)
        if scope.user_id is not None or scope.agent_id is not None:
            # consolidated facts live in the user's scope, across runs
            facts = await services.store.memories_for_turns(fact_scope(scope), turn_ids)
            added += [r for r in facts if r.id not in {a.id for a in added}]
        result: dict[str, Any] = {
            "results": [{**memory_item(r), "event": "ADD"} for r in added],
            "status": "DONE" if settled else "PENDING",
            "queued_turn_ids": turn_ids,
        }
        if not settled:
            result["timed_out"] = True
        return result

    async def wait_idle(self) -> None:
        """Process (or wait for) every queued job of the database; benchmarks and tests use it."""
        services = await self._services()
        await self._drain(services, Scope())

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int | None = None,
        filters: Mapping[str, Any] | None = None,
        threshold: float | None = None,
        include_superseded: bool = False,
        top_k: int | None = None,
        as_of: datetime | str | float | None = None,
        max_tokens: int | None = None,
        excerpt_tokens: int | None = None,
        rerank: bool | None = None,
        min_score_ratio: float | None = None,
    ) -> dict[str, list[MemoryItem]]:
        """Memories relevant to ``query``, best first, by meaning and by words.

        Args:
            query: What to look for.
            user_id: Whose memories (or pass scope ids inside ``filters``, Mem0 2.x style).
            agent_id: The agent's memories.
            run_id: The run's memories.
            limit: Most results (default 100); ``top_k`` is the Mem0 2.x name.
            filters: Mem0's filter language; may carry ``user_id`` / ``agent_id`` / ``run_id``.
            threshold: Smallest score kept, in [0, 1]. Given, it replaces the cut-off relative
                to the best score (``min_score_ratio``).
            include_superseded: Also search facts that were replaced.
            top_k: Same as ``limit``.
            as_of: Only what was true then: facts valid at that moment, superseded or not.
            max_tokens: Cap on the results' total length, estimated at four characters a
                token: a memory too long for what is left is skipped, shorter ones after it
                may still fit (default: ``MEMHUB_SEARCH_MAX_TOKENS``, unset: no cap).
            excerpt_tokens: The longest text one result returns, in estimated tokens: a
                longer memory returns its sentences sharing most of the query's words
                (default: ``MEMHUB_SEARCH_EXCERPT_TOKENS``, 192; 0: whole).
            rerank: Re-order the best results with the configured reranker (Mem0 2.x's flag;
                default: if one is configured; True without one is a UsageError).
            min_score_ratio: Leave out results scoring below this share of the best one, in
                [0, 1] (default: ``MEMHUB_SEARCH_MIN_SCORE_RATIO``, 0: keep all).

        Returns:
            ``{"results": [{"id", "memory", "kind", "score", "metadata", ...}]}`` with scores
            in [0, 1]: episodes and facts ranked together, a fact and its own episode never
            both (the first ranked tells the turn); ``filters={"kind": "fact"}`` returns facts
            only, as Mem0 does. A memory longer than the embedder's window is found by its
            passage nearest the query; a memory (or passage) longer than ``excerpt_tokens``
            returns its excerpt. ``memory`` then holds that part, with
            ``"passage": {"start", "end", "length"}`` saying where it lies in the whole text
            (``get(id)`` returns the whole).
        """
        ids, rest = split_scope(user_id, agent_id, run_id, filters)
        scope = scope_of(self.limits, **ids)
        check_text("query", query, self.limits)
        limit = check_limit(
            pick_limit(limit, top_k, 100),
            maximum=self.limits.max_search_results,
            setting="MEMHUB_MAX_SEARCH_RESULTS",
        )
        if as_of is not None:
            rest, include_superseded = as_of_filters(as_of, rest), True
        parsed = parse_filters(rest, self.limits.filters)
        search = Search(query, scope, limit, parsed, include_superseded, threshold)
        config = self.search_config.for_call(
            min_score_ratio=min_score_ratio,
            max_tokens=max_tokens,
            excerpt_tokens=excerpt_tokens,
            rerank=rerank,
        )
        services = await self._services()
        scored = await retrieve(
            services.store,
            services.embedder,
            search,
            config,
            reranker=chosen_reranker(config.rerank, services.reranker),
            settle=self._settle_for(services, scope),
        )
        return {
            "results": [
                memory_item(s.candidate.record, s.score, s.candidate.passage) for s in scored
            ]
        }

    def _settle_for(self, services: Services, scope: Scope) -> Callable[[], Awaitable[bool]] | None:
        """Read your own writes by meaning: what this object added to ``scope`` is found by
        its words at once; a search waits (briefly) for its vectors too."""
        if not self._unsettled_in(scope):
            return None
        return partial(self._settle, services, scope, self.settings.search_wait_timeout)

    async def get(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryItem | None:
        """One memory by id (None if absent); with scope ids, only inside that scope."""
        scope = self._optional_scope(user_id, agent_id, run_id)
        services = await self._services()
        record = await services.store.get_memory(scope, parse_memory_id(memory_id))
        return None if record is None else memory_item(record)

    async def get_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
        limit: int | None = None,
        include_superseded: bool = False,
        top_k: int | None = None,
        cursor: str | None = None,
    ) -> dict[str, Any]:
        """The scope's memories, newest first (at most ``limit`` / ``top_k``, default 100).

        Episodes and facts, each with its ``kind``; ``filters={"kind": "fact"}`` lists facts
        only. The scope ids may also come inside ``filters`` (Mem0 2.x).

        Args:
            cursor: Page through the list: ``""`` for the first page, then the
                ``next_cursor`` of the page before. With a cursor the result also holds
                ``next_cursor``: a string when the page is full (more may follow), else None.
                Memories added meanwhile are newer and never appear in a later page; none is
                skipped or repeated. Without one the result is Mem0's ``{"results": [...]}``.
        """
        ids, rest = split_scope(user_id, agent_id, run_id, filters)
        scope = scope_of(self.limits, **ids)
        limit = check_limit(
            pick_limit(limit, top_k, 100),
            maximum=self.limits.max_page_size,
            setting="MEMHUB_MAX_PAGE_SIZE",
        )
        if cursor:  # keyset paging: the memories after the cursor, in the list's order
            after = after_memory(cursor)
            rest = {"AND": [rest, after]} if rest else after
        services = await self._services()
        records = await services.store.list_memories(
            scope, parse_filters(rest, self.limits.filters), limit, include_superseded
        )
        results = [memory_item(r) for r in records]
        if cursor is None:
            return {"results": results}
        more = len(results) == limit
        return {"results": results, "next_cursor": memory_cursor(results[-1]) if more else None}

    async def update(
        self,
        memory_id: str | uuid.UUID,
        data: str | None = None,
        *,
        text: str | None = None,
        metadata: dict[str, Any] | None = None,
        merge_metadata: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        expiration_date: date | datetime | str | None = None,
    ) -> dict[str, Any]:
        """Correct a memory's text, metadata and/or expiry; the old text stays in history.

        Args:
            memory_id: The memory.
            data: The new text; None keeps it (a metadata-only change).
            text: The same as ``data``, as Mem0 2.x names it.
            metadata: Replaces the caller's metadata keys (``merge_metadata``: is merged into
                them). memhub's own keys (``role``, ``session_id``, ``provenance``) keep their
                stored values either way.
            merge_metadata: Merge instead of replace (``PATCH`` semantics).
            user_id: With agent_id / run_id: only inside this scope.
            agent_id: See user_id.
            run_id: See user_id.
            expiration_date: A new date (``YYYY-MM-DD``) after which the memory is no longer
                returned, as ``add`` takes it; None keeps the current one.
        """
        scope = self._optional_scope(user_id, agent_id, run_id)
        if data is not None and text is not None and data != text:
            raise UsageError("pass the new text once: data or text")
        data = data if data is not None else text
        if data is None and metadata is None and expiration_date is None:
            raise UsageError("pass the new text (data), metadata, expiration_date, or some")
        # Everything is checked before anything is written.
        text = None if data is None else check_text("data", data, self.limits)
        meta = None if metadata is None else self._check_metadata(metadata)
        expires_at = None if expiration_date is None else parse_expiration(expiration_date)
        memory = parse_memory_id(memory_id)
        services = await self._services()
        if text is None and meta is None:  # only the expiry changes
            record = await services.store.get_memory(scope, memory)
            if record is None:
                raise MemoryNotFound(f"no memory {memory} in this scope")
        else:
            # a text longer than the embedder's window as its passages, as the worker's
            embedded = (
                EmbeddedText(None)
                if text is None
                else (await embed_texts(services.embedder, [text]))[0]
            )
            record = await services.store.update_memory(
                scope,
                memory,
                text,
                None if text is None else memory_hash(text),
                embedded.vector,
                meta,
                actor="user",
                merge_metadata=merge_metadata,
                passages=embedded.passages,
            )
        if expires_at is not None:
            await services.store.set_expiry(scope, [memory], expires_at)
        return {"message": "Memory updated successfully!", "result": memory_item(record)}

    async def delete(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> dict[str, str]:
        """Delete one memory; its history keeps a DELETE event with the last text."""
        scope = self._optional_scope(user_id, agent_id, run_id)
        services = await self._services()
        await services.store.delete_memory(scope, parse_memory_id(memory_id), actor="user")
        return {"message": "Memory deleted successfully!"}

    async def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        filters: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Delete everything of the scope: memories, history, queued jobs and turns.

        ``filters`` may carry the scope ids (Mem0 2.x); no other filter is accepted here.
        """
        ids, rest = split_scope(user_id, agent_id, run_id, filters)
        if rest:
            raise UsageError(f"delete_all takes only scope ids, not filters on {sorted(rest)}")
        scope = scope_of(self.limits, **ids)
        services = await self._services()
        removed = await services.store.delete_all(scope)
        return {"message": "Memories deleted successfully!", "deleted": removed}

    async def history(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[HistoryItem]:
        """Every change of a memory, oldest first."""
        scope = self._optional_scope(user_id, agent_id, run_id)
        services = await self._services()
        events = await services.store.history(scope, parse_memory_id(memory_id))
        if (
            not events
            and await services.store.get_memory(scope, parse_memory_id(memory_id)) is None
        ):
            raise MemoryNotFound(f"no memory {memory_id} in this scope")
        return [history_item(e) for e in events]

    async def recent_turns(
        self, *, user_id: str, session_id: str, limit: int = 10
    ) -> list[Message]:
        """The last ``limit`` turns of one user's session (or run / thread), oldest first."""
        user = check_id("user_id", user_id, self.limits)
        session = check_id("session_id", session_id, self.limits)
        limit = check_limit(limit, maximum=10_000)
        services = await self._services()
        rows = await services.store.recent_turns(user, session, limit)
        return [_deserialize(row.message, row.role) for row in rows]

    async def reset(self) -> None:
        """Delete all data of every user. Irreversible."""
        services = await self._services()
        await services.store.reset()

    # -- ARKOS's API ------------------------------------------------------------------------
    # ARKOS's methods keep ARKOS's contract (False / [] / an empty SystemMessage on failure)
    # and log the cause; each has a twin that raises the typed errors instead.

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
        # ARKOS queues every turn it is given, system messages too ("use_long_term"), so the
        # message's own role is named; without long-term memory, none is.
        request = AddRequest(
            scope=Scope(user_id=user_id),
            messages=(message,),
            metadata={},
            said_at=None,
            infer=True,
            remember_roles=frozenset({message.role} if self.use_long_term else ()),
            session_id=self.session_id,
        )
        plan = plan_add(
            request,
            extracts_facts=self.settings.llm_configured,
            instructions=self.settings.custom_instructions,
        )
        services = await self._services()
        (turn_id,) = await services.store.append_turns(plan.turns, plan.job)
        if plan.job is not None:
            services.worker.wake()
            self._queued(services, Scope(user_id=user_id), [turn_id])
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
        # object's own turns to be ingested (searchable as episodes); never for consolidation
        # (an LLM that is slow or down must not delay recall), never for anyone else's work.
        services = await self._services()
        await self._settle(services, Scope(user_id=user_id), self.settings.recall_wait_timeout)
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
