"""Hot-path workload: acknowledged add latency, ingestion throughput, search latency, peak RSS.

The store is filled up to each checkpoint size in turn by concurrent clients (that fill is the
ingestion-throughput measurement, timed until :meth:`MemorySystem.flush` returns); at each
checkpoint it probes add and search latency sequentially and with ``clients`` concurrent threads.
Probe adds stay in the store, so a checkpoint holds slightly more than its nominal size.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from bench import synth
from bench.metrics import latency_summary
from bench.systems import MemorySystem

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class HotpathSpec:
    """One layout (users) and the sizes at which to probe it."""

    checkpoints: tuple[int, ...]
    users: int
    probe_adds: int = 500
    probe_searches: int = 500
    clients: int = 8
    k: int = 10


class PeakRSS:
    """Samples the summed RSS of some processes in a background thread and keeps the peak."""

    def __init__(self, pids: Callable[[], Sequence[int]], interval: float = 0.1) -> None:
        self._pids = pids
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.peak_bytes = 0

    def _sample(self) -> int:
        import psutil

        total = 0
        for pid in self._pids():
            try:
                total += psutil.Process(pid).memory_info().rss
            except psutil.NoSuchProcess:
                continue
        return total

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.peak_bytes = max(self.peak_bytes, self._sample())

    def __enter__(self) -> PeakRSS:
        self.peak_bytes = self._sample()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak_bytes = max(self.peak_bytes, self._sample())


def _timed_calls(items: Iterable[T], call: Callable[[T], object], clients: int) -> list[float]:
    def one(item: T) -> float:
        start = time.perf_counter()
        call(item)
        return time.perf_counter() - start

    if clients <= 1:
        return [one(item) for item in items]
    with ThreadPoolExecutor(max_workers=clients) as pool:
        return list(pool.map(one, items))


def _adder(system: MemorySystem) -> Callable[[synth.SyntheticTurn], object]:
    def add(turn: synth.SyntheticTurn) -> None:
        metadata = {"turn": turn.index}
        system.add(turn.text, user_id=turn.user_id, metadata=metadata, timestamp=turn.timestamp)

    return add


def _searcher(system: MemorySystem, k: int) -> Callable[[tuple[str, str]], object]:
    return lambda pair: system.search(pair[1], user_id=pair[0], k=k)


def _fill(system: MemorySystem, start: int, stop: int, spec: HotpathSpec) -> dict[str, Any]:
    began = time.perf_counter()
    latencies = _timed_calls(
        synth.memories(start, stop, users=spec.users), _adder(system), spec.clients
    )
    acked = time.perf_counter() - began
    system.flush()
    seconds = time.perf_counter() - began
    return {
        "turns": stop - start,
        "ack_seconds": acked,
        "seconds": seconds,
        "turns_per_s": (stop - start) / seconds if seconds else 0.0,
        "add_latency": latency_summary(latencies),
    }


def _probe(system: MemorySystem, size: int, spec: HotpathSpec) -> tuple[dict[str, Any], int]:
    """Latency probes at the current size; returns the results and how many turns it added."""
    result: dict[str, Any] = {}
    next_index = size
    for mode, clients in (("sequential", 1), ("concurrent", spec.clients)):
        turns = list(synth.memories(next_index, next_index + spec.probe_adds, users=spec.users))
        next_index += len(turns)
        began = time.perf_counter()
        adds = _timed_calls(turns, _adder(system), clients)
        add_seconds = time.perf_counter() - began
        system.flush()
        pairs = synth.queries(spec.probe_searches, users=spec.users, seed=size + clients)
        searches = _timed_calls(pairs, _searcher(system, spec.k), clients)
        result[mode] = {
            "add_latency": latency_summary(adds),
            # With every client always waiting on a call, latency is clients / throughput
            # (Little's law): the rate says what the latency is made of.
            "adds_per_s": len(turns) / add_seconds if add_seconds else 0.0,
            "search_latency": latency_summary(searches),
        }
    pairs = list(synth.queries(spec.probe_searches, users=spec.users, seed=size))
    if system.embed_query(pairs[0][1]):
        result["query_embedding_latency"] = latency_summary(
            _embeddings_between_searches(system, pairs, spec.k)
        )
    return result, next_index - size


def _embeddings_between_searches(
    system: MemorySystem, pairs: list[tuple[str, str]], k: int
) -> list[float]:
    """Each query's embedding timed with a search (untimed) between two embeddings.

    Timed back to back, the embedding is faster than inside a search: 4.3 ms p50 against 6.6
    with 5 ms of idle between calls on the 2-core VM of docs/benchmarks.md (cores left idle
    wake up slow), so the engine overhead (search minus embedding) would be overstated.
    """
    latencies = []
    for user_id, query in pairs:
        start = time.perf_counter()
        system.embed_query(query)
        latencies.append(time.perf_counter() - start)
        system.search(query, user_id=user_id, k=k)
    return latencies


def run_hotpath(system: MemorySystem, spec: HotpathSpec) -> dict[str, Any]:
    """Fill to each checkpoint, probe there; peak RSS over the whole workload."""
    checkpoints: list[dict[str, Any]] = []
    stored = 0
    with PeakRSS(system.process_ids) as rss, PeakRSS(system.worker_process_ids) as worker_rss:
        for target in spec.checkpoints:
            fill = _fill(system, stored, target, spec) if target > stored else None
            stored = max(stored, target)
            probes, added = _probe(system, stored, spec)
            checkpoints.append({"memories": target, "fill": fill, **probes})
            stored += added
            checkpoints[-1]["peak_rss_mb"] = rss.peak_bytes / 2**20
            checkpoints[-1]["worker_peak_rss_mb"] = worker_rss.peak_bytes / 2**20
    return {
        "users": spec.users,
        "clients": spec.clients,
        "checkpoints": checkpoints,
        "peak_rss_mb": rss.peak_bytes / 2**20,
        # 0 when the system has no worker process of its own (ingestion in the client)
        "worker_peak_rss_mb": worker_rss.peak_bytes / 2**20,
    }
