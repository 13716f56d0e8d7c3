"""``memhub export``: a user's memories as JSONL of Mem0-shaped items, paged by keyset."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import TextIO

from memhub.config import MemhubSettings
from memhub.memory import AsyncMemory

__all__ = ["export_jsonl", "run_export"]


async def export_jsonl(
    settings: MemhubSettings,
    user_id: str,
    out: TextIO,
    *,
    include_superseded: bool = False,
    page_size: int = 1000,
) -> int:
    """Write the user's memories to ``out`` as JSONL of Mem0-shaped items, newest first.

    ``memhub import`` reads the file back (text, metadata and ``created_at`` kept; superseded
    items are skipped there). Returns how many memories were written.
    """
    written = 0
    async with AsyncMemory(settings=settings.model_copy(update={"worker": "off"})) as memory:
        cursor = ""  # keyset paging, in get_all's order
        while cursor is not None:
            found = await memory.get_all(
                user_id=user_id,
                limit=page_size,
                include_superseded=include_superseded,
                cursor=cursor,
            )
            for item in found["results"]:
                out.write(json.dumps(item, ensure_ascii=False) + "\n")
            written += len(found["results"])
            cursor = found["next_cursor"]
    return written


def run_export(args: argparse.Namespace, settings: MemhubSettings) -> int:
    """``memhub export``: to stdout, or to a file written beside the target and renamed."""

    def export(out: TextIO) -> int:
        return asyncio.run(
            export_jsonl(settings, args.user_id, out, include_superseded=args.include_superseded)
        )

    if args.output == "-":
        count = export(sys.stdout)
    else:
        # Renamed at the end, so a failed export leaves no partial file.
        target = Path(args.output)
        partial = target.with_name(target.name + ".partial")
        try:
            with open(partial, "w", encoding="utf-8") as out:
                count = export(out)
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, target)
    print(f"exported {count} memories of {args.user_id}", file=sys.stderr)
    return 0
