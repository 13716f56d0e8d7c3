"""How soon the id ``add()`` returns is readable: acknowledgement and add-to-``get`` latency.

    .venv/bin/python -m bench.add_to_readable [N]

Embedded PostgreSQL in a scratch directory, the default embedder, the in-process worker;
one ``add(infer=False)`` at a time, then ``get(id)`` polled every millisecond.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path


def main(count: int = 200) -> None:
    from memhub import MemhubSettings, Memory

    memory = Memory(settings=MemhubSettings(data_dir=Path(tempfile.mkdtemp(prefix="bench-"))))
    memory.add("warm up", user_id="warm", infer=False, wait=True)
    acks: list[float] = []
    readable: list[float] = []
    for n in range(count):
        start = time.perf_counter()
        added = memory.add(f"note number {n} about the garden", user_id="u", infer=False)
        acked = time.perf_counter()
        while memory.get(added["results"][0]["id"]) is None:
            time.sleep(0.001)
        acks.append((acked - start) * 1000)
        readable.append((time.perf_counter() - start) * 1000)
    memory.close()

    def pct(values: list[float], p: int) -> float:
        return statistics.quantiles(values, n=100)[p - 1]

    print(
        f"{count} adds: ack p50 {pct(acks, 50):.2f} ms, p95 {pct(acks, 95):.2f} ms; "
        f"id readable p50 {pct(readable, 50):.1f} ms, p95 {pct(readable, 95):.1f} ms"
    )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
