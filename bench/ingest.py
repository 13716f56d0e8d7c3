"""Ingestion against the embedder's own batch throughput, in the same run, on the same cores.

The embedder alone: the embedder the settings choose (``MEMHUB_EMBEDDER``, as for the worker)
embedding the same synthetic turns in claims of the worker's batch size, once with all cores
in one session and once with one single-threaded stream per core; the better is the bar,
measured again after the drain (a shared machine's speed drifts) and averaged. Then
``--turns`` turns are queued (worker off) and one ``memhub worker`` at its defaults drains
them: turns/s from its first stored memory (model loaded) to the last, its peak RSS, and
where the cores went meanwhile (worker threads, PostgreSQL, the rest of the machine).
``python -m bench.ingest [--turns 20000]``.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg

from bench import machine, synth
from bench.cpu_split import CpuSplit, postmaster_of
from bench.hotpath import PeakRSS

log = logging.getLogger("bench.ingest")
REPO = Path(__file__).resolve().parents[1]


def claim_size() -> int:
    """How many turns a ``memhub worker`` at its defaults claims (and embeds) at once."""
    from memhub.config import MemhubSettings

    return MemhubSettings().worker_batch_size  # the worker reads the same environment


def _texts(n: int) -> list[str]:
    return [t.text for t in synth.memories(0, n, users=1, seed=23, prefix="emb")]


def _rate(texts: list[str], batch: int, threads: int, streams: int) -> float:
    """texts/s of ``streams`` concurrent sessions of ``threads`` threads each, in claims."""
    from memhub import MemhubSettings
    from memhub.memory.services import embedder_from_settings

    # The model the worker below runs (MEMHUB_EMBEDDER chooses it), with its threads set here.
    settings = MemhubSettings.from_env().model_copy(update={"embedder_threads": threads})
    chunks = [texts[i : i + batch] for i in range(0, len(texts), batch)]
    sessions: list[Any] = [embedder_from_settings(settings) for _ in range(streams)]
    for embedder in sessions:
        embedder.embed_sync(texts[:batch])  # load the model and warm up
    began = time.perf_counter()
    with ThreadPoolExecutor(streams) as pool:
        list(pool.map(lambda c: sessions[c[0] % streams].embed_sync(c[1]), enumerate(chunks)))
    return len(texts) / (time.perf_counter() - began)


def _configs(cores: int) -> dict[str, tuple[int, int]]:
    """Name -> (threads per session, concurrent sessions) of the embedder-alone runs."""
    configs = {f"one_session_{t}_threads": (t, 1) for t in sorted({1, cores})}
    if cores > 1:
        configs[f"{cores}_streams_1_thread"] = (1, cores)
    return configs


def embedder_alone(texts: list[str], batch: int, only: str | None = None) -> dict[str, Any]:
    """texts/s of the default embedder: all cores in one session, and one stream per core.

    ``only`` names the one configuration to measure (to measure the best again later).
    """
    cores = os.cpu_count() or 1
    result: dict[str, Any] = {"batch": batch, "texts": len(texts), "cores": cores}
    for name, (threads, streams) in _configs(cores).items():
        if only in (None, name):
            result[name] = _rate(texts, batch, threads, streams)
    best = max((k for k in result if k in _configs(cores)), key=lambda k: result[k])
    result["best"], result["best_texts_per_s"] = best, result[best]
    return result


def _bar(before: dict[str, Any], texts: list[str]) -> dict[str, Any]:
    """The embedder's best configuration measured again (after the drain), and the bar."""
    after = embedder_alone(texts, before["batch"], only=before["best"])
    return {"after": after, "bar": (before["best_texts_per_s"] + after["best_texts_per_s"]) / 2}


def _queue(url: str, turns: int) -> None:
    from memhub import MemhubSettings, Memory

    # from_env: MEMHUB_EMBEDDER chooses the model, as it does for the worker below.
    memory = Memory(settings=MemhubSettings.from_env(database_url=url, worker="off"))
    try:
        for turn in synth.memories(0, turns, users=100, prefix="ing"):
            memory.add(turn.text, user_id=turn.user_id, infer=False, timestamp=turn.timestamp)
    finally:
        memory.close()


def worker_drain(url: str, turns: int, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Queue ``turns``, then time one ``memhub worker`` (defaults) until all are memories."""
    _queue(url, turns)
    worker_env = {**os.environ, "MEMHUB_DATABASE_URL": url, **(env or {})}
    worker = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli", "worker"], env=worker_env, stdin=subprocess.DEVNULL
    )
    first_at, first_count, count = 0.0, 0, 0
    try:
        with PeakRSS(lambda: [worker.pid]) as rss, psycopg.connect(url, autocommit=True) as conn:
            cpu = CpuSplit(worker.pid, postmaster_of(conn.info.backend_pid))
            started = time.perf_counter()
            while count < turns:
                if worker.poll() is not None:
                    raise RuntimeError(f"memhub worker exited with {worker.returncode}")
                # add() writes each memory's row at once (issue 23); the worker fills its
                # vector, so a memory counts when it has one.
                row = conn.execute(
                    "SELECT count(*) FROM memories WHERE embedding IS NOT NULL"
                ).fetchone()
                count = int(row[0]) if row else 0
                if count and not first_at:
                    first_at, first_count = time.perf_counter(), count
                    cpu.start()
                # count(*) scans the table (10 ms at 20k rows): polled often, it would take
                # a good part of a core from the worker it measures.
                time.sleep(0.2)
            ended = time.perf_counter()
            split = cpu.stop()
    finally:
        worker.terminate()
        worker.wait(30)
    return {
        "turns": turns,
        "startup_seconds": first_at - started,
        "seconds": ended - first_at,
        "turns_per_s": (turns - first_count) / (ended - first_at),
        "worker_peak_rss_mb": rss.peak_bytes / 2**20,
        "cpu_percent_of_cores": split,
        "env": env or {},
    }


def run_ingest(url: str, turns: int, batch: int | None = None) -> dict[str, Any]:
    """The ``ingest`` workload of ``make bench``: embedder alone, the worker, embedder again."""
    texts = _texts(min(turns, 8_192))
    embedder = embedder_alone(texts, batch or claim_size())
    worker = worker_drain(url, turns)
    bar = _bar(embedder, texts)
    return {
        "embedder": embedder,
        "embedder_after": bar["after"],
        "worker": worker,
        "ratio": worker["turns_per_s"] / bar["bar"],
    }


def main(argv: list[str] | None = None) -> int:
    """Embedder alone, then the worker, on one fresh embedded PostgreSQL; prints JSON."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__)
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument(
        "--batch", type=int, default=claim_size(), help="the embedder's claims (the worker's)"
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        help="also drain with these settings, e.g. MEMHUB_WORKER_CONCURRENCY=2 (repeatable;"
        " KEY=VALUE pairs separated by commas)",
    )
    parser.add_argument("--skip-embedder", action="store_true")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results" / "ingest.json")
    args = parser.parse_args(argv)
    from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server

    home = Path(tempfile.mkdtemp(prefix="memhub-ingest-"))
    home.chmod(0o755)
    try:
        url = embedded_database_url(home, "ingest")
        result: dict[str, Any] = {"machine": machine.describe(url)}
        texts = _texts(min(args.turns, 8_192))
        if not args.skip_embedder:
            result["embedder"] = embedder_alone(texts, args.batch)
            log.info("embedder alone: %s", json.dumps(result["embedder"]))
        result["worker"] = worker_drain(url, args.turns)
        log.info("worker: %s", json.dumps(result["worker"]))
        if "embedder" in result:
            bar = _bar(result["embedder"], texts)
            result["embedder_after"] = bar["after"]
            result["ratio"] = result["worker"]["turns_per_s"] / bar["bar"]
            log.info("embedder again: %s", json.dumps(bar["after"]))
        result["variants"] = []
        for n, variant in enumerate(args.variant):
            env = dict(pair.split("=", 1) for pair in variant.split(",") if pair)
            drained = worker_drain(embedded_database_url(home, f"ingest_{n}"), args.turns, env)
            log.info("worker %s: %s", variant, json.dumps(drained))
            result["variants"].append(drained)
        result["machine"]["load_after"] = os.getloadavg()
    finally:
        stop_embedded_server(home)
        shutil.rmtree(home, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
