"""The ``memhub`` command line: demo, worker, jobs, migrations; the rest in submodules."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
from collections.abc import Sequence

import pydantic

from memhub.cli.data import add_subcommands, dispatch
from memhub.cli.db import add_db_command, run_db
from memhub.cli.records import add_record_commands, dispatch_records
from memhub.config import MemhubSettings, settings_error_line
from memhub.errors import MemhubError

__all__ = ["main"]


def _demo(settings: MemhubSettings) -> int:
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


async def _migrate(settings: MemhubSettings) -> int:
    from memhub.store.postgres import PostgresStore

    store = await PostgresStore.open(settings)
    await store.aclose()
    print("database is up to date")
    return 0


async def _worker(settings: MemhubSettings, concurrency: int) -> int:
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


async def _jobs(settings: MemhubSettings, action: str, ids: list[int]) -> int:
    from memhub.store.postgres import PostgresStore

    store = await PostgresStore.open(settings)
    try:
        if action == "stats":
            counts = await store.job_counts()
            print(json.dumps({**counts, "llm": await store.usage_stats()}, indent=2))
        elif action == "parked":
            for job in await store.list_jobs("parked", 1000):
                print(
                    json.dumps(
                        {
                            "id": job.id,
                            "kind": job.kind,
                            **job.scope.as_dict(),
                            "attempts": job.attempts,
                            "error": job.last_error,
                        }
                    )
                )
        elif action == "retry":
            print(f"requeued {await store.requeue_parked(ids or None)} parked jobs")
    finally:
        await store.aclose()
    return 0


def _serve(settings: MemhubSettings, args: argparse.Namespace) -> int:
    from memhub.server import ServerSettings, serve

    logging.getLogger("memhub").setLevel(logging.INFO)
    try:
        serve(settings, ServerSettings.from_env(host=args.host, port=args.port, auth=args.auth))
    except KeyboardInterrupt:  # Ctrl-C after uvicorn's graceful shutdown: exit handlers run
        return 130
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memhub", description="Memory for LLM agents.")
    parser.add_argument("--database-url", help="PostgreSQL URL (default: embedded server)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="store a short conversation and print it back")
    serve = commands.add_parser("serve", help="run the REST API and the web page")
    serve.add_argument("--host", help="interface to bind (default 127.0.0.1, MEMHUB_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8765, MEMHUB_PORT)")
    serve.add_argument("--auth", choices=["on", "off"], help="API keys (default on)")
    commands.add_parser("migrate", help="apply database migrations")
    worker = commands.add_parser("worker", help="process queued jobs until stopped")
    worker.add_argument(
        "--concurrency",
        type=int,
        help="batches in flight (default MEMHUB_WORKER_CONCURRENCY, else one per CPU)",
    )
    jobs = commands.add_parser("jobs", help="inspect the job queue")
    jobs.add_argument("action", choices=["stats", "parked", "retry"])
    jobs.add_argument("ids", nargs="*", type=int, help="job ids for retry (default: all)")
    add_subcommands(commands)  # import, export, reembed, mcp
    add_record_commands(commands)  # get, list, delete, search, fake-llm
    add_db_command(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memhub`` command."""
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        settings = MemhubSettings.from_env(database_url=args.database_url)
        if args.command == "demo":
            return _demo(settings)
        if args.command == "serve":
            return _serve(settings, args)
        if args.command == "migrate":
            return asyncio.run(_migrate(settings))
        if args.command == "worker":
            from memhub.engine.worker import standalone_concurrency

            concurrency = args.concurrency or standalone_concurrency(settings.worker_concurrency)
            return asyncio.run(_worker(settings, max(1, concurrency)))
        if args.command == "jobs":
            return asyncio.run(_jobs(settings, args.action, args.ids))
        if args.command == "db":
            return run_db(args, settings)
        code = dispatch_records(args, settings)
        if code is not None:
            return code
        code = dispatch(args, settings)
        if code is not None:
            return code
    except MemhubError as exc:
        print(f"memhub: {exc}", file=sys.stderr)
        return 1
    except pydantic.ValidationError as exc:  # MEMHUB_* settings: one line, no traceback
        print(settings_error_line(exc), file=sys.stderr)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
