"""What the benchmark ran on: CPU model and vector extensions, cores, RAM, load, versions.

Every result file carries this (issue 12: the embedder dominates, and machines differ).
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import Any

#: The /proc/cpuinfo flags that change how fast the embedder and pgvector's distances run.
VECTOR_FLAGS = ("avx", "avx2", "fma", "avx_vnni", "amx")


def _cpuinfo() -> tuple[str, list[str]]:
    model, flags = platform.processor() or platform.machine(), []
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return model, flags
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "model name" and model in ("", platform.machine(), platform.processor()):
            model = value.strip()
        if key.strip() == "flags":
            flags = value.split()
            break
    wanted = [f for f in flags if f.startswith(("avx512", "amx")) or f in VECTOR_FLAGS]
    return model, sorted(set(wanted))


def _ram_gb() -> float:
    try:
        for line in Path("/proc/meminfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return 0.0


def postgres_versions(db_url: str | None) -> dict[str, str]:
    """PostgreSQL's and pgvector's versions on ``db_url`` (empty without one)."""
    if db_url is None:
        return {}
    import psycopg

    with psycopg.connect(db_url) as conn:
        server = conn.execute("SHOW server_version").fetchone()
        vector = conn.execute(
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
        ).fetchone()
    return {
        "postgresql": str(server[0]) if server else "?",
        "pgvector": str(vector[0]) if vector else "not installed",
    }


def describe(db_url: str | None = None) -> dict[str, Any]:
    """The machine and its load now; PostgreSQL and pgvector versions if ``db_url`` is given."""
    model, flags = _cpuinfo()
    return {
        "cpu_model": model,
        "vector_extensions": flags,
        "cpus": os.cpu_count(),
        "ram_gb": round(_ram_gb(), 1),
        "load_before": os.getloadavg(),
        "platform": platform.platform(),
        **postgres_versions(db_url),
    }


def summary(described: dict[str, Any]) -> str:
    """One line for the report: model, extensions, cores, RAM, load, versions."""
    load = described.get("load_before") or (0, 0, 0)
    after = described.get("load_after")
    loads = f"load average {load[0]:.2f} before" + (f", {after[0]:.2f} after" if after else "")
    flags = " ".join(described.get("vector_extensions", [])) or "none found"
    versions = ", ".join(
        f"{name} {described[key]}"
        for name, key in (("PostgreSQL", "postgresql"), ("pgvector", "pgvector"))
        if key in described
    )
    return (
        f"{described.get('cpu_model', '?')} ({flags}); {described.get('cpus')} cores,"
        f" {described.get('ram_gb')} GB RAM; {loads}" + (f"; {versions}" if versions else "")
    )
