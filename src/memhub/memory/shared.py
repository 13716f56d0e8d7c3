"""What every memory object of a process shares per database and event loop.

ARKOS creates one ``Memory`` per user; they must not each open a pool, load a model and
start a worker. One :class:`Engine` per (effective settings, embedder, loop) holds the store,
the embedder and the background worker, reference-counted and closed with its last user.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any

from pydantic import SecretBytes, SecretStr

from memhub._loops import LoopShared
from memhub.config import MemhubSettings
from memhub.embed import Embedder, create_embedder
from memhub.engine.consolidate import Consolidator
from memhub.engine.worker import Worker, WorkerConfig
from memhub.llm import LLM, create_llm
from memhub.store.inmemory import InMemoryStore
from memhub.store.postgres import PostgresStore
from memhub.store.protocol import Store

__all__ = [
    "Engine",
    "acquire_engine",
    "close_all_engines",
    "embedder_from_settings",
    "open_store",
    "release_engine",
    "settings_fingerprint",
]

log = logging.getLogger("memhub")


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
    )


def _secret(value: object) -> str | None:
    # model_copy(update=...) skips validation, so a plain str may sit in a SecretStr field.
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    return None if value is None else str(value)


def embedder_from_settings(settings: MemhubSettings) -> Embedder:
    """The embedder the settings name (nothing is loaded until first use)."""
    if settings.embedder in ("minilm", "onnx", "default", "local"):
        return create_embedder(
            settings.embedder,
            threads=settings.embedder_threads,
            model=settings.embedder_model,
            dimension=settings.embedder_dimension,
            models_dir=None if settings.embedder_model is None else settings.data_dir / "models",
        )
    return create_embedder(
        settings.embedder,
        model=settings.embedder_model,
        base_url=settings.embedder_base_url,
        api_key=_secret(settings.embedder_api_key),
        dimension=settings.embedder_dimension,
    )


@dataclass
class Engine:
    """A store, its embedder and (optionally) the in-process worker."""

    store: Store
    embedder: Embedder
    worker: Worker
    llm: LLM | None = None
    owns_embedder: bool = True  # False for an embedder the caller passed in: theirs to close
    _stop: asyncio.Event = field(default_factory=asyncio.Event)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start_worker(self, concurrency: int = 1) -> None:
        """Run ``concurrency`` batch loops on the running loop (idle ones only poll)."""
        loop = asyncio.get_running_loop()
        while len(self._tasks) < concurrency:
            name = f"memhub-worker-{len(self._tasks)}"
            self._tasks.append(loop.create_task(self.worker.run(self._stop), name=name))

    async def close(self) -> None:
        self._stop.set()
        self.worker.wake()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.owns_embedder:
            await self.embedder.aclose()
        if self.llm is not None:
            await self.llm.aclose()
        await self.store.aclose()


_engines: LoopShared[Engine] = LoopShared()


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


async def acquire_engine(settings: MemhubSettings, embedder: Embedder | None = None) -> Engine:
    """The shared engine for these settings (and embedder) on the running loop.

    Openers share an engine only when every setting is equal; an embedder passed in is
    compared by identity (the engine holds it, so its id cannot be reused meanwhile).
    """
    key = (settings_fingerprint(settings), id(embedder))
    return await _engines.acquire(key, lambda: _open_engine(settings, embedder))


async def open_store(settings: MemhubSettings) -> Store:
    """The store the settings name: ``memory://`` in-process, PostgreSQL otherwise."""
    if (settings.database_url or "").startswith("memory://"):
        return await InMemoryStore.open(settings)
    return await PostgresStore.open(settings)


async def _open_engine(settings: MemhubSettings, embedder: Embedder | None) -> Engine:
    store = await open_store(settings)
    try:
        chosen = embedder or embedder_from_settings(settings)
        await store.ensure_embedding_space(chosen.model_name, chosen.dimension)
    except BaseException:
        await store.aclose()
        raise
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
        ),
        consolidator=None if llm is None else Consolidator(llm, chosen),
    )
    engine = Engine(
        store=store, embedder=chosen, worker=worker, llm=llm, owns_embedder=embedder is None
    )
    if settings.worker == "thread":
        engine.start_worker(settings.worker_concurrency or 1)
    return engine


async def release_engine(engine: Engine) -> None:
    """Drop one user; the last one stops the worker and closes the store."""
    if await _engines.release(engine):
        await engine.close()


async def close_all_engines() -> None:
    """Stop every engine of the running loop (interpreter exit)."""
    for engine in _engines.take_all():
        await engine.close()
