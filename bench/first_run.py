"""A fresh clone's first ``make run``, timed until the server answers ``/healthz`` 200.

Issue 36's first-use target ("first ``make run`` on a fresh clone within 2 minutes on a quiet
machine, with progress on screen throughout"). The checkout is cloned into a temporary
directory and run with empty data, model and pip caches (``XDG_DATA_HOME``,
``XDG_CACHE_HOME``, ``PIP_NO_CACHE_DIR``), so the venv, the packages, the embedded
PostgreSQL and the embedding model are all made anew, as on a new machine; packages come from
whatever indexes pip is configured with, so the network's speed is part of the figure. Every
output line is kept with its time, and so is the longest silence between two lines::

    .venv/bin/python -m bench.first_run --out first_run.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from bench.machine import describe

REPO = Path(__file__).resolve().parents[1]
# Lines that mark the steps of a first start, in the order they come.
MILESTONES = {
    "venv": "memhub: creating .venv",
    "install": "memhub: installing memhub",
    "serve": "memhub serve",
    "model build": "memhub.embed.model_cache: building",
    "model built": "memhub.embed.model_cache: built",
    "ready": "memhub is ready",
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code
    except OSError:
        return None


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


def first_run(repo: Path, timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="memhub-first-run-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "--quiet", str(repo), str(clone)], check=True)
        port = _free_port()
        env = os.environ | {
            "XDG_DATA_HOME": f"{tmp}/data",
            "XDG_CACHE_HOME": f"{tmp}/cache",
            "PIP_NO_CACHE_DIR": "1",
            "MEMHUB_PORT": str(port),
        }
        env.pop("MEMHUB_MODEL_CACHE", None)
        env.pop("VIRTUAL_ENV", None)
        lines: list[tuple[float, str]] = []
        started = time.monotonic()
        make = subprocess.Popen(
            ["make", "run"], cwd=clone, env=env, text=True, start_new_session=True,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )  # fmt: skip
        assert make.stdout is not None
        output = make.stdout

        def read() -> None:
            for line in output:
                lines.append((time.monotonic() - started, line.rstrip()))

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        first_answer = healthy = None
        try:
            while healthy is None and time.monotonic() - started < timeout:
                code = _status(f"http://127.0.0.1:{port}/healthz")
                now = time.monotonic() - started
                if code is not None and first_answer is None:
                    first_answer = now
                if code == 200:
                    healthy = now
                time.sleep(0.5)
        finally:
            os.killpg(make.pid, signal.SIGTERM)
            make.wait(timeout=60)
            reader.join(timeout=10)
        steps = {
            step: next((round(t, 1) for t, line in lines if mark in line), None)
            for step, mark in MILESTONES.items()
        }
        times = [0.0, *(t for t, _ in lines)]
        silence = max(b - a for a, b in itertools.pairwise(times)) if lines else None
        return {
            "machine": describe(),
            "seconds_to_first_healthz_answer": _rounded(first_answer),
            "seconds_to_healthz_200": _rounded(healthy),
            "steps": steps,
            "longest_silence_seconds": _rounded(silence),
            "output_lines": len(lines),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the checkout to clone")
    parser.add_argument("--timeout", type=float, default=600.0, help="give up after (s)")
    parser.add_argument("--out", type=Path, help="write the result as JSON here too")
    args = parser.parse_args()
    result = first_run(args.repo, args.timeout)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
