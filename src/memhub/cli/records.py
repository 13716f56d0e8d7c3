"""``memhub get | list | delete | search | fake-llm``: one user's memories from a shell.

Every listing shows memory ids (what ``get`` and ``delete`` take), and says so when it is
empty instead of printing nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from memhub.config import MemhubSettings
from memhub.memory import AsyncMemory
from memhub.memory.results import MemoryItem

__all__ = ["add_record_commands", "dispatch_records"]

_COMMANDS = ("get", "list", "delete", "search", "fake-llm")


def add_record_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this module's commands to the CLI's subparsers."""
    from memhub.testing._serve import add_arguments

    get = commands.add_parser("get", help="print one memory (JSON)")
    get.add_argument("memory_id")
    get.add_argument("--user-id", help="only if it belongs to this user")
    listing = commands.add_parser("list", help="list a user's memories with their ids")
    listing.add_argument("--user-id", required=True)
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--include-superseded", action="store_true", help="also outdated facts")
    delete = commands.add_parser("delete", help="delete one memory (history keeps it)")
    delete.add_argument("memory_id")
    delete.add_argument("--user-id", help="only if it belongs to this user")
    search = commands.add_parser("search", help="search a user's memories")
    search.add_argument("query")
    search.add_argument("--user-id", required=True)
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--as-of", help="only what was true then (ISO 8601)")
    fake = commands.add_parser(
        "fake-llm", help="serve a scripted OpenAI-compatible endpoint (try agents without an LLM)"
    )
    add_arguments(fake)


def dispatch_records(args: argparse.Namespace, settings: MemhubSettings) -> int | None:
    """Run the command if it is one of this module's; None otherwise."""
    if args.command not in _COMMANDS:
        return None
    if args.command == "fake-llm":
        from memhub.testing._serve import serve

        return serve(args)
    return asyncio.run(_run(args, settings.model_copy(update={"worker": "off"})))


async def _run(args: argparse.Namespace, settings: MemhubSettings) -> int:
    async with AsyncMemory(settings=settings) as memory:
        if args.command == "get":
            found = await memory.get(args.memory_id, user_id=args.user_id)
            if found is None:
                print(f"no memory {args.memory_id}", file=sys.stderr)
                return 1
            print(json.dumps(found, indent=2, ensure_ascii=False))
            return 0
        if args.command == "delete":
            await memory.delete(args.memory_id, user_id=args.user_id)
            print(f"deleted {args.memory_id}")
            return 0
        if args.command == "list":
            listed = await memory.get_all(
                user_id=args.user_id,
                limit=args.limit,
                include_superseded=args.include_superseded,
            )
            return _print(listed["results"], f"no memories for user {args.user_id}")
        found_hits = await memory.search(
            args.query, user_id=args.user_id, limit=args.limit, as_of=args.as_of
        )
        return _print(
            found_hits["results"], f"no memories of user {args.user_id} match {args.query!r}"
        )


def _print(items: list[MemoryItem], empty: str) -> int:
    if not items:
        print(empty, file=sys.stderr)
        return 0
    for item in items:
        print("  ".join(_columns(item)))
    return 0


def _columns(item: MemoryItem) -> list[str]:
    columns: list[Any] = [item["id"]]
    if "score" in item:
        columns.append(f"{item['score']:.3f}")
    columns.append(item["created_at"][:10])
    if item.get("valid_to"):
        columns.append(f"(until {str(item['valid_to'])[:10]})")
    columns.append(item["memory"].replace("\n", " "))
    return [str(c) for c in columns]
