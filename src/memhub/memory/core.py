"""What every memory method stands on: the checked ids, the shared services, waiting for jobs."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any, Self

from memhub._fair import step_aside
from memhub.config import MemhubSettings
from memhub.embed import Embedder
from memhub.engine.fusion import FusionConfig
from memhub.engine.ingest import INGEST_JOB
from memhub.engine.search_config import SearchConfig
from memhub.errors import UsageError
from memhub.memory.inputs import Limits, check_id, check_metadata, scope_of
from memhub.memory.services import Services, acquire_services, release_services
from memhub.memory.writes import QueuedTurns, current_writes
from memhub.store.records import Scope

__all__ = ["MemoryCore", "parse_memory_id", "services_of"]


def parse_memory_id(value: object) -> uuid.UUID:
    """``value`` as a memory id; :class:`UsageError` if it is not a UUID."""
    try:
        return value if isinstance(value, uuid.UUID) else uuid.UUID(str(value))
    except ValueError:
        raise UsageError(f"memory_id {value!r} is not a UUID") from None


def _settings_from_config(config: object, db_url: str | None) -> MemhubSettings:
    """Settings from a Mem0 config: a dict, or Mem0's own ``MemoryConfig`` (a pydantic model)."""
    from memhub.memory.mem0_config import settings_from_mem0_config

    dump = getattr(config, "model_dump", None)
    # Mem0 2.2's MemoryConfig types a provider's config as a dict but holds a model there:
    # pydantic dumps it right, with a UserWarning the caller would see for nothing.
    mapping = dump(exclude_none=True, warnings=False) if callable(dump) else config
    if not isinstance(mapping, Mapping):
        raise UsageError(f"config must be a Mem0 config dict, got {type(config).__name__}")
    settings = settings_from_mem0_config(mapping)
    return settings if db_url is None else settings.model_copy(update={"database_url": db_url})


class MemoryCore:
    """The state of a memory object and the helpers its public methods share.

    :class:`memhub.memory.async_memory.AsyncMemory` documents the constructor's arguments.
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
        if config is not None:
            if settings is not None:
                raise UsageError("pass settings or a Mem0 config, not both")
            settings = _settings_from_config(config, db_url)
        if settings is None:
            settings = MemhubSettings.from_env(database_url=db_url)
        elif db_url is not None:
            settings = settings.model_copy(update={"database_url": db_url})
        self.settings = settings
        self.limits = Limits.from_settings(settings)
        self.user_id = None if user_id is None else check_id("user_id", user_id, self.limits)
        self.session_id = (
            str(uuid.uuid4())
            if session_id is None
            else check_id("session_id", session_id, self.limits)
        )
        self.use_long_term = use_long_term
        if search_config is not None and fusion is not None:
            raise UsageError("pass fusion or a search_config (which holds one), not both")
        self.search_config = search_config or SearchConfig.from_settings(settings, fusion)
        self._embedder = embedder
        self._services_ref: Services | None = None
        self._open_lock: asyncio.Lock | None = None
        # Turns this object queued for ingestion, by the job's scope, that a read of the
        # scope waits for (briefly) so that it finds them by meaning too; a server names
        # each request's caller's own instead (memory/writes.py).
        self._unsettled = QueuedTurns()

    @property
    def extracts_facts(self) -> bool:
        """An LLM is configured: ``add(infer=True)`` extracts facts instead of keeping turns."""
        return self.settings.llm_configured

    # -- lifecycle --------------------------------------------------------------------------
    async def _services(self) -> Services:
        if self._services_ref is None:
            if self._open_lock is None:
                self._open_lock = asyncio.Lock()
            async with self._open_lock:
                if self._services_ref is None:
                    self._services_ref = await acquire_services(self.settings, self._embedder)
        return self._services_ref

    async def open(self) -> None:
        """Open the store, the embedder and the worker now instead of on the first call.

        A server calls this at startup: the worker then drains jobs queued before a restart,
        a broken database or embedder configuration fails the start, not a request, and an
        in-process embedding model is loaded and run once, so the first search does not
        wait for it. Calling it again does nothing.
        """
        services = await self._services()
        warm = getattr(services.embedder, "warm", None)  # in-process models have it
        if callable(warm):
            await warm()

    async def aclose(self) -> None:
        """Release this object's share of the pool, the embedder and the worker."""
        services, self._services_ref = self._services_ref, None
        if services is not None:
            await release_services(services)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _check_metadata(self, metadata: object) -> dict[str, Any]:
        return check_metadata(metadata, self.limits)

    @staticmethod
    async def _wait_for_turns(
        services: Services,
        scope: Scope,
        turn_ids: Sequence[int],
        kinds: Sequence[str] | None,
        deadline: float,
    ) -> bool:
        """Wait until no queued job of ``kinds`` is about ``turn_ids``; False at the deadline.

        Only waits: polling one indexed count is cheap, and running the queue here would make
        a reader do (and wait for) other people's work.
        """
        if not turn_ids:
            return True
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline
        pause = 0.005
        async with step_aside():  # a server's request slot serves others meanwhile
            while await services.store.pending_turn_jobs(scope, turn_ids, kinds):
                if loop.time() >= end:
                    return False
                await asyncio.sleep(min(pause, max(end - loop.time(), 0)))
                pause = min(pause * 2, 0.05)
        return True

    def _writes(self) -> QueuedTurns:
        """Whose queued turns a read waits for: the caller's a server named for this
        request (:func:`memhub.memory.writes.caller_writes`), else this object's own."""
        named = current_writes()
        return self._unsettled if named is None else named

    def _queued(self, services: Services, scope: Scope, turn_ids: Sequence[int]) -> None:
        """Remember turns queued for ingestion in ``scope`` (the last 100 scopes, 100 each);
        the services remember them too, for an exit without close()."""
        services.note_queued(scope, turn_ids)
        self._writes().note(scope, turn_ids)

    def _unsettled_in(self, scope: Scope) -> list[Scope]:
        """The scopes of queued turns a read of ``scope`` sees (those with its ids)."""
        return self._writes().seen_by(scope)

    async def _settle(self, services: Services, scope: Scope, deadline: float) -> bool:
        """Wait (up to ``deadline`` s in all) for this object's own queued turns ``scope``
        sees to be ingested, so a read right after an add finds them by meaning too.

        Only the ingest lane: consolidation (an LLM that may be slow or down) never delays a
        read, nor does anyone else's work. The turns are forgotten either way, so one slow
        worker delays one read, not every read after it. False if the deadline passed.
        """
        writes = self._writes()
        seen = writes.seen_by(scope)
        if not seen or deadline <= 0:
            return True
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline
        settled = True
        for s in seen:
            turn_ids = writes.take(s)
            if settled:
                left = max(end - loop.time(), 0.0)
                settled = await self._wait_for_turns(services, s, turn_ids, [INGEST_JOB], left)
        return settled

    async def _drain(self, services: Services, scope: Scope) -> None:
        # wait_idle's drain: runs the queue itself (tests, benchmarks and imports use it).
        # Jobs in retry backoff keep this waiting until they succeed or are parked (bounded
        # by job_max_attempts); callers that need a deadline wrap it in asyncio.timeout().
        while await services.store.pending_jobs(scope):
            if not await services.worker.run_once():
                await asyncio.sleep(0.02)  # another worker holds the jobs; let it finish

    def _optional_scope(self, user_id: object, agent_id: object, run_id: object) -> Scope | None:
        if user_id is None and agent_id is None and run_id is None:
            return None
        return scope_of(self.limits, user_id, agent_id, run_id)

    def _require_user(self) -> str:
        if self.user_id is None:
            raise UsageError("this Memory has no user_id; pass Memory(user_id=...)")
        return self.user_id


async def services_of(memory: MemoryCore) -> Services:
    """The services ``memory`` runs on, opened on first use; closed by ``memory``'s owner.

    For what works beside a memory object on the same pool and worker (``AsyncAdmin``, the
    LangGraph store), so that a process holds one pool: a function, not a public method,
    so that the sync ``Memory`` (generated from the public methods) does not hand out an
    async store.
    """
    return await memory._services()
