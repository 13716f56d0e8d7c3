"""Bulk import: checked records written a batch per transaction, with a resumable cursor.

What ``memhub import`` needs below the command line. A record is checked as ``add()`` checks
its arguments; a batch of them becomes turns, memories (text first: keyword-searchable when
the batch commits, embedded by the worker's ingest job), jobs and the input's cursor, in one
transaction (the store's :class:`BulkStore`, which only PostgreSQL's has).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memhub.config import MemhubSettings
from memhub.engine.ingest import INGEST_JOB, AddPlan, plan_add
from memhub.engine.worker import Worker
from memhub.errors import UsageError
from memhub.memory.async_memory import AsyncMemory
from memhub.memory.core import services_of
from memhub.memory.inputs import Limits, check_add
from memhub.memory.services import embedder_for_store
from memhub.store import open_store
from memhub.store.protocol import BulkStore, Store
from memhub.store.records import (
    ImportBatch,
    ImportCursor,
    JobPayload,
    NewJob,
    NewMemory,
    NewTurn,
    Scope,
    utc_wall_time,
)

__all__ = ["CheckedItem", "ImportRecord", "Importer", "source_identity"]

# Turns per ingest job, so several workers can share one user's backlog; a worker claim does
# WorkerConfig.claim_turns of one and gives the rest back (another owner's add goes between).
_TURNS_PER_JOB = 256


@dataclass(frozen=True)
class ImportRecord:
    """One item of an import file, as ``AsyncMemory.add`` would take it.

    ``infer`` is None when the command's ``--infer`` decides; Mem0-shaped memory items are
    facts already and are stored as they are (False).
    """

    messages: Any
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    metadata: Any
    timestamp: Any
    infer: bool | None
    superseded: bool = False


# An item that passed every check, planned as add() plans a call: its turns (a long-term
# one carrying the memory it becomes), its payload, whether each turn becomes one memory.
CheckedItem = AddPlan


def source_identity(path: str | Path) -> ImportCursor:
    """A file's identity for the cursor: its resolved path (per database).

    A resume checks that the items done before are unchanged (their digest), so fixing a bad
    line after them, or appending lines, continues where the import stopped.
    """
    resolved = str(Path(path).resolve())
    digest = hashlib.sha256(resolved.encode()).hexdigest()
    return ImportCursor(source=digest, path=resolved, position=0)


class Importer:
    """Writes checked records to PostgreSQL, one transaction per batch.

    Args:
        settings: The database (PostgreSQL: an import into ``memory://`` would vanish with
            the process) and the embedder the memories will be embedded with.
        infer: Let a configured LLM extract facts from messages (``--infer``).
    """

    def __init__(self, settings: MemhubSettings, infer: bool) -> None:
        if (settings.database_url or "").startswith("memory://"):
            raise UsageError("memhub import writes to PostgreSQL; memory:// ends with the process")
        self.settings = settings
        self.infer = infer
        self.limits = Limits.from_settings(settings)
        self._store: Store | None = None
        self._bulk: BulkStore | None = None
        # What this import queued: the jobs its progress counts, the users it runs.
        self._job_ids: list[int] = []
        self._owners: set[str] = set()

    async def __aenter__(self) -> Importer:
        store = await open_store(self.settings)
        try:
            if not isinstance(store, BulkStore):
                raise UsageError("memhub import writes to PostgreSQL; this store has no bulk path")
            # Refuse an embedder the database does not record now, not at the first job.
            embedder = await embedder_for_store(self.settings, store)
            await store.ensure_embedding_space(embedder.model_name, embedder.dimension)
        except BaseException:
            await store.aclose()
            raise
        self._store, self._bulk = store, store
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        store, self._store, self._bulk = self._store, None, None
        if store is not None:
            await store.aclose()

    @property
    def store(self) -> Store:
        """The open store (inside ``async with``)."""
        if self._store is None:
            raise RuntimeError("Importer is used outside `async with`")
        return self._store

    @property
    def bulk(self) -> BulkStore:
        """The open store's bulk writes (inside ``async with``)."""
        if self._bulk is None:
            raise RuntimeError("Importer is used outside `async with`")
        return self._bulk

    def check(self, record: ImportRecord) -> CheckedItem:
        """Check ``record`` as ``add()`` checks its arguments, and plan it as ``add()`` would.

        Raises:
            UsageError: The record cannot be stored; the message says why.
        """
        infer = self.infer if record.infer is None else record.infer
        request = check_add(
            self.limits,
            record.messages,
            user_id=record.user_id,
            agent_id=record.agent_id,
            run_id=record.run_id,
            metadata=record.metadata,
            timestamp=record.timestamp,
            infer=infer,
        )
        return plan_add(
            request,
            extracts_facts=self.settings.llm_configured,
            instructions=self.settings.custom_instructions,
        )

    async def cursor(self, source: ImportCursor) -> ImportCursor | None:
        """Where an earlier import of ``source`` stopped (None: never started)."""
        return await self.bulk.import_cursor(source.source)

    async def forget(self, source: ImportCursor) -> None:
        """Drop ``source``'s cursor: the next import of it starts from the first item."""
        await self.bulk.reset_import_cursor(source.source)

    async def write(self, items: Sequence[CheckedItem], cursor: ImportCursor | None) -> int:
        """Store ``items`` and move ``cursor`` in one transaction; returns the turns written."""
        count = sum(len(item.turns) for item in items)
        ids = await self.bulk.reserve_turn_ids(count) if count else []
        batch = _batch(items, ids, cursor)
        self._job_ids += await self.bulk.write_import(batch)
        self._owners.update(job.scope.owner for job in batch.jobs)
        return count

    async def pending_jobs(self) -> int:
        """This import's own jobs still queued (not other imports' or users')."""
        return await self.bulk.queued_jobs_among(self._job_ids) if self._job_ids else 0

    async def _run_own(self, worker: Worker) -> None:
        # Only the imported users' jobs: another user's backlog is the workers' to run.
        # With an LLM, also the facts drawn from them (follow-up jobs this import did not
        # queue itself, but caused).
        owners = sorted(self._owners)
        facts = self.settings.llm_configured
        while await self.pending_jobs() or (
            facts and await self.bulk.queued_jobs_among(None, owners)
        ):
            if not await worker.run_for(owners):
                await asyncio.sleep(0.02)  # backing off, or another worker holds them

    async def ingest(self, on_progress: Callable[[int], None]) -> None:
        """Embed what this import queued, here, until none of its jobs is queued.

        ``on_progress`` is told how many of this import's jobs queued at the start are done,
        twice a second.
        """
        first = await self.pending_jobs()
        async with AsyncMemory(settings=self.settings.model_copy(update={"worker": "off"})) as m:
            task = asyncio.ensure_future(self._run_own((await services_of(m)).worker))
            try:
                while not task.done():
                    on_progress(max(0, first - await self.pending_jobs()))
                    await asyncio.wait({task}, timeout=0.5)
                await task
            finally:
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
        on_progress(first)


def _batch(
    items: Sequence[CheckedItem], ids: Sequence[int], cursor: ImportCursor | None
) -> ImportBatch:
    """The rows of one transaction: turns under ``ids`` (in order), memories, jobs."""
    now = datetime.now(UTC).replace(tzinfo=None)  # one clock for a batch's turns and memories
    turns: list[tuple[int, NewTurn]] = []
    memories: list[NewMemory] = []
    pending: dict[Scope, list[tuple[int, uuid.UUID]]] = {}
    jobs: list[NewJob] = []
    next_id = iter(ids)
    for item in items:
        stored = [(next(next_id), _stamped(turn, now)) for turn in item.turns]
        turns += stored
        # Every turn's memory is written now, as add() writes it: found by its words when the
        # batch commits; the ingest job only embeds it. A blank text or a system message has
        # none (as add()'s).
        said = [(turn_id, turn, turn.memory) for turn_id, turn in stored if turn.memory]
        for turn_id, turn, memory in said:
            said_at = (turn.created_at or now).replace(tzinfo=UTC)  # stamped: UTC wall time
            memories.append(memory.row(item.scope, turn_id, turn.role, turn.metadata, said_at))
        if item.one_per_turn:  # batched into jobs of many items' turns, below
            pending.setdefault(item.scope, []).extend((t, m.id) for t, _, m in said)
            continue
        long_term = tuple(turn_id for turn_id, turn in stored if turn.long_term)
        if long_term:  # as add() queues them: the LLM sees one item's turns
            payload = dataclasses.replace(item.payload, turn_ids=long_term)
            jobs.append(NewJob(INGEST_JOB, item.scope, payload))
    for scope, pairs in pending.items():
        for start in range(0, len(pairs), _TURNS_PER_JOB):
            part = pairs[start : start + _TURNS_PER_JOB]
            payload = JobPayload(
                infer=False,
                event_id=str(uuid.uuid4()),
                turn_ids=tuple(turn_id for turn_id, _ in part),
                memory_ids=tuple(memory_id for _, memory_id in part),
            )
            jobs.append(NewJob(INGEST_JOB, scope, payload))
    return ImportBatch(turns=turns, memories=memories, jobs=jobs, cursor=cursor)


def _stamped(turn: NewTurn, now: datetime) -> NewTurn:
    return dataclasses.replace(turn, created_at=utc_wall_time(turn.created_at or now))
