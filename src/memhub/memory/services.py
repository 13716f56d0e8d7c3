"""What every memory object of a process shares per database and event loop.

ARKOS creates one ``Memory`` per user; they must not each open a pool, load a model and
start a worker. One :class:`Services` per (effective settings, embedder, loop) holds the store,
the embedder and the background worker, reference-counted and closed with its last user.
(The pipeline steps they run live in :mod:`memhub.engine`; this is what runs them.)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretBytes, SecretStr

from memhub._loops import LoopShared
from memhub._portal import is_portal_loop
from memhub.config import MemhubSettings
from memhub.embed import Embedder, create_embedder
from memhub.embed.factory import DEFAULT_MODEL
from memhub.embed.packaged import PACKAGED_MODELS, is_ready
from memhub.engine.consolidate import Consolidator
from memhub.engine.ingest import INGEST_JOB
from memhub.engine.prompts import reply_tokens
from memhub.engine.worker import Worker, WorkerConfig
from memhub.errors import StoreUnavailable
from memhub.llm import LLM, create_llm
from memhub.memory.reachability import Endpoint, endpoints, start_probe
from memhub.rerank import Reranker, reranker_from_settings
from memhub.store import close_all_stores, open_store
from memhub.store.protocol import BulkStore, Store
from memhub.store.records import EmbeddingSpace, Scope

__all__ = [
    "Services",
    "acquire_services",
    "builds_a_model",
    "embedder_for_store",
    "embedder_from_settings",
    "finish_all_services",
    "learn_dimension",
    "release_services",
    "settings_fingerprint",
]

log = logging.getLogger("memhub")
#: The in-process models a database's recorded name is enough to open again.
_ADOPTABLE = frozenset({"all-MiniLM-L6-v2", *PACKAGED_MODELS})


def llm_from_settings(settings: MemhubSettings) -> LLM | None:
    """The consolidation LLM the settings configure, or None (turns are kept as they are)."""
    if not settings.llm_configured:
        return None
    return create_llm(
        settings.llm_provider,
        model=settings.llm_model,
        base_url=settings.llm_base_url,
        api_key=_secret(settings.llm_api_key),
        timeout=settings.llm_timeout,
        max_retries=settings.llm_max_retries,
        structured_output=settings.llm_structured_output,
        # the reply must fit in the context window next to the prompt
        max_tokens=reply_tokens(settings.llm_context_tokens),
    )


def _secret(value: object) -> str | None:
    # model_copy(update=...) skips validation, so a plain str may sit in a SecretStr field.
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    return None if value is None else str(value)


async def embedder_for_store(settings: MemhubSettings, store: Store) -> Embedder:
    """The settings' embedder; when they name no model, the in-process model the database
    already records, so a database made with an earlier default keeps working (reembed moves
    it: docs/embedders.md)."""
    unset = settings.embedder in ("default", "local") and settings.embedder_model is None
    if unset and isinstance(store, BulkStore):
        recorded = (await store.embedding_space()).model
        if recorded is not None and recorded != DEFAULT_MODEL and recorded in _ADOPTABLE:
            log.info(
                "this database holds vectors of %s: embedding with it (set "
                "MEMHUB_EMBEDDER_MODEL and run `memhub reembed` to move it to another model)",
                recorded,
            )
            settings = settings.model_copy(update={"embedder_model": recorded})
    # A packaged model's first use on a machine builds it (tens of seconds): off
    # the event loop, which may be serving other requests meanwhile.
    return await asyncio.to_thread(embedder_from_settings, settings)


async def learn_dimension(embedder: Embedder) -> int:
    """The embedder's dimension; one that does not know it yet (a served model named without
    ``embedding_dims``) learns it from one real request, embedding one short text."""
    probe = getattr(embedder, "probe_dimension", None)
    if callable(probe):
        learnt = await probe()
        if isinstance(learnt, int):
            return learnt
    return embedder.dimension


def builds_a_model(settings: MemhubSettings) -> bool:
    """Whether opening with these settings first builds a packaged model (once per machine:
    about a minute), so a server should answer ``/healthz`` while it opens."""
    if settings.embedder not in ("minilm", "onnx", "default", "local"):
        return False
    model = settings.embedder_model
    if model is None and settings.embedder in ("default", "local"):
        model = DEFAULT_MODEL
    packaged = PACKAGED_MODELS.get(model or "")
    if packaged is None:
        return False
    return not is_ready(packaged, settings.model_cache, settings.data_dir / "models")


def embedder_from_settings(settings: MemhubSettings) -> Embedder:
    """The embedder the settings name (nothing is loaded until first use)."""
    if settings.embedder in ("minilm", "onnx", "default", "local"):
        return create_embedder(
            settings.embedder,
            threads=settings.embedder_threads,
            model=settings.embedder_model,
            dimension=settings.embedder_dimension,
            model_cache=settings.model_cache,
            models_dir=settings.data_dir / "models",
        )
    return create_embedder(
        settings.embedder,
        model=settings.embedder_model,
        base_url=settings.embedder_base_url,
        api_key=_secret(settings.embedder_api_key),
        dimension=settings.embedder_dimension,
    )


@dataclass
class Services:
    """A store, its embedder and (optionally) the in-process worker, shared by memory objects.

    Not the :mod:`memhub.engine` package: that holds the steps (ingest, worker,
    consolidation); this holds the running things they are given.
    """

    store: Store
    embedder: Embedder
    worker: Worker
    llm: LLM | None = None
    #: search's second pass (MEMHUB_RERANKER), built with the services: a cross-encoder's
    #: model is loaded once for all the memory objects that share them.
    reranker: Reranker | None = None
    owns_embedder: bool = True  # False for an embedder the caller passed in: theirs to close
    exit_timeout: float = 5.0  # MemhubSettings.exit_timeout
    #: The background check that the model servers answer (memory.reachability), if any.
    probe: asyncio.Task[list[Endpoint]] | None = None
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    # Turns their users queued for ingestion, by the job's scope (the last 1,000 of
    # each of the last 1,000 scopes): what an exit finishes before it hands the rest back.
    queued: dict[Scope, list[int]] = field(default_factory=dict)

    def note_queued(self, scope: Scope, turn_ids: Sequence[int]) -> None:
        """Remember turns queued in ``scope`` by this process."""
        held = self.queued.pop(scope, [])
        self.queued[scope] = [*held, *turn_ids][-1000:]
        while len(self.queued) > 1000:
            del self.queued[next(iter(self.queued))]

    async def _unfinished(self) -> int:
        """How many of the scopes this process queued into still have its turns queued."""
        left = 0
        for scope, turn_ids in list(self.queued.items()):
            if await self.store.pending_turn_jobs(scope, turn_ids, [INGEST_JOB]):
                left += 1
            else:
                self.queued.pop(scope, None)
        return left

    def start_worker(self, concurrency: int = 1) -> None:
        """Run ``concurrency`` batch loops on the running loop (idle ones only poll)."""
        loop = asyncio.get_running_loop()
        while len(self._tasks) < concurrency:
            name = f"memhub-worker-{len(self._tasks)}"
            self._tasks.append(loop.create_task(self.worker.run(self._stop), name=name))

    async def _stop_worker(self, within: float | None = None) -> None:
        """Stop the worker loops (their in-flight step gets ``within`` s, then is cancelled)."""
        self._stop.set()
        self.worker.wake()
        tasks, self._tasks = self._tasks, []
        if tasks:
            _, late = await asyncio.wait(tasks, timeout=within)
            for task in late:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def finish(self, budget: float) -> tuple[int, int]:
        """An exit without close(): finish this process's queued ingestion within ``budget``
        seconds, hand back what is left, close. Returns (scopes left queued, leases handed
        back); raises :class:`StoreUnavailable` if the database is down (nothing is lost:
        the jobs are in it)."""
        loop = asyncio.get_running_loop()
        end = loop.time() + budget
        drains = bool(self._tasks)  # an in-process worker: `worker="off"` leaves it to others
        try:
            await self._stop_worker(within=budget)
            await self.worker.hand_back()  # what the stopped loops left leased: drain it
            if drains:
                owners = sorted({scope.owner for scope in self.queued})
                await self.worker.drain_ingest(self._unfinished, end, owners)
            left = await self._unfinished() if drains else 0
            return left, await self.worker.hand_back()
        finally:
            await self.close()

    async def close(self) -> None:
        if self.probe is not None:
            # A script that opens and closes at once still hears of an unreachable server:
            # the check is bounded (PROBE_TIMEOUT), so close waits no longer than that.
            with contextlib.suppress(asyncio.CancelledError):
                await self.probe
        await self._stop_worker()
        with contextlib.suppress(StoreUnavailable):
            await self.worker.hand_back()
        if self.owns_embedder:
            await self.embedder.aclose()
        if self.llm is not None:
            await self.llm.aclose()
        if self.reranker is not None:
            await self.reranker.aclose()
        await self.store.aclose()


_shared: LoopShared[Services] = LoopShared()


def settings_fingerprint(settings: MemhubSettings) -> str:
    """A digest of every setting, secrets included: equal only for equal effective settings."""

    def reveal(value: Any) -> Any:
        if isinstance(value, SecretStr | SecretBytes):
            return value.get_secret_value()
        if isinstance(value, dict):
            return {k: reveal(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [reveal(v) for v in value]
        return value

    text = json.dumps(reveal(settings.model_dump()), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


async def acquire_services(settings: MemhubSettings, embedder: Embedder | None = None) -> Services:
    """The shared services for these settings (and embedder) on the running loop.

    Openers share services only when every setting is equal; an embedder passed in is
    compared by identity (the services hold it, so its id cannot be reused meanwhile).
    """
    key = (settings_fingerprint(settings), id(embedder))
    services = await _shared.acquire(key, lambda: _open_services(settings, embedder))
    _guard_loop()
    return services


# Per event loop (not the sync API's, which its own exit hook covers): a task that waits
# until the loop's last services are closed, so that asyncio.run() ending first cancels it, and
# which then finishes and closes the loop's services a script never closed, while the loop and
# its executor still run. A proper close() releases it (no cancellation): a cancellation
# lands later, when services opened meanwhile on the same loop would be finished by mistake.
@dataclass(frozen=True)
class _Guard:
    task: asyncio.Task[None]
    released: asyncio.Future[None]


_guards: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Guard] = weakref.WeakKeyDictionary()


def _guard_loop() -> None:
    loop = asyncio.get_running_loop()
    guard = _guards.get(loop)
    if (guard is None or guard.task.done()) and not is_portal_loop(loop):
        released: asyncio.Future[None] = loop.create_future()
        task = loop.create_task(_finish_when_cancelled(released), name="memhub-exit")
        _guards[loop] = _Guard(task, released)


async def _finish_when_cancelled(released: asyncio.Future[None]) -> None:
    loop = asyncio.get_running_loop()
    try:
        await released
    except asyncio.CancelledError:
        if _shared.count():
            await finish_all_services()
            with contextlib.suppress(Exception):
                await close_all_stores()
        raise
    finally:
        guard = _guards.get(loop)
        if guard is not None and guard.task is asyncio.current_task():
            del _guards[loop]  # the task holds the loop: keep no finished one


async def _open_space(
    settings: MemhubSettings, embedder: Embedder | None
) -> tuple[Store, Embedder]:
    """The store of the settings' embedding space and its embedder, the space fixed to it.

    A space that prefers the default one (a Mem0 collection's, a LangGraph index's) is the
    default space when that already records its embedder: what was kept there before
    spaces existed stays found.
    """
    prefers = settings.space is not None and settings.space_prefers_default
    store = await open_store(settings.model_copy(update={"space": None}) if prefers else settings)
    try:
        chosen = embedder or await embedder_for_store(settings, store)
        dimension = await learn_dimension(chosen)  # no connection is held meanwhile
        if prefers and not await _records(store, chosen.model_name, dimension):
            await store.aclose()  # closing twice (below, if the next open fails) is harmless
            store = await open_store(settings)
        await store.ensure_embedding_space(chosen.model_name, dimension)
        return store, chosen
    except BaseException:
        await store.aclose()
        raise


async def _records(store: Store, model: str, dimension: int) -> bool:
    """Whether ``store``'s space records this embedder (``memory://`` records none)."""
    if not isinstance(store, BulkStore):
        return False
    return await store.embedding_space() == EmbeddingSpace(model, dimension)


async def _open_services(settings: MemhubSettings, embedder: Embedder | None) -> Services:
    store, chosen = await _open_space(settings, embedder)
    llm = llm_from_settings(settings)
    worker = Worker(
        store,
        chosen,
        WorkerConfig(
            batch_size=settings.worker_batch_size,
            poll_interval=settings.worker_poll_interval,
            max_attempts=settings.job_max_attempts,
            backoff_base=settings.job_retry_base_seconds,
            consolidation_delay=settings.consolidation_delay,
            max_turns_per_call=settings.max_turns_per_call,
            lease_seconds=settings.job_lease_seconds,
            shutdown_grace=settings.worker_shutdown_grace,
            retired_retention_days=settings.retired_retention_days,
        ),
        consolidator=None
        if llm is None
        else Consolidator(
            llm,
            chosen,
            context_tokens=settings.llm_context_tokens,
            check_replacements=settings.llm_check_replacements,
            fill_gaps=settings.llm_fill_gaps,
            changes_per_day=settings.model_changes_per_day,
            changes_per_run=settings.model_changes_per_run,
        ),
    )
    services = Services(
        store=store,
        embedder=chosen,
        worker=worker,
        llm=llm,
        reranker=reranker_from_settings(settings),
        owns_embedder=embedder is None,
        exit_timeout=settings.exit_timeout,
        probe=start_probe(endpoints(settings, llm, chosen)),
    )
    if settings.worker == "thread":
        services.start_worker(settings.worker_concurrency or 1)
    return services


async def release_services(services: Services) -> None:
    """Drop one user; the last one stops the worker and closes the store."""
    if await _shared.release(services):
        await services.close()
        if not _shared.count():  # closed properly: nothing left for the exit guard
            guard = _guards.pop(asyncio.get_running_loop(), None)
            if guard is not None and not guard.released.done():
                guard.released.set_result(None)


async def finish_all_services() -> None:
    """Exit without close(): the services of the running loop each finish the ingestion
    their process queued (``exit_timeout`` seconds for all of them), hand back the rest and
    close.

    Logs one line: INFO as a rule, one WARNING if the database was unreachable.
    """
    services = _shared.take_all()
    if not services:
        return
    # The process is exiting: the pool's own complaints about a database it can no longer
    # reach would only repeat (in many lines) the one this function logs.
    logging.getLogger("psycopg.pool").setLevel(logging.CRITICAL)
    budget = max(one.exit_timeout for one in services)
    loop = asyncio.get_running_loop()
    end = loop.time() + budget
    left = handed = 0
    down: Exception | None = None
    for one in services:
        try:
            scopes, leases = await one.finish(max(end - loop.time(), 0.0))
            left, handed = left + scopes, handed + leases
        except StoreUnavailable as exc:
            down = exc
        except Exception as exc:  # interpreter exit: say it in one line, not a traceback
            down = exc
    if down is not None:
        log.warning(
            "memhub: at exit the database was unreachable (%s); queued turns stay queued in it",
            " ".join(str(down).split()),  # one line: libpq's messages span several
        )
    elif left or handed:
        log.info(
            "memhub: at exit %d scope(s) still had queued turns after %.1f s and %d job(s)"
            " were handed back; the next worker takes them at once",
            left,
            budget,
            handed,
        )
    else:
        log.info("memhub: at exit the turns this process queued were ingested")
