"""``memhub import`` and ``memhub search`` as a user runs them: wall-clock seconds per command.

Import: N turns of one user from a JSONL file, ``--no-wait`` (the command returns once every
batch is committed, and then each line is keyword-searchable; the worker embeds afterwards),
timed from process start to exit, then checked with a keyword search. Search: the CLI against
a running ``memhub serve`` (HTTP), and once in-process (model load) for comparison.

    python -m bench.cli_import [--sizes 2000,100000] [--searches 10]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ADMIN_KEY = "bench-cli-admin-key-0123456789"


def _env(**variables: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MEMHUB_", "MEM0_"))}
    return {**clean, "MEMHUB_ADMIN_KEY": ADMIN_KEY, **variables}


def _memhub(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "memhub.cli", *args], env=env, capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"memhub {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return elapsed, done.stdout + done.stderr


def _import(db_url: str, n: int, workdir: Path) -> dict[str, Any]:
    path = workdir / f"turns-{n}.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i in range(n):
            text = f"On day {i} the user mentioned topic t{i} and a few ordinary words about it"
            out.write(json.dumps({"user_id": "bench", "text": text}) + "\n")
    env = _env(MEMHUB_DATA_DIR=str(workdir / "data"))
    seconds, _ = _memhub(
        ["--database-url", db_url, "import", str(path), "--no-wait", "--no-infer"], env
    )
    _, found = _memhub(
        ["--database-url", db_url, "search", f"t{n - 1}", "--user-id", "bench", "--limit", "1"],
        env,
    )
    return {
        "turns": n,
        "seconds": round(seconds, 2),
        "turns_per_second": round(n / seconds),
        "last_turn_found_by_keyword": f"topic t{n - 1} " in found,
    }


def _search(db_url: str, workdir: Path, repeats: int) -> dict[str, Any]:
    import httpx

    port = 18700 + os.getpid() % 1000
    env = _env(MEMHUB_DATABASE_URL=db_url, MEMHUB_DATA_DIR=str(workdir / "serve"))
    log = (workdir / "serve.log").open("wb")
    server = subprocess.Popen(
        [sys.executable, "-m", "memhub.cli", "serve", "--port", str(port)],
        env=env,
        stdout=log,
        stderr=log,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        client = _env(MEMHUB_SERVER_URL=url, MEMHUB_API_KEY=ADMIN_KEY)
        args = ["search", "what topic came up on day 7", "--user-id", "bench", "--limit", "5"]
        _memhub(args, client)  # the server's first search loads its model
        over_http = [_memhub(args, client)[0] for _ in range(repeats)]
        # The two parts of a command's time: the interpreter with the CLI's imports, and
        # the server's answer to the same request.
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import memhub.cli.search"], check=True)
        start_only = time.perf_counter() - started
        body = {"query": args[1], "user_id": "bench", "limit": 5}
        headers = {"Authorization": f"Bearer {ADMIN_KEY}"}
        answers = []
        for _ in range(repeats):
            started = time.perf_counter()
            httpx.post(f"{url}/v1/memories/search", json=body, headers=headers, timeout=30)
            answers.append(time.perf_counter() - started)
        in_process, _ = _memhub(["--database-url", db_url, *args], _env())
    finally:
        server.terminate()
        server.wait(60)
        log.close()
    return {
        "http_p50_seconds": round(statistics.median(over_http), 3),
        "http_max_seconds": round(max(over_http), 3),
        "cli_start_seconds": round(start_only, 3),
        "server_answer_p50_seconds": round(statistics.median(answers), 3),
        "in_process_seconds": round(in_process, 2),
        "searches": repeats,
    }


def measure(sizes: tuple[int, ...] = (2_000, 100_000), searches: int = 10) -> dict[str, Any]:
    """Import each size into a fresh database, then time the search command; JSON-ready."""
    from bench.pg import BenchPostgres

    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        workdir = Path(tmp)
        postgres = BenchPostgres(workdir / "pg")
        try:
            urls = {n: postgres.create_database(f"cli_import_{n}") for n in sizes}
            imports = [_import(urls[n], n, workdir) for n in sizes]
            search = _search(urls[sizes[0]], workdir, searches)
        finally:
            postgres.close()
    return {"import": imports, "search": search}


def main(argv: list[str] | None = None) -> int:
    """Print the measurements as JSON."""
    parser = argparse.ArgumentParser(prog="python -m bench.cli_import", description=__doc__)
    parser.add_argument("--sizes", default="2000,100000")
    parser.add_argument("--searches", type=int, default=10)
    args = parser.parse_args(argv)
    sizes = tuple(int(n) for n in args.sizes.split(","))
    print(json.dumps(measure(sizes, args.searches), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
