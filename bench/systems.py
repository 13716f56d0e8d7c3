"""The one interface every benchmarked system implements, and the memhub and Mem0 adapters.

A system stores texts per user and answers searches; the workloads in ``recall.py`` and
``hotpath.py`` only talk to :class:`MemorySystem`. Adding a system means one subclass here (or in
its own module) and one entry in :func:`open_system`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

Metadata = Mapping[str, str | int | float | bool]


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result, reduced to what the workloads read."""

    id: str
    text: str
    score: float
    metadata: Mapping[str, Any] = field(default_factory=dict)


class MemorySystem(ABC):
    """What the benchmark needs from a memory system.

    ``add`` is timed as the acknowledged latency; ``flush`` returns once everything added is
    searchable (a no-op for systems that write synchronously).
    """

    name: str = "system"

    @abstractmethod
    def add(
        self, text: str, *, user_id: str, metadata: Metadata, timestamp: datetime | None = None
    ) -> None:
        """Store one turn for ``user_id``."""

    @abstractmethod
    def search(self, query: str, *, user_id: str, k: int) -> list[Hit]:
        """Best ``k`` memories of ``user_id`` for ``query``, best first."""

    def flush(self) -> None:  # noqa: B027 - optional hook, synchronous systems need nothing
        """Block until every acknowledged add is searchable."""

    def embed_query(self, query: str) -> bool:
        """Embed ``query`` the way search does, so its cost can be timed apart.

        Returns False when the system has no separate query embedding to time.
        """
        return False

    def worker_process_ids(self) -> list[int]:
        """Background ingestion processes of their own, whose RSS is also reported apart."""
        return []

    def process_ids(self) -> list[int]:
        """Processes whose memory counts towards this system's RSS (workers, not PostgreSQL)."""
        return [os.getpid()]

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and background workers."""


class Mem0System(MemorySystem):
    """Mem0's ``Memory`` with ``infer=False``: each turn is embedded and stored as it is.

    Mem0's OSS SDK rejects ``timestamp=`` ("platform-only"), but keeps a ``created_at`` given in
    ``metadata`` as the memory's creation time, so the turn's time goes there.
    """

    name = "mem0"

    def __init__(self, config: dict[str, Any]) -> None:
        from mem0 import Memory

        self._memory = Memory.from_config(config)
        # Mem0 2.2.1's pgvector store creates its table lazily on first insert, and concurrent
        # first inserts race on it (UniqueViolation on pg_type); create it before any client runs.
        ensure = getattr(self._memory.vector_store, "_ensure_collection", None)
        if callable(ensure):
            ensure()

    def add(
        self, text: str, *, user_id: str, metadata: Metadata, timestamp: datetime | None = None
    ) -> None:
        extra = dict(metadata)
        if timestamp is not None:
            extra["created_at"] = timestamp.isoformat()
        self._memory.add(text, user_id=user_id, metadata=extra, infer=False)

    def search(self, query: str, *, user_id: str, k: int) -> list[Hit]:
        # threshold=0 keeps Mem0's default ranking but stops it from cutting the list short,
        # so recall@20 means 20 candidates for every system.
        found = self._memory.search(query, filters={"user_id": user_id}, top_k=k, threshold=0.0)
        return [_hit(r) for r in found["results"]]

    def embed_query(self, query: str) -> bool:
        self._memory.embedding_model.embed(query, "search")
        return True

    def close(self) -> None:
        pool = getattr(self._memory.vector_store, "connection_pool", None)
        if pool is not None:
            pool.close()


class MemhubSystem(MemorySystem):
    """memhub through its Mem0-shaped API (``memhub.Memory``).

    With ``external_worker`` the client only enqueues (``MEMHUB_WORKER=off``) and one
    ``memhub worker`` process ingests, as in a production deployment; its RSS is measured on
    its own. Otherwise ingestion runs in the client's in-process worker.
    The query embedding is timed on a second embedder built exactly as memhub builds its own
    (``embedder_from_settings``), or on the given one, so no private attribute is read.
    """

    name = "memhub"

    def __init__(
        self,
        db_url: str,
        *,
        embedder: SentenceTransformerEmbedder | None = None,
        name: str = "memhub",
        external_worker: bool = False,
    ) -> None:
        from memhub import MemhubSettings, Memory

        # from_env: MEMHUB_EMBEDDER_MODEL and the like choose what is measured.
        settings = MemhubSettings.from_env(
            database_url=db_url, worker="off" if external_worker else "thread"
        )
        self._memory = Memory(settings=settings, embedder=embedder)  # type: ignore[arg-type]
        self._query_embedder = embedder
        self._settings = settings
        self._db_url = db_url
        self.name = name
        self._worker: subprocess.Popen[bytes] | None = None
        if external_worker:
            env = {**os.environ, "MEMHUB_DATABASE_URL": db_url}
            self._worker = subprocess.Popen(
                [sys.executable, "-m", "memhub.cli", "worker"], env=env, stdin=subprocess.DEVNULL
            )

    def worker_process_ids(self) -> list[int]:
        return [] if self._worker is None else [self._worker.pid]

    def process_ids(self) -> list[int]:
        return [os.getpid(), *self.worker_process_ids()]

    def add(
        self, text: str, *, user_id: str, metadata: Metadata, timestamp: datetime | None = None
    ) -> None:
        self._memory.add(
            text, user_id=user_id, metadata=dict(metadata), infer=False, timestamp=timestamp
        )

    def flush(self) -> None:
        if self._worker is None:
            self._memory.wait_idle()
            return
        import psycopg

        with psycopg.connect(self._db_url) as conn:
            while True:
                row = conn.execute(
                    "SELECT count(*) FROM memory_jobs WHERE status = 'queued'"
                ).fetchone()
                if row is None or row[0] == 0:
                    return
                if self._worker.poll() is not None:
                    raise RuntimeError(f"memhub worker exited with {self._worker.returncode}")
                time.sleep(0.2)  # a faster poll slows the worker it waits for (bench.ingest)

    def search(self, query: str, *, user_id: str, k: int) -> list[Hit]:
        found = self._memory.search(query, user_id=user_id, limit=k)
        return [_hit(r) for r in found["results"]]

    def embed_query(self, query: str) -> bool:
        if self._query_embedder is None:
            from memhub.memory.services import embedder_from_settings

            self._query_embedder = embedder_from_settings(self._settings)  # type: ignore[assignment]
        embed_sync = getattr(self._query_embedder, "embed_sync", None)
        if not callable(embed_sync):
            return False
        embed_sync([query])
        return True

    def close(self) -> None:
        self._memory.close()
        if self._worker is not None:
            self._worker.terminate()
            self._worker.wait(30)


class SentenceTransformerEmbedder:
    """memhub ``Embedder`` on Mem0's runtime (sentence-transformers + torch, float32 MiniLM).

    Lets memhub run with exactly Mem0's embedding cost, so the engine difference shows alone.
    Follows ``memhub.embed.base.Embedder``; ``embed`` runs the model in a thread, like memhub's
    default embedder, so the worker never blocks the event loop that serves ``add``.
    """

    dimension = 384
    model_name = "sentence-transformers/all-MiniLM-L6-v2"

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit-length float32 vectors, one row per text."""
        from bench.embedding import embed

        return embed(texts)

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The async form memhub's engine calls: off the event loop, as memhub's own embedder."""
        import asyncio

        return await asyncio.to_thread(self.embed_sync, texts)

    async def aclose(self) -> None:
        """Nothing to release: the model is process-wide."""


def _hit(result: Mapping[str, Any]) -> Hit:
    return Hit(
        id=str(result.get("id", "")),
        text=str(result.get("memory", "")),
        score=float(result.get("score") or 0.0),
        metadata=result.get("metadata") or {},
    )


SYSTEM_NAMES: tuple[str, ...] = ("memhub", "memhub-st", "mem0", "bm25", "vector")


def embedders() -> dict[str, str]:
    """What each system embeds with when run from this environment, for the report: memhub's
    model as its settings build it (nothing is loaded), the others' as this module does."""
    from memhub.config import MemhubSettings
    from memhub.memory.services import embedder_from_settings

    on_torch = f"{SentenceTransformerEmbedder.model_name} on sentence-transformers and torch"
    return {
        "memhub": embedder_from_settings(MemhubSettings.from_env()).model_name,
        "memhub-st": on_torch,
        "mem0": f"{on_torch}, through Mem0's `huggingface` embedder",
        "bm25": "none (BM25 over words)",
        "vector": f"{on_torch}, exact cosine in numpy",
    }


def open_system(name: str, *, db_url: str | None) -> MemorySystem:
    """Build a system by name; ``db_url`` is a fresh database for the systems that need one."""
    if name == "bm25":
        from bench.baselines import BM25System

        return BM25System()
    if name == "vector":
        from bench.baselines import VectorSystem

        return VectorSystem()
    if db_url is None:
        raise ValueError(f"{name} needs a database")
    if name == "mem0":
        from bench.mem0_runner import mem0_config

        return Mem0System(mem0_config(db_url))
    if name == "memhub":
        return MemhubSystem(db_url, external_worker=True)
    if name == "memhub-st":
        return MemhubSystem(db_url, embedder=SentenceTransformerEmbedder(), name=name)
    raise ValueError(f"unknown system {name!r}; known: {', '.join(SYSTEM_NAMES)}")
