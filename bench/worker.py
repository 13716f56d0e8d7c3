"""One (system, workload) pair in its own process, so imports and peak RSS never mix across systems.

``bench.run`` starts it as ``python -m bench.worker '<json task>'`` and reads the JSON it writes.
"""

from __future__ import annotations

import json
import resource
import sys
import time
from pathlib import Path
from typing import Any

from bench.hotpath import HotpathSpec, run_hotpath
from bench.ingest import run_ingest
from bench.locomo import load_locomo
from bench.recall import run_recall
from bench.systems import open_system


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task: ``{"system", "workload": "recall"|"hotpath"|"ingest", "db_url", ...}``."""
    started = time.perf_counter()
    if task["workload"] == "ingest":  # no system to open: a `memhub worker` is the subject
        result = run_ingest(task["db_url"], task["turns"])
        opened = 0.0
    else:
        system = open_system(task["system"], db_url=task.get("db_url"))
        opened = time.perf_counter() - started
        try:
            if task["workload"] == "recall":
                from bench.tokens import count_tokens

                conversations = load_locomo(Path(task["locomo"]))
                limit = task.get("conversations")
                result = run_recall(system, conversations[:limit], count_tokens=count_tokens)
            else:
                result = run_hotpath(system, HotpathSpec(**task["spec"]))
        finally:
            system.close()
    return {
        **{k: v for k, v in task.items() if k != "db_url"},
        "result": result,
        "open_seconds": opened,
        "seconds": time.perf_counter() - started,
        "process_max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main(argv: list[str] | None = None) -> int:
    """Read the task from argv[1], write the result to the task's ``out`` path."""
    args = sys.argv[1:] if argv is None else argv
    task = json.loads(args[0])
    output = run_task(task)
    Path(task["out"]).write_text(json.dumps(output, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
