"""Embedding models side by side: texts/s, one query's latency and peak memory, per model.

``python -m bench.embedders MODEL [MODEL ...]`` runs each model in a process of its own (so
peak RSS is that model's) through memhub's public :func:`memhub.embed.factory.create_embedder`
with ``threads=1``: the first ``--texts`` LoCoMo dev turns embedded in batches of
``--batch``, then one short query ``--queries`` times. It prints one row per model and the
CPU's vector extensions, which decide int8 speed (AVX-512 VNNI runs int8 MatMuls several
times faster than AVX2).

MODEL is ``default`` (all-mpnet-base-v2 int8), ``minilm`` (all-MiniLM-L6-v2), or anything
``MEMHUB_EMBEDDER_MODEL`` accepts: ``all-mpnet-base-v2`` (fp32), a model directory.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time

from bench.locomo import load_locomo
from bench.machine import describe, summary
from bench.metrics import percentile

QUERY = "When did Caroline go to the LGBTQ support group?"


async def _measure(model: str, n_texts: int, batch: int, queries: int) -> dict[str, object]:
    from memhub.embed.factory import create_embedder

    provider = model if model in ("default", "minilm") else "local"
    config: dict[str, object] = {"threads": 1, "batch_size": batch}
    if provider == "local":
        config["model"] = model
    embedder = create_embedder(provider, **config)
    texts = [t.text for c in load_locomo() for t in c.turns][:n_texts]
    await embedder.embed(texts[:2])  # load (and, for a packaged model, assemble) first
    started, cpu_started = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), batch):
        await embedder.embed(texts[i : i + batch])
    elapsed = time.perf_counter() - started
    cpu = time.process_time() - cpu_started
    latencies = []
    for _ in range(queries):
        t0 = time.perf_counter()
        await embedder.embed([QUERY])
        latencies.append((time.perf_counter() - t0) * 1000)
    await embedder.aclose()
    return {
        "model": model,
        "dimension": embedder.dimension,
        "texts_per_s": round(len(texts) / elapsed, 1),
        # CPU time is what a shared machine's load distorts least (threads=1: one core).
        "texts_per_cpu_s": round(len(texts) / cpu, 1),
        "query_p50_ms": round(percentile(latencies, 50), 1),
        "query_p95_ms": round(percentile(latencies, 95), 1),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--texts", type=int, default=640)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        row = asyncio.run(_measure(args.models[0], args.texts, args.batch, args.queries))
        print(json.dumps(row))
        return
    print(f"# {summary(describe())}")
    print(
        "| model | dims | batch | texts/s (1 thread) | texts per CPU-second "
        "| one query p50 / p95 ms | peak RSS MB |"
    )
    print("|---|---|---|---|---|---|---|")
    for model in args.models:
        command = [sys.executable, "-m", "bench.embedders", model, "--one"]
        command += ["--texts", str(args.texts), "--batch", str(args.batch)]
        command += ["--queries", str(args.queries)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"| {row['model']} | {row['dimension']} | {args.batch} | {row['texts_per_s']} | "
            f"{row['texts_per_cpu_s']} | {row['query_p50_ms']} / {row['query_p95_ms']} "
            f"| {row['peak_rss_mb']} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
