"""``Memory``: the synchronous face of :class:`AsyncMemory`, one line per method.

GENERATED from ``AsyncMemory`` and its bases by ``tools/gen_sync.py``: do not edit; run
``python tools/gen_sync.py``. Each call runs on memhub's process-wide event loop thread,
so every thread shares one connection pool.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from datetime import date, datetime
from typing import Any

from memhub._portal import run_sync
from memhub.config import MemhubSettings
from memhub.embed import Embedder
from memhub.engine.fusion import FusionConfig
from memhub.engine.search_config import SearchConfig
from memhub.memory.async_memory import AsyncMemory
from memhub.memory.results import HistoryItem, MemoryItem
from memhub.messages import Message, SystemMessage

__all__ = ["Memory"]


class Memory:
    """Synchronous memory; every method means what it means on :class:`AsyncMemory`.

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
        search_config: SearchConfig | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self._async = AsyncMemory(
            user_id,
            session_id,
            db_url,
            use_long_term,
            settings=settings,
            embedder=embedder,
            fusion=fusion,
            search_config=search_config,
            config=config,
        )

    @property
    def async_memory(self) -> AsyncMemory:
        """The async object every call goes to."""
        return self._async

    @property
    def user_id(self) -> str | None:
        """The user ARKOS's methods act for (None: pass ``user_id`` per call)."""
        return self._async.user_id

    @property
    def session_id(self) -> str:
        """The conversation ARKOS's methods store into and read from."""
        return self._async.session_id

    @session_id.setter
    def session_id(self, value: str) -> None:
        self._async.session_id = value

    @property
    def settings(self) -> MemhubSettings:
        """The settings this object runs with."""
        return self._async.settings

    def close(self) -> None:
        """Release this object's share of the pool, the embedder and the worker."""
        run_sync(self._async.aclose())

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> Memory:
        """Build from a Mem0-style config dict (``vector_store``, ``embedder``, ``llm``)."""
        memory = cls.__new__(cls)
        memory._async = AsyncMemory.from_config(config)
        return memory

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
                remember_roles=remember_roles,
                idempotency_key=idempotency_key,
                expiration_date=expiration_date,
            )
        )

    def wait_idle(self) -> None:
        """Process (or wait for) every queued job of the database; benchmarks and tests use it."""
        return run_sync(self._async.wait_idle())

    def search(
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
                top_k=top_k,
                as_of=as_of,
                max_tokens=max_tokens,
                excerpt_tokens=excerpt_tokens,
                rerank=rerank,
                min_score_ratio=min_score_ratio,
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
        """One memory by id (None if absent); with scope ids, only inside that scope."""
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
        return run_sync(
            self._async.get_all(
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                filters=filters,
                limit=limit,
                include_superseded=include_superseded,
                top_k=top_k,
                cursor=cursor,
            )
        )

    def update(
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
        return run_sync(
            self._async.update(
                memory_id,
                data,
                text=text,
                metadata=metadata,
                merge_metadata=merge_metadata,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                expiration_date=expiration_date,
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
        """Delete one memory; its history keeps a DELETE event with the last text."""
        return run_sync(
            self._async.delete(memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id)
        )

    def delete_all(
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
        return run_sync(
            self._async.delete_all(
                user_id=user_id, agent_id=agent_id, run_id=run_id, filters=filters
            )
        )

    def history(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> list[HistoryItem]:
        """Every change of a memory, oldest first."""
        return run_sync(
            self._async.history(memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id)
        )

    def recent_turns(self, *, user_id: str, session_id: str, limit: int = 10) -> list[Message]:
        """The last ``limit`` turns of one user's session (or run / thread), oldest first."""
        return run_sync(
            self._async.recent_turns(user_id=user_id, session_id=session_id, limit=limit)
        )

    def reset(self) -> None:
        """Delete all data of every user. Irreversible."""
        return run_sync(self._async.reset())

    def start_new_session(self) -> str:
        """Begin a new conversation; returns its id."""
        return self._async.start_new_session()

    serialize = staticmethod(AsyncMemory.serialize)

    deserialize = staticmethod(AsyncMemory.deserialize)

    def add_turn(self, message: Message) -> int:
        """Store one message of the current session (typed errors); returns its turn id."""
        return run_sync(self._async.add_turn(message))

    def add_memory(self, message: Message) -> bool:
        """ARKOS: store ``message``; True on success, False (logged) on any error."""
        return run_sync(self._async.add_memory(message))

    def short_memory(self, turns: int) -> list[Message]:
        """The last ``turns`` messages of this session, oldest first (typed errors)."""
        return run_sync(self._async.short_memory(turns))

    def retrieve_short_memory(self, turns: int) -> list[Message]:
        """ARKOS: the last ``turns`` messages of this session, oldest first; [] on error."""
        return run_sync(self._async.retrieve_short_memory(turns))

    def long_memory(
        self, context: Sequence[Message] | None = None, mem0_limit: int = 10
    ) -> SystemMessage:
        """Memories relevant to the last two messages of ``context`` (typed errors)."""
        return run_sync(self._async.long_memory(context, mem0_limit))

    def retrieve_long_memory(
        self, context: Sequence[Message] | None = None, mem0_limit: int = 10
    ) -> SystemMessage:
        """ARKOS: ``SystemMessage("retrieved memories:\\n...")``; empty on error or no hits."""
        return run_sync(self._async.retrieve_long_memory(context, mem0_limit))

    def retire(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        actor: str = "user",
        reason: str = "retired",
    ) -> MemoryItem:
        """Take a current memory out of every read, restorably (history ``RETIRE``).

        What agents' and MCP's ``forget`` do; ``delete`` erases instead.

        Args:
            memory_id: The memory.
            user_id: With agent_id / run_id: only inside this scope.
            agent_id: See user_id.
            run_id: See user_id.
            actor: Who retires it (shown in its history).
            reason: Why (shown in its history and in :meth:`retired`).

        Raises:
            MemoryNotFound: no current memory with that id in the scope.
            ModelBudgetSpent: ``actor`` is a model (not ``"user"``) and models already changed
                ``MEMHUB_MODEL_CHANGES_PER_DAY`` memories of the user in 24 hours.
        """
        return run_sync(
            self._async.retire(
                memory_id,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
                actor=actor,
                reason=reason,
            )
        )

    def restore(
        self,
        memory_id: str | uuid.UUID,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryItem:
        """Bring back a retired memory, or a superseded one in place of its successor.

        Restoring a superseded fact makes it current again and retires the fact that
        replaced it (the current end of its chain), so one of them is current, not both.
        Restoring the earlier wording a model's UPDATE kept rewords the memory back under its
        own id (as :meth:`undo_change` of that UPDATE does).

        Raises:
            MemoryNotFound: no such memory in the scope (another scope's id included).
            NotRestorable: it was erased (deleted by the user, or purged), it is current,
                or an equal memory is current now.
        """
        return run_sync(
            self._async.restore(memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id)
        )

    def retired(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
    ) -> dict[str, list[dict[str, Any]]]:
        """The scope's retired memories, most recently retired first: what ``restore`` takes.

        Each item is a memory plus ``retired_at``, ``retired_by``, ``reason`` and the
        ``turn_ids`` cited for it.
        """
        return run_sync(
            self._async.retired(user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit)
        )

    def model_changes(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        limit: int = 100,
        before: int | None = None,
    ) -> dict[str, list[dict[str, Any]]]:
        """Every change a model made to the scope's memories, newest first.

        Retires, supersessions and rewordings (UPDATE) by consolidation, agents' ``forget``,
        MCP's ``delete_memory`` and LangGraph's ``delete``; a person's own changes are not
        listed. Each item: ``id`` (what :meth:`undo_change` takes), ``memory_id``, ``event``
        (RETIRE, SUPERSEDE or UPDATE), ``before`` and ``after`` (the text), ``actor``,
        ``reason``, ``turn_ids`` (the turns cited), ``created_at``, ``undone`` and
        ``successor_id`` (a SUPERSEDE's new fact).

        Args:
            user_id: With agent_id / run_id: whose changes (at least one is required).
            agent_id: See user_id.
            run_id: See user_id.
            limit: At most this many (up to ``MEMHUB_MAX_PAGE_SIZE``).
            before: Only changes with a smaller ``id``: the next page after the last item.
        """
        return run_sync(
            self._async.model_changes(
                user_id=user_id, agent_id=agent_id, run_id=run_id, limit=limit, before=before
            )
        )

    def undo_change(
        self,
        change_id: int,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryItem:
        """Undo one model change listed by :meth:`model_changes`, under the same memory id.

        A retire is restored; a supersession reopens the old fact and retires its successor;
        a rewording (UPDATE) gets its earlier text back. The memory's history gains a
        ``RESTORE`` event whose metadata names the change (``undoes``).

        Raises:
            MemoryNotFound: no such change in the scope (another scope's included).
            NotRestorable: not a model's change, undone already, the memory was erased or
                changed again since (undo the later change first), or an equal memory is
                current now.
        """
        return run_sync(
            self._async.undo_change(change_id, user_id=user_id, agent_id=agent_id, run_id=run_id)
        )

    @property
    def extracts_facts(self) -> bool:
        """An LLM is configured: ``add(infer=True)`` extracts facts instead of keeping turns."""
        return self._async.extracts_facts

    def open(self) -> None:
        """Open the store, the embedder and the worker now instead of on the first call.

        A server calls this at startup: the worker then drains jobs queued before a restart,
        a broken database or embedder configuration fails the start, not a request, and an
        in-process embedding model is loaded and run once, so the first search does not
        wait for it. Calling it again does nothing.
        """
        return run_sync(self._async.open())
