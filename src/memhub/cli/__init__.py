"""The ``memhub`` command line: ``demo``, ``migrate`` and the operational commands."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence

from memhub.config import MemhubSettings
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
    memory.close()
    return 0


async def _migrate(settings: MemhubSettings) -> int:
    from memhub.store.postgres import PostgresStore

    store = await PostgresStore.open(settings)
    await store.aclose()
    print("database is up to date")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memhub", description="Memory for LLM agents.")
    parser.add_argument("--database-url", help="PostgreSQL URL (default: embedded server)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="store a short conversation and print it back")
    commands.add_parser("migrate", help="apply database migrations")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memhub`` command."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING)
    try:
        settings = MemhubSettings.from_env(database_url=args.database_url)
        if args.command == "demo":
            return _demo(settings)
        if args.command == "migrate":
            return asyncio.run(_migrate(settings))
    except MemhubError as exc:
        print(f"memhub: {exc}", file=sys.stderr)
        return 1
    return 2


if __name__ == "__main__":
    sys.exit(main())
