"""Report sections for the machine, ingestion against the embedder, the 1M profile and its plots.

Called by :func:`bench.report.render`; each function returns markdown lines (empty when the
results hold nothing for it).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench.machine import summary


def _fmt(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return [*lines, *("| " + " | ".join(row) + " |" for row in rows), ""]


def machine_lines(results: dict[str, Any]) -> list[str]:
    """The machine line: CPU model, vector extensions, cores, RAM, load, PostgreSQL versions."""
    described = results.get("machine", {})
    if "cpu_model" not in described:
        return [f"Machine: {described.get('cpus', '?')} CPUs (no CPU model recorded).", ""]
    return [f"Machine: {summary(described)}.", ""]


def ingest_result(runs: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``ingest`` workload's result, if it ran without error."""
    found = [r for r in runs if r["workload"] == "ingest" and "error" not in r]
    return found[0]["result"] if found else None


def ingest_lines(runs: list[dict[str, Any]]) -> list[str]:
    """Embedder alone against one ``memhub worker`` at its defaults, same run, same cores."""
    result = ingest_result(runs)
    if result is None:
        return []
    embedder, worker = result["embedder"], result["worker"]
    after = result.get("embedder_after", {})
    rows = [
        [name.replace("_", " "), _fmt(value, 0), _fmt(after.get(name), 0)]
        for name, value in embedder.items()
        if name.endswith(("threads", "thread"))
    ]
    bar = (
        embedder["best_texts_per_s"] + after.get("best_texts_per_s", embedder["best_texts_per_s"])
    ) / 2
    lines = [
        "## Ingestion against the embedder",
        "",
        f"The default embedder alone, on {embedder['texts']:,} synthetic turns in batches of "
        f"{embedder['batch']} (the worker's claim size), then one `memhub worker` at its "
        f"defaults draining {worker['turns']:,} queued turns into an empty database (turns/s "
        "from its first stored memory to the last, so the model load is left out), then the "
        "embedder's best configuration again: the bar is the mean of the two. Same run, "
        "same cores (`.venv-bench/bin/python -m bench.ingest`).",
        "",
        *_table(["embedder alone", "texts/s before", "after the drain"], rows),
        f"Worker: **{worker['turns_per_s']:,.0f} turns/s = {result['ratio']:.0%} of the "
        f"embedder's best {bar:,.0f} texts/s** (target 90 %); "
        f"worker peak RSS {worker['worker_peak_rss_mb']:,.0f} MB (target 400).",
        "",
    ]
    split = worker.get("cpu_percent_of_cores")
    if split:
        lines += [
            "Where the cores went during the drain (percent of all cores):",
            "",
            *_table(["component", "% of cores"], [[k, _fmt(v, 1)] for k, v in split.items()]),
        ]
    for variant in result.get("variants", []):
        settings = ", ".join(f"`{k}={v}`" for k, v in variant["env"].items())
        lines.append(
            f"- with {settings}: {variant['turns_per_s']:,.0f} turns/s, RSS "
            f"{variant['worker_peak_rss_mb']:,.0f} MB"
        )
    return [*lines, ""] if result.get("variants") else lines


def _scale_row(label: str, scale: dict[str, Any]) -> list[str]:
    search = scale.get("search", {})
    ingest = scale.get("ingest", {})
    vacuum = scale.get("vacuum", {})
    sizes = scale.get("sizes", {})
    index_mb = sum(sizes.get("index_mb", {}).values())
    builds = scale.get("load", {}).get("index_build_seconds", {})
    return [
        label,
        f"{sizes.get('rows', 0):,}",
        _fmt(search.get("small_user", {}).get("p50_ms")),
        _fmt(search.get("small_user", {}).get("p95_ms")),
        _fmt(search.get("big_user", {}).get("p50_ms")),
        _fmt(search.get("big_user", {}).get("p95_ms")),
        _fmt(search.get("query_embedding", {}).get("p50_ms")),
        _fmt(ingest.get("turns_per_s"), 0),
        _fmt(ingest.get("search_while_ingesting", {}).get("p95_ms")),
        _fmt(builds.get("memories_embedding_hnsw"), 0),
        _fmt(sum(v for k, v in builds.items() if k != "vacuum_analyze") or None, 0),
        _fmt(sizes.get("table_mb"), 0),
        _fmt(index_mb or None, 0),
        _fmt(vacuum.get("vacuum_seconds"), 1),
        _fmt(vacuum.get("index_cleanup_seconds"), 1),
    ]


def _label(scale: dict[str, Any]) -> str:
    table = f"hash, {scale['partitions']}" if scale.get("partitions") else "plain"
    return f"{table}, shared_buffers {scale.get('settings', {}).get('shared_buffers', '?')}"


def scale_lines(scales: list[dict[str, Any]]) -> list[str]:
    """The 1M profile: plain table and, if measured, the hash-partitioned one."""
    if not scales:
        return []
    plain = [s for s in scales if not s.get("partitions")]
    first = (plain or scales)[0]
    layout = first["layout"]
    header = [
        "table",
        "rows",
        "small user p50",
        "p95",
        "big user p50",
        "p95",
        "query embed p50",
        "ingest turns/s while searching",
        "search p95 meanwhile",
        "HNSW build s",
        "all indexes s",
        "table MB",
        "indexes MB",
        "VACUUM s",
        "VACUUM (INDEX_CLEANUP ON) s",
    ]
    rows = [_scale_row(_label(s), s) for s in scales]
    machine = summary(first["machine"]) if "cpu_model" in first.get("machine", {}) else "?"
    ingest = first.get("ingest", {})
    lines = [
        "## 1M memories",
        "",
        f"`make bench PROFILE=1m` (`python -m bench.scale`): {layout['rows']:,} memories, "
        f"{layout['users']:,} users of {(layout['rows'] - layout['big_rows']) // layout['users']}"
        f" memories each and one user with {layout['big_rows']:,}, loaded by COPY with the "
        "indexes dropped, then the indexes built (times below). Texts are the synthetic chat "
        "turns of the hot path; vectors are 8,192 of them embedded by the default embedder, "
        "each row one of those plus small Gaussian noise, renormalised (cosine ~0.95 to its "
        "base): clustered like real MiniLM vectors, where uniform random vectors would make "
        "HNSW's job unrealistically hard, but with more near-duplicates than real chats. "
        "Searches go through `memhub.Memory.search` (query embedding included), one at a time. "
        "Latencies in ms.",
        "",
        f"Machine: {machine}.",
        "",
        *_table(header, rows),
    ]
    if ingest:
        lines += [
            f"Ingest while searching: {ingest['turns']:,} queued turns drained by one "
            "`memhub worker` (defaults) while one client searches the big user through "
            "`memhub serve`'s REST API (the latency column above); peak RSS: worker "
            f"{ingest['worker_peak_rss_mb']:,.0f} MB, server "
            f"{ingest.get('server_peak_rss_mb', 0):,.0f} MB.",
            "",
        ]
    return lines


def plot_latency_vs_memories(
    runs: list[dict[str, Any]], scales: list[dict[str, Any]], img_dir: Path
) -> list[str]:
    """memhub's sequential search p50/p95 at each hot-path size, plus the 1M profile's."""
    points: dict[str, list[tuple[int, float, float]]] = {}
    for run in runs:
        if run["workload"] != "hotpath" or "error" in run or run["layout"] != "one-user":
            continue
        for cp in run["result"]["checkpoints"]:
            latency = cp["sequential"]["search_latency"]
            points.setdefault(run["system"], []).append(
                (cp["memories"], latency["p50_ms"], latency["p95_ms"])
            )
    for scale in scales:
        if scale.get("partitions") or "search" not in scale:
            continue
        big = scale["search"]["big_user"]
        small = scale["search"]["small_user"]
        rows = scale["sizes"]["rows"]
        points.setdefault("memhub", []).append((rows, big["p50_ms"], big["p95_ms"]))
        points.setdefault("memhub, small user of the 1M", []).append(
            (rows, small["p50_ms"], small["p95_ms"])
        )
    if not points:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for system, pts in points.items():
        pts.sort()
        sizes = [p[0] for p in pts]
        ax.plot(sizes, [p[1] for p in pts], "-o", label=f"{system} p50")
        ax.plot(sizes, [p[2] for p in pts], "--x", label=f"{system} p95")
    ax.set(
        xscale="log",
        yscale="log",
        xlabel="memories stored (one user up to 100k; 1M: 10k users + one of 200k)",
        ylabel="search latency (ms), incl. query embedding",
        title="search latency against memories",
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    img_dir.mkdir(parents=True, exist_ok=True)
    path = img_dir / "bench-latency-vs-memories.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [f"![search latency against memories, up to 1M](img/{path.name})", ""]


def throughput_points(runs: list[dict[str, Any]]) -> tuple[list[tuple[int, float]], float | None]:
    """memhub's searches/s by clients (clients / mean latency) at its largest one-user size.

    Every probe of the checkpoint that names its clients counts (``sequential`` is 1 client,
    ``concurrent`` the run's ``clients``); also the query embedding's own single-query rate.
    """
    for run in runs:
        if (run["system"], run["workload"], run.get("layout")) != ("memhub", "hotpath", "one-user"):
            continue
        if "error" in run:
            continue
        largest = run["result"]["checkpoints"][-1]
        points = []
        for name, probe in largest.items():
            if not isinstance(probe, dict) or "search_latency" not in probe:
                continue
            default = 1 if name == "sequential" else run["result"]["clients"]
            clients = int(probe.get("clients") or default)
            points.append((clients, clients * 1000 / probe["search_latency"]["mean_ms"]))
        embed = largest.get("query_embedding_latency", {}).get("mean_ms")
        return sorted(points), (1000 / embed if embed else None)
    return [], None


def plot_throughput_vs_clients(results: dict[str, Any], img_dir: Path) -> list[str]:
    """Searches/s against concurrent clients, with the embedder's single-query rate as a line.

    From ``bench.query``'s 1/4/8-client runs at 100k when the results hold them, else from
    the hot path's sequential and concurrent probes.
    """
    query = results.get("query") or {}
    if query.get("clients"):
        points = [(int(c["clients"]), float(c["searches_per_s"])) for c in query["clients"]]
        embed_qps = query.get("sequential", {}).get("embedder_qps")
        note = (
            f"From `bench.query` at {query.get('memories', 0):,} memories of one user (its "
            '"Search profile" section below); the dashed line is the embedder alone, one '
            "query at a time."
        )
    else:
        points, embed_qps = throughput_points(results["runs"])
        note = (
            "Searches/s = clients / mean search latency at memhub's largest one-user "
            "checkpoint; the dashed line is the query embedding alone, one query at a time."
        )
    if len(points) < 2:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    clients = [c for c, _ in points]
    ax.plot(clients, [q for _, q in points], "-o", label="memhub search")
    if embed_qps:
        ax.axhline(embed_qps, linestyle="--", color="grey", label="query embedding alone")
    ax.set(xlabel="concurrent clients", ylabel="searches/s", title="search throughput")
    ax.set_xticks(clients)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    img_dir.mkdir(parents=True, exist_ok=True)
    path = img_dir / "bench-throughput-vs-clients.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return [f"![search throughput against clients](img/{path.name})", "", note, ""]
