"""``memhub demo | migrate | worker | jobs | serve``: running and inspecting memhub."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal

from memhub.config import MemhubSettings

__all__ = ["demo", "jobs", "migrate", "serve", "worker"]


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
    """Apply every migration (opening the engine does; its worker stays off)."""
    from memhub.memory.async_memory import AsyncMemory

    async with AsyncMemory(settings=settings.model_copy(update={"worker": "off"})) as memory:
        await memory.open()
    print("database is up to date")
    return 0


async def worker(settings: MemhubSettings, concurrency: int) -> int:
    """Process queued jobs with ``concurrency`` batch loops until SIGINT or SIGTERM."""
    from memhub.memory.shared import acquire_engine, release_engine

    engine = await acquire_engine(settings.model_copy(update={"worker": "off"}))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    logging.getLogger("memhub").info("worker started (%s concurrent batches)", concurrency)
    try:
        await asyncio.gather(*(engine.worker.run(stop) for _ in range(concurrency)))
    finally:
        await release_engine(engine)
    return 0


async def jobs(settings: MemhubSettings, action: str, ids: list[int]) -> int:
    """``stats`` (JSON), ``parked`` (one JSON object a line) or ``retry`` the given ids."""
    from memhub.memory.admin import AsyncAdmin
    from memhub.memory.async_memory import AsyncMemory

    async with AsyncMemory(settings=settings.model_copy(update={"worker": "off"})) as memory:
        admin = AsyncAdmin(memory)
        if action == "stats":
            stats = await admin.job_stats()
            shown = {"queued": stats.queued, "parked": stats.parked, "llm": stats.llm}
            print(json.dumps({**shown, "by_kind": stats.by_kind}, indent=2))
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

    logging.getLogger("memhub").setLevel(logging.INFO)
    try:
        serve(settings, ServerSettings.from_env(host=args.host, port=args.port, auth=args.auth))
    except KeyboardInterrupt:  # Ctrl-C after uvicorn's graceful shutdown: exit handlers run
        return 130
    return 0
