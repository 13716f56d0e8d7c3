"""A process's first searches after ``AsyncMemory.open()``, as a server's first requests meet them.

``open()`` loads an in-process embedding model and runs it once (issue 36), so the first
search should cost what the second does. On a fresh data directory (empty, so the time is the
query's embedding and the statements), with the settings' embedder (the default unless
``MEMHUB_EMBEDDER`` says otherwise); the model must be built already (``memhub serve`` once)::

    .venv/bin/python -m bench.first_search
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.machine import describe
from memhub import AsyncMemory, MemhubSettings


async def first_searches(searches: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memhub-first-search-") as home:
        # the embedded database in a fresh directory, whatever MEMHUB_DATABASE_URL says
        settings = MemhubSettings.from_env().model_copy(
            update={"data_dir": Path(home), "database_url": None}
        )
        memory = AsyncMemory(settings=settings)
        try:
            began = time.perf_counter()
            await memory.open()
            opened = time.perf_counter() - began
            times = []
            for _ in range(searches):
                began = time.perf_counter()
                await memory.search("where does the user work?", user_id="u", limit=10)
                times.append(round(1000 * (time.perf_counter() - began), 1))
        finally:
            await memory.aclose()
    return {
        "machine": describe(),
        "embedder": settings.embedder,
        "open_seconds": round(opened, 2),
        "search_ms": times,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--searches", type=int, default=3)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(first_searches(args.searches)), indent=2))


if __name__ == "__main__":
    main()
