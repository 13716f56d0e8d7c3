"""Acknowledged add latency: alone, and with 8 clients while a worker ingests or is paused.

``alone``: sequential ``AsyncMemory.add`` and ``Memory.add`` (the sync API) on a fresh embedded
database with no worker, so nothing else competes for the cores. ``clients``: one
``memhub worker`` process beside the client (as the hot path runs it), ``--fill`` memories first,
then rounds of 8 threads adding through ``Memory.add``, alternately with the worker paused
(SIGSTOP) and running; ``--worker-nice`` lowers the worker's priority for the running rounds.
With every client always waiting on a call, latency is clients / throughput (Little's law), so
each round reports its adds/s too.

    python -m bench.add [--adds 3000] [--fill 3000] [--rounds 4] [--worker-nice 0]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import synth
from bench.hotpath import HotpathSpec, _adder, _fill, _timed_calls
from bench.metrics import latency_summary
from bench.systems import MemhubSystem
from memhub import AsyncMemory, MemhubSettings, Memory
from memhub.store.postgres.embedded import embedded_database_url

CLIENTS = 8


async def _async_adds(settings: MemhubSettings, n: int) -> list[float]:
    latencies = []
    async with AsyncMemory(settings=settings) as memory:
        await memory.add("warm up", user_id="alone", infer=False)
        for i in range(n):
            start = time.perf_counter()
            await memory.add(f"async turn {i} about tea", user_id="alone", infer=False)
            latencies.append(time.perf_counter() - start)
    return latencies


def _sync_adds(settings: MemhubSettings, n: int) -> list[float]:
    memory = Memory(settings=settings)
    try:
        memory.add("warm up", user_id="alone", infer=False)
        latencies = []
        for i in range(n):
            start = time.perf_counter()
            memory.add(f"sync turn {i} about tea", user_id="alone", infer=False)
            latencies.append(time.perf_counter() - start)
        return latencies
    finally:
        memory.close()


def alone(adds: int) -> dict[str, Any]:
    """Sequential adds with no worker: the add path's own cost."""
    settings = MemhubSettings(data_dir=Path(tempfile.mkdtemp(prefix="bench-add-")), worker="off")
    return {
        "AsyncMemory.add": latency_summary(asyncio.run(_async_adds(settings, adds))),
        "Memory.add": latency_summary(_sync_adds(settings, adds)),
    }


def _renice(pid: int, niceness: int) -> None:
    # Linux niceness is per thread: every thread of the worker, embedding threads included.
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.setpriority(os.PRIO_PROCESS, int(tid), niceness)


def clients(fill: int, rounds: int, adds: int, niceness: int) -> list[dict[str, Any]]:
    """8 clients adding, alternately with the worker paused and running."""
    url = embedded_database_url(Path(tempfile.mkdtemp(prefix="bench-add-")))
    system = MemhubSystem(url, external_worker=True)
    worker = system.worker_process_ids()[0]
    try:
        _fill(system, 0, fill, HotpathSpec(checkpoints=(fill,), users=1))
        _renice(worker, niceness)
        results, index = [], fill
        for _ in range(rounds):
            for paused in (True, False):
                turns = list(synth.memories(index, index + adds, users=1))
                index += adds
                if paused:
                    os.kill(worker, signal.SIGSTOP)
                began = time.perf_counter()
                latencies = _timed_calls(turns, _adder(system), CLIENTS)
                seconds = time.perf_counter() - began
                if paused:
                    os.kill(worker, signal.SIGCONT)
                system.flush()
                results.append(
                    {
                        "worker": "paused" if paused else f"running, nice {niceness}",
                        "adds_per_s": adds / seconds,
                        **latency_summary(latencies),
                    }
                )
        return results
    finally:
        system.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.add", description=__doc__)
    parser.add_argument("--adds", type=int, default=3000, help="sequential adds alone")
    parser.add_argument("--fill", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--round-adds", type=int, default=800)
    parser.add_argument("--worker-nice", type=int, default=0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    result = {
        "alone": alone(args.adds),
        "clients": clients(args.fill, args.rounds, args.round_adds, args.worker_nice),
    }
    text = json.dumps(result, indent=1)
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
