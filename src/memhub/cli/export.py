"""``memhub export``: a user's memories as JSONL of Mem0-shaped items, paged by keyset."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

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
        filters: dict[str, Any] | None = None
        while True:
            found = await memory.get_all(
                user_id=user_id,
                filters=filters,
                limit=page_size,
                include_superseded=include_superseded,
            )
            page = found["results"]
            for item in page:
                out.write(json.dumps(item, ensure_ascii=False) + "\n")
            written += len(page)
            if len(page) < page_size:
                return written
            # Keyset pagination in get_all's order (created_at DESC, id ASC).
            at = datetime.fromisoformat(page[-1]["created_at"])
            last = uuid.UUID(page[-1]["id"])
            filters = {"OR": [{"created_at": {"lt": at}}, {"created_at": at, "id": {"gt": last}}]}


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
