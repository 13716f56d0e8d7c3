"""``memhub changes | undo``: what models changed for one user, and undoing one change.

``changes`` prints each change a model made (retire, supersede, reword), newest first: its id,
when, what, by whom, why, and the text before and after; ``undo`` takes such an id and brings
the memory back under the same id (``AsyncMemory.undo_change``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from memhub.config import MemhubSettings
from memhub.memory import AsyncMemory

__all__ = ["change_line", "run_changes_command"]


def change_line(change: dict[str, Any]) -> str:
    """One change as ``changes`` prints it."""
    undone = "  (undone)" if change["undone"] else ""
    turns = ",".join(str(t) for t in change["turn_ids"]) or "-"
    return (
        f"{change['id']}  {change['created_at'][:19]}  {change['event']} by {change['actor']}"
        f"  turns {turns}{undone}\n    before: {change['before']}\n    after:  {change['after']}"
        f"\n    why:    {change['reason'] or '-'}"
    )


def run_changes_command(args: argparse.Namespace, settings: MemhubSettings) -> int:
    """``changes`` or ``undo``; returns the exit status."""
    return asyncio.run(_run(args, settings.model_copy(update={"worker": "off"})))


async def _run(args: argparse.Namespace, settings: MemhubSettings) -> int:
    async with AsyncMemory(settings=settings) as memory:
        if args.command == "undo":
            back = await memory.undo_change(args.change_id, user_id=args.user_id)
            print(f"undid change {args.change_id}: {back['id']} is now: {back['memory']}")
            return 0
        found = await memory.model_changes(
            user_id=args.user_id, limit=args.limit, before=args.before
        )
        for change in found["results"]:
            print(json.dumps(change, ensure_ascii=False) if args.json else change_line(change))
        if not found["results"]:
            print(f"no model changes for user {args.user_id}", file=sys.stderr)
        return 0
