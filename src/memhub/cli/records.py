"""``memhub get | list | delete | restore``: one user's memories from a shell.

Every listing shows memory ids (what ``get`` and ``delete`` take), and says so when it is
empty instead of printing nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from memhub.cli.output import print_items
from memhub.config import MemhubSettings
from memhub.memory import AsyncMemory

__all__ = ["run_record_command"]


def run_record_command(args: argparse.Namespace, settings: MemhubSettings) -> int:
    """``get``, ``list``, ``delete`` or ``restore``; returns the exit status."""
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
        if args.command == "restore":
            restored = await memory.restore(args.memory_id, user_id=args.user_id)
            print(f"restored {restored['id']}: {restored['memory']}")
            return 0
        if args.retired:
            retired = await memory.retired(user_id=args.user_id, limit=args.limit)
            for item in retired["results"]:
                print(
                    f"{item['id']}  retired {item['retired_at'][:10]} by {item['retired_by']}"
                    f"  {item['memory']}  ({item['reason']})"
                )
            if not retired["results"]:
                print(f"no retired memories for user {args.user_id}", file=sys.stderr)
            return 0
        listed = await memory.get_all(
            user_id=args.user_id, limit=args.limit, include_superseded=args.include_superseded
        )
        return print_items(listed["results"], f"no memories for user {args.user_id}")
