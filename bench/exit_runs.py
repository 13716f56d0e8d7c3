"""Scripts that never call ``close()``, as Mem0's quickstart is written, run as real processes.

Each run adds turns through the sync ``Memory`` (or ``AsyncMemory`` under ``asyncio.run``),
reads them back, and exits without closing. After it exits the database is checked: no job is
left leased (by the dead process or anyone), and the turns it added are embedded or still
queued (handed back), never lost. ``tests/memory/test_exit_without_close.py`` runs a few;
this module runs many, quiet and with both cores kept busy:

    python -m bench.exit_runs [--runs 20] [--adds 30]

The scripts use the embedded server of a temporary data directory: each run starts it and
must leave it stopped (its last user gone).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import psycopg

SYNC_SCRIPT = """
import sys
from memhub import Memory

memory = Memory()
user = sys.argv[1]
messages = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "I'm planning to watch a movie tonight. Any ideas?"},
    {"role": "assistant", "content": "How about a thriller?"},
    {"role": "user", "content": "I'm not a big fan of thrillers, but I love sci-fi movies."},
]
added = memory.add(messages, user_id=user, metadata={"category": "movies"})
print(memory.get(added["results"][0]["id"])["memory"])
print(len(memory.search("what kind of movies do I like?", user_id=user)["results"]))
for n in range(int(sys.argv[2])):  # left queued at the exit, for it to finish
    memory.add(f"note {n}: I walked my dog Rex in the park", user_id=user)
"""

ASYNC_SCRIPT = """
import asyncio
import sys
from memhub import AsyncMemory

async def main():
    memory = AsyncMemory()
    user = sys.argv[1]
    added = await memory.add("I'm a vegetarian and allergic to nuts.", user_id=user)
    print((await memory.get(added["results"][0]["id"]))["memory"])
    print(len((await memory.search("what can't I eat?", user_id=user))["results"]))
    for n in range(int(sys.argv[2])):  # left queued at the exit, for it to finish
        await memory.add(f"note {n}: I walked my dog Rex in the park", user_id=user)

asyncio.run(main())
"""


@dataclass(frozen=True)
class Outcome:
    """One run: its exit code, output and wall time."""

    script: str
    user: str
    returncode: int
    stderr: str
    stdout: str
    seconds: float

    @property
    def traceback(self) -> bool:
        return "Traceback" in self.stderr


@dataclass(frozen=True)
class Stored:
    """One user's rows after the run: turns, memories (embedded ones), jobs (leased ones)."""

    turns: int
    memories: int
    embedded: int
    queued_jobs: int
    leased_jobs: int


def run_script(kind: str, env: dict[str, str], user: str, adds: int) -> Outcome:
    """Run the ``kind`` ("sync" or "async") script as a process with ``env`` added."""
    script = SYNC_SCRIPT if kind == "sync" else ASYNC_SCRIPT
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", script, user, str(adds)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    return Outcome(
        kind, user, done.returncode, done.stderr, done.stdout, time.perf_counter() - start
    )


def inspect(url: str, user: str) -> Stored:
    """What the database holds of ``user`` (after the process that added it exited)."""
    return Stored(*_counts(url, user))


def _counts(url: str, user: str) -> tuple[int, int, int, int, int]:
    with psycopg.connect(url, autocommit=True) as conn:
        turns = conn.execute(
            "SELECT count(*) FROM conversation_context WHERE user_id = %s", (user,)
        ).fetchone()
        memories = conn.execute(
            "SELECT count(*), count(embedding) FROM memories WHERE user_id = %s", (user,)
        ).fetchone()
        jobs = conn.execute(
            "SELECT count(*), count(lease_owner) FROM memory_jobs WHERE user_id = %s", (user,)
        ).fetchone()
    assert turns is not None and memories is not None and jobs is not None
    return int(turns[0]), int(memories[0]), int(memories[1]), int(jobs[0]), int(jobs[1])


def _burn(stop_at: float) -> None:
    while time.monotonic() < stop_at:
        pass


def _series(home: Path, runs: int, adds: int, label: str) -> dict[str, object]:
    from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server

    env = {"MEMHUB_DATA_DIR": str(home)}  # each script starts (and stops) the server itself
    outcomes, left_running = [], 0
    for n in range(runs):
        for kind in ("sync", "async"):
            outcomes.append(run_script(kind, env, f"{label}-{kind}-{n}", adds))
            left_running += (home / "pg" / "postmaster.pid").exists()
    url = embedded_database_url(home, "memhub")
    try:
        stored = [inspect(url, o.user) for o in outcomes]
    finally:
        stop_embedded_server(home)
    bad = [asdict(o) for o in outcomes if o.returncode or o.stderr.strip()]
    return {
        "runs": len(outcomes),
        "tracebacks": sum(o.traceback for o in outcomes),
        "nonempty_stderr": sum(bool(o.stderr.strip()) for o in outcomes),
        "server_left_running": left_running,
        "leased_after_exit": sum(s.leased_jobs for s in stored),
        "queued_after_exit": sum(s.queued_jobs for s in stored),
        "memories": sum(s.memories for s in stored),
        "unembedded": sum(s.memories - s.embedded for s in stored),
        "seconds_p50_max": [
            round(sorted(o.seconds for o in outcomes)[len(outcomes) // 2], 2),
            round(max(o.seconds for o in outcomes), 2),
        ],
        "failures": bad[:3],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs of each script per series")
    parser.add_argument("--adds", type=int, default=30)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="memhub-exit-"))
    try:
        report: dict[str, object] = {"load_average_before": os.getloadavg()}
        report["quiet"] = _series(home, args.runs, args.adds, "quiet")
        print(json.dumps({"quiet": report["quiet"]}, default=str), file=sys.stderr, flush=True)
        stop_at = time.monotonic() + 3600
        burners = [
            multiprocessing.Process(target=_burn, args=(stop_at,), daemon=True)
            for _ in range(os.cpu_count() or 2)
        ]
        for burner in burners:
            burner.start()
        try:
            report["loaded"] = _series(home, args.runs, args.adds, "loaded")
        finally:
            for burner in burners:
                burner.terminate()
        report["load_average_after"] = os.getloadavg()
        print(json.dumps(report, indent=1, default=str))
    finally:
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
