"""Ingestion against the embedder's own batch throughput, in the same run, on the same cores.

The embedder alone: memhub's default MiniLM embedding the same synthetic turns in claims of the
worker's batch size, once with all cores in one session and once with one single-threaded
stream per core; the better is the bar. Then ``--turns`` turns are queued (worker off) and one
``memhub worker`` at its defaults drains them: turns/s from its first stored memory (model
loaded) to the last, and its peak RSS. ``python -m bench.ingest [--turns 20000]``.
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
from bench.hotpath import PeakRSS

log = logging.getLogger("bench.ingest")
REPO = Path(__file__).resolve().parents[1]


def _texts(n: int) -> list[str]:
    return [t.text for t in synth.memories(0, n, users=1, seed=23, prefix="emb")]


def embedder_alone(texts: list[str], batch: int) -> dict[str, Any]:
    """texts/s of the default embedder: all cores in one session, and one stream per core."""
    from memhub.embed.onnx_minilm import MiniLMEmbedder

    cores = os.cpu_count() or 1
    chunks = [texts[i : i + batch] for i in range(0, len(texts), batch)]
    result: dict[str, Any] = {"batch": batch, "texts": len(texts), "cores": cores}
    for threads in sorted({1, cores}):
        embedder = MiniLMEmbedder(threads=threads)
        embedder.embed_sync(texts[:batch])  # load the model and warm up
        began = time.perf_counter()
        for chunk in chunks:
            embedder.embed_sync(chunk)
        result[f"one_session_{threads}_threads"] = len(texts) / (time.perf_counter() - began)
    if cores > 1:
        streams = [MiniLMEmbedder(threads=1) for _ in range(cores)]
        for embedder in streams:
            embedder.embed_sync(texts[:batch])
        began = time.perf_counter()
        with ThreadPoolExecutor(cores) as pool:
            list(pool.map(lambda c: streams[c[0] % cores].embed_sync(c[1]), enumerate(chunks)))
        result[f"{cores}_streams_1_thread"] = len(texts) / (time.perf_counter() - began)
    result["best_texts_per_s"] = max(
        v for k, v in result.items() if k.endswith(("threads", "thread"))
    )
    return result


def _queue(url: str, turns: int) -> None:
    from memhub import MemhubSettings, Memory

    memory = Memory(settings=MemhubSettings(database_url=url, worker="off"))
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
            started = time.perf_counter()
            while count < turns:
                if worker.poll() is not None:
                    raise RuntimeError(f"memhub worker exited with {worker.returncode}")
                row = conn.execute("SELECT count(*) FROM memories").fetchone()
                count = int(row[0]) if row else 0
                if count and not first_at:
                    first_at, first_count = time.perf_counter(), count
                time.sleep(0.02)
            ended = time.perf_counter()
    finally:
        worker.terminate()
        worker.wait(30)
    return {
        "turns": turns,
        "startup_seconds": first_at - started,
        "seconds": ended - first_at,
        "turns_per_s": (turns - first_count) / (ended - first_at),
        "worker_peak_rss_mb": rss.peak_bytes / 2**20,
        "env": env or {},
    }


def run_ingest(url: str, turns: int, batch: int = 64) -> dict[str, Any]:
    """The ``ingest`` workload of ``make bench``: embedder alone, then the worker, on ``url``."""
    embedder = embedder_alone(_texts(min(turns, 8_192)), batch)
    worker = worker_drain(url, turns)
    return {
        "embedder": embedder,
        "worker": worker,
        "ratio": worker["turns_per_s"] / embedder["best_texts_per_s"],
    }


def main(argv: list[str] | None = None) -> int:
    """Embedder alone, then the worker, on one fresh embedded PostgreSQL; prints JSON."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    parser = argparse.ArgumentParser(prog="python -m bench.ingest", description=__doc__)
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=64, help="the worker's claim size")
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
    from memhub.store.embedded import embedded_database_url, stop_embedded_server

    home = Path(tempfile.mkdtemp(prefix="memhub-ingest-"))
    home.chmod(0o755)
    try:
        url = embedded_database_url(home, "ingest")
        result: dict[str, Any] = {"machine": machine.describe(url)}
        if not args.skip_embedder:
            result["embedder"] = embedder_alone(_texts(min(args.turns, 8_192)), args.batch)
            log.info("embedder alone: %s", json.dumps(result["embedder"]))
        result["worker"] = worker_drain(url, args.turns)
        log.info("worker: %s", json.dumps(result["worker"]))
        if "embedder" in result:
            best = result["embedder"]["best_texts_per_s"]
            result["ratio"] = result["worker"]["turns_per_s"] / best
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
