"""``memhub demo | migrate | worker | jobs | serve``: running and inspecting memhub."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

from memhub.config import MemhubSettings
from memhub.errors import StoreUnavailable
from memhub.logs import show_info

if TYPE_CHECKING:
    from memhub.engine.worker import Worker
    from memhub.memory.services import Services

__all__ = ["database_label", "demo", "jobs", "migrate", "serve", "worker"]

log = logging.getLogger("memhub.worker")


def demo(settings: MemhubSettings) -> int:
    """Store a short conversation, print it back, and ask long-term memory about it."""
    from memhub.memory import Memory
    from memhub.messages import AIMessage, UserMessage

    memory = Memory(user_id="demo-user", settings=settings)
    where = settings.database_url or f"embedded PostgreSQL in {settings.data_dir}"
    print(f"database: {where}")
    for message in (
        UserMessage(content="Hi! I'm Ada and my favourite colour is blue."),
        AIMessage(content="Nice to meet you, Ada. I'll remember that you like blue."),
        UserMessage(content="I'm moving to Paris next month."),
    ):
        memory.add_memory(message)
    print(f"stored 3 turns in session {memory.session_id}; read back from PostgreSQL:")
    for turn in memory.retrieve_short_memory(turns=5):
        print(f"  {turn.role:>9}: {turn.content}")
    recalled = memory.retrieve_long_memory([UserMessage(content="What colour do I like?")], 2)
    print(f"long-term recall for 'What colour do I like?':\n  {recalled.content!r}")
    memory.close()
    return 0


async def migrate(settings: MemhubSettings) -> int:
    """Apply every migration (opening the services does; their worker stays off)."""
    from memhub.memory.async_memory import AsyncMemory

    async with AsyncMemory(settings=settings.model_copy(update={"worker": "off"})) as memory:
        await memory.open()
    print("database is up to date")
    return 0


async def worker(settings: MemhubSettings, concurrency: int, report_every: float = 30.0) -> int:
    """Process queued jobs with ``concurrency`` batch loops until SIGINT or SIGTERM.

    Logs one start line, then (every ``report_every`` seconds while there is work) what it
    did: turns per second, jobs queued and parked.
    """
    from memhub.memory.services import acquire_services, release_services

    show_info()
    services = await acquire_services(settings.model_copy(update={"worker": "off"}))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    log.info(
        "worker started: database %s, embedder %s (%s dimensions), %s concurrent batches",
        database_label(settings),
        services.embedder.model_name,
        services.embedder.dimension,
        concurrency,
    )
    reporter = asyncio.ensure_future(_report_progress(services, stop, report_every))
    try:
        await asyncio.gather(*(services.worker.run(stop) for _ in range(concurrency)))
    finally:
        reporter.cancel()
        await release_services(services)
    log.info(
        "worker stopped after %s jobs (%s turns)",
        services.worker.jobs_done,
        services.worker.turns_done,
    )
    return 0


@dataclass(frozen=True)
class WorkDone:
    """A worker's counters at one moment."""

    turns_embedded: int
    jobs: int
    at: float  # time.monotonic()

    @classmethod
    def of(cls, worker: Worker) -> WorkDone:
        return cls(worker.turns_embedded, worker.jobs_done, time.monotonic())


def progress_line(before: WorkDone, now: WorkDone, counts: Mapping[str, int]) -> str | None:
    """What the worker did since ``before``, or None if it did nothing and nothing waits.

    The rate counts turns embedded, also those of batches still in flight: a long import's
    first batch shows its progress before any of its jobs is finished.
    """
    embedded, jobs = now.turns_embedded - before.turns_embedded, now.jobs - before.jobs
    queued, parked = counts.get("queued", 0), counts.get("parked", 0)
    if not (embedded or jobs or queued):
        return None
    seconds = now.at - before.at
    return (
        f"worker: {embedded / max(seconds, 1e-9):.1f} turns/s ({jobs} jobs in {seconds:.1f} s,"
        f" {embedded} turns embedded); queue: {queued} queued, {parked} parked"
    )


async def _report_progress(services: Services, stop: asyncio.Event, every: float) -> None:
    """One INFO line per ``every`` seconds in which the worker worked or jobs waited."""
    before = WorkDone.of(services.worker)
    while not stop.is_set():
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), every)
        try:
            counts = await services.store.job_counts()
        except StoreUnavailable as exc:
            log.warning("worker: cannot read the queue: %s", exc)
            continue
        now = WorkDone.of(services.worker)
        line = progress_line(before, now, counts)
        if line is not None:
            log.info("%s", line)
        before = now


def database_label(settings: MemhubSettings) -> str:
    """Which database, without its password: ``postgresql://user@host:port/db`` or embedded."""
    if not settings.database_url:
        return f"embedded PostgreSQL in {settings.data_dir}"
    parts = urlsplit(settings.database_url)
    if parts.password is None:
        return settings.database_url
    netloc = parts.netloc.rsplit("@", 1)[-1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc}" if user else netloc))


async def jobs(settings: MemhubSettings, action: str, ids: list[int]) -> int:
    """``stats`` (JSON), ``parked`` (one JSON object a line) or ``retry`` the given ids."""
    from memhub.memory.admin import AsyncAdmin
    from memhub.memory.async_memory import AsyncMemory

    async with AsyncMemory(settings=settings.model_copy(update={"worker": "off"})) as memory:
        admin = AsyncAdmin(memory)
        if action == "stats":
            stats = await admin.job_stats()
            shown = {"queued": stats.queued, "parked": stats.parked, "llm": stats.llm}
            by = {"by_lane": stats.by_lane, "by_kind": stats.by_kind}
            print(json.dumps({**shown, **by}, indent=2))
        elif action == "parked":
            for job in await admin.parked_jobs(1000):
                shown = {"id": job.id, "kind": job.kind, **job.scope.as_dict()}
                print(json.dumps({**shown, "attempts": job.attempts, "error": job.last_error}))
        elif action == "retry":
            print(f"requeued {await admin.retry_parked(ids or None)} parked jobs")
    return 0


def serve(settings: MemhubSettings, args: argparse.Namespace) -> int:
    """The REST API and web page until Ctrl-C."""
    from memhub.server import ServerSettings, serve

    show_info()
    try:
        serve(settings, ServerSettings.from_env(host=args.host, port=args.port, auth=args.auth))
    except KeyboardInterrupt:  # Ctrl-C after uvicorn's graceful shutdown: exit handlers run
        return 130
    return 0
