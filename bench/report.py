"""Render benchmark JSON into ``docs/benchmarks.md`` and latency-versus-size PNG plots.

``python -m bench.report bench/results/results-default.json`` re-renders without re-running.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bench import report_scale
from bench.locomo import CATEGORY_NAMES
from bench.metrics import DEFAULT_KS

#: Everything from this line on in docs/benchmarks.md is written by hand and kept on re-render.
HAND_WRITTEN = "<!-- Hand-written sections below: bench.report keeps them on every re-render. -->"

#: memhub's targets from the benchmark issue: (label, how to read it, limit, higher is better).
TARGETS: tuple[tuple[str, str, float, bool], ...] = (
    ("acknowledged add p50 (ms)", "add_p50", 1.0, False),
    ("search p95 incl. query embedding (ms)", "search_p95", 10.0, False),
    ("engine overhead: search p95 - query embedding p50 (ms)", "overhead", 2.0, False),
    ("add p95, 8 clients while a worker ingests (ms)", "add_p95_concurrent", 3.0, False),
    ("ingestion, filled by 8 clients (turns/s)", "ingest", 300.0, True),
    ("worker ingestion / embedder alone (same run)", "ingest_ratio", 0.9, True),
    ("worker peak RSS (MB)", "rss", 400.0, False),
    ("search p95 at 1M memories, big user (ms)", "search_p95_1m", 20.0, False),
    ("evidence recall@10", "recall10", 0.65, True),
)


def _fmt(value: float | None, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}"


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _ok(runs: list[dict[str, Any]], workload: str) -> list[dict[str, Any]]:
    return [r for r in runs if r["workload"] == workload and "error" not in r]


def _recall_section(runs: list[dict[str, Any]]) -> list[str]:
    recall = _ok(runs, "recall")
    if not recall:
        return []
    keys = [f"recall@{k}" for k in DEFAULT_KS] + ["hit@10", "mrr", "tokens_top10"]
    lines = ["## Recall on LoCoMo (categories 1-4, no LLM)", ""]
    lines += _table(
        ["system", *keys],
        (
            [
                r["system"],
                *(
                    _fmt(r["result"]["metrics"]["overall"][k], 0 if k.startswith("tokens") else 3)
                    for k in keys
                ),
            ]
            for r in recall
        ),
    )
    first = recall[0]["result"]
    lines += [
        f"{first['questions']} questions over {first['turns']} turns; "
        f"{first['questions_without_evidence']} questions without usable evidence are "
        f"skipped, {first['unmatched_evidence_ids']} evidence ids match no turn. "
        "Tokens: cl100k_base tokens of the top-10 texts.",
        "",
    ]
    lines += ["### recall@10 per category", ""]
    categories = sorted({c for r in recall for c in r["result"]["metrics"] if c != "overall"})
    lines += _table(
        ["system", *(f"{c} {CATEGORY_NAMES.get(int(c), '')}" for c in categories)],
        (
            [
                r["system"],
                *(_fmt(r["result"]["metrics"].get(c, {}).get("recall@10"), 3) for c in categories),
            ]
            for r in recall
        ),
    )
    return lines


def _hotpath_rows(runs: list[dict[str, Any]]) -> Iterable[list[str]]:
    for run in _ok(runs, "hotpath"):
        for cp in run["result"]["checkpoints"]:
            embed = cp.get("query_embedding_latency", {})
            fill = cp.get("fill") or {}
            for mode in ("sequential", "concurrent"):
                add, search = cp[mode]["add_latency"], cp[mode]["search_latency"]
                yield [
                    run["system"],
                    run["layout"],
                    f"{cp['memories']:,}",
                    mode,
                    _fmt(add["p50_ms"]),
                    _fmt(add["p95_ms"]),
                    _fmt(add["p99_ms"]),
                    _fmt(cp[mode].get("adds_per_s"), 0),
                    _fmt(search["p50_ms"]),
                    _fmt(search["p95_ms"]),
                    _fmt(search["p99_ms"]),
                    _fmt(embed.get("p50_ms")),
                    _fmt(fill.get("turns_per_s"), 0),
                    _fmt(cp["peak_rss_mb"], 0),
                ]


def _hotpath_section(runs: list[dict[str, Any]]) -> list[str]:
    if not _ok(runs, "hotpath"):
        return []
    header = [
        "system",
        "layout",
        "memories",
        "clients",
        "add p50",
        "add p95",
        "add p99",
        "adds/s",
        "search p50",
        "search p95",
        "search p99",
        "query embed p50",
        "ingest turns/s",
        "peak RSS MB",
    ]
    return [
        "## Hot path",
        "",
        "Latencies in ms. Search includes query embedding; the embedding alone is also shown,"
        " timed with a search between two embeddings (back to back it is faster than inside a"
        " search on this VM). "
        "adds/s: the probe's adds over its wall time; with every client always waiting on a"
        " call, latency is clients / throughput. "
        "Ingestion: turns per second from the first add until all are searchable, filled by "
        "concurrent clients. Peak RSS of the client process plus any worker process; memhub"
        " runs one `memhub worker` process beside the client (its own peak is the worker RSS"
        " in the targets), Mem0 ingests in the client.",
        "",
        *_table(header, _hotpath_rows(runs)),
    ]


def _cli_section(cli: dict[str, Any] | None) -> list[str]:
    """``memhub import`` and ``memhub search`` as a user runs them (bench/cli_import.py)."""
    if not cli:
        return []
    limits = {2000: "5 s", 100000: "180 s"}
    rows = [
        [
            f"`memhub import` {run['turns']:,} turns, until keyword-searchable",
            f"{run['seconds']:.2f} s ({run['turns_per_second']:,.0f} turns/s)",
            limits.get(run["turns"], "–"),
        ]
        for run in cli.get("import", [])
    ]
    search = cli.get("search")
    if search:
        rows += [
            [
                f"`memhub search` through `memhub serve`, p50 / max of {search['searches']}",
                f"{search['http_p50_seconds']:.2f} / {search['http_max_seconds']:.2f} s",
                "1 s",
            ],
            [
                "of which: the server's answer (p50)",
                f"{search['server_answer_p50_seconds']:.2f} s",
                "",
            ],
            ["of which: the command's start", f"{search['cli_start_seconds']:.2f} s", ""],
            [
                "`memhub search` in-process (loads the model)",
                f"{search['in_process_seconds']:.2f} s",
                "",
            ],
        ]
    return [
        "## Command line",
        "",
        "From process start to exit, on a fresh database"
        " (`.venv-bench/bin/python -m bench.cli_import`).",
        "",
        *_table(["what", "figure", "target"], rows),
    ]


def _target_values(runs: list[dict[str, Any]], system: str) -> dict[str, float]:
    values: dict[str, float] = {}
    for run in _ok(runs, "recall"):
        if run["system"] == system:
            values["recall10"] = run["result"]["metrics"]["overall"]["recall@10"]
    one_user = [
        r for r in _ok(runs, "hotpath") if r["system"] == system and r["layout"] == "one-user"
    ]
    if one_user:
        run = one_user[0]
        largest = run["result"]["checkpoints"][-1]
        values["add_p50"] = largest["sequential"]["add_latency"]["p50_ms"]
        values["add_p95_concurrent"] = largest["concurrent"]["add_latency"]["p95_ms"]
        values["search_p95"] = largest["sequential"]["search_latency"]["p95_ms"]
        embed = largest.get("query_embedding_latency", {}).get("p50_ms")
        if embed is not None:
            values["overhead"] = values["search_p95"] - embed
        fills = [cp["fill"]["turns_per_s"] for cp in run["result"]["checkpoints"] if cp.get("fill")]
        values["ingest"] = fills[-1] if fills else math.nan
        # The worker's own process where there is one (memhub), else the whole client (Mem0
        # ingests in its client's threads).
        values["rss"] = run["result"].get("worker_peak_rss_mb") or run["result"]["peak_rss_mb"]
        values["memories"] = largest["memories"]
    return values


def _targets_section(runs: list[dict[str, Any]], scales: list[dict[str, Any]]) -> list[str]:
    memhub, mem0 = _target_values(runs, "memhub"), _target_values(runs, "mem0")
    ingest = report_scale.ingest_result(runs)
    if ingest is not None:
        memhub["ingest_ratio"] = ingest["ratio"]
    plain = [s for s in scales if not s.get("partitions") and "search" in s]
    if plain:
        memhub["search_p95_1m"] = plain[0]["search"]["big_user"]["p95_ms"]
    if not memhub and not mem0:
        return []
    rows = []
    for label, key, limit, higher in TARGETS:
        ours, theirs = memhub.get(key), mem0.get(key)
        met = (
            "–"
            if ours is None
            else ("yes" if (ours >= limit if higher else ours <= limit) else "no")
        )
        ratio = _fmt(ours / theirs) if ours is not None and theirs else "–"
        rows.append([label, _fmt(limit), _fmt(ours), met, _fmt(theirs), ratio])
    sizes = ", ".join(
        f"{name} at {values['memories']:,.0f} memories"
        for name, values in (("memhub", memhub), ("Mem0", mem0))
        if "memories" in values
    )
    return [
        "## Targets",
        "",
        f"Hot-path figures: one user, sequential client, largest checkpoint ({sizes}).",
        "",
        *_table(["measure", "target", "memhub", "met", "Mem0", "memhub / Mem0"], rows),
    ]


def _plot(runs: list[dict[str, Any]], img_dir: Path) -> list[str]:
    hot = _ok(runs, "hotpath")
    if not hot:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    img_dir.mkdir(parents=True, exist_ok=True)
    lines = ["## Plots", ""]
    for op in ("search", "add"):
        fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
        for ax, layout in zip(axes, ("one-user", "spread"), strict=True):
            for run in (r for r in hot if r["layout"] == layout):
                cps = run["result"]["checkpoints"]
                sizes = [cp["memories"] for cp in cps]
                for pct, style in (("p50_ms", "-o"), ("p95_ms", "--x")):
                    ax.plot(
                        sizes,
                        [cp["sequential"][f"{op}_latency"][pct] for cp in cps],
                        style,
                        label=f"{run['system']} {pct[:3]}",
                    )
            ax.set(xscale="log", yscale="log", title=f"{op}, {layout}", xlabel="memories stored")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        axes[0].set_ylabel("latency (ms), sequential client")
        fig.tight_layout()
        path = img_dir / f"bench-{op}-latency.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        lines += [f"![{op} latency against number of memories](img/{path.name})", ""]
    return lines


def _kept_tail(docs: Path) -> list[str]:
    """The hand-written part of an existing report (from the marker on), or just the marker."""
    if docs.exists():
        text = docs.read_text(encoding="utf-8")
        if HAND_WRITTEN in text:
            return ["", text[text.index(HAND_WRITTEN) :].rstrip("\n"), ""]
    return ["", HAND_WRITTEN, ""]


def render(results: dict[str, Any], *, docs: Path, img_dir: Path) -> str:
    """Write the markdown report (and plots); return the markdown.

    Everything below :data:`HAND_WRITTEN` in an existing ``docs`` file is kept as it is.
    """
    runs = results["runs"]
    scales: list[dict[str, Any]] = results.get("scale", [])
    profile = results["profile"]
    versions = ", ".join(f"{k} {v}" for k, v in results["versions"].items())
    lines = [
        "# Benchmarks",
        "",
        f"Profile `{profile['name']}`, run {results['started']} on "
        f"{results['machine']['cpus']} CPUs. Regenerate with `make bench` "
        f"(or `.venv-bench/bin/python -m bench --profile {profile['name']}`).",
        "",
        *report_scale.machine_lines(results),
        f"Versions: {versions}.",
        "",
    ]
    if results.get("embedders"):
        named = "; ".join(f"{system}: {model}" for system, model in results["embedders"].items())
        lines += [f"Embedders: {named}.", ""]
    lines += _targets_section(runs, scales) + _recall_section(runs) + _hotpath_section(runs)
    lines += _cli_section(results.get("cli"))
    lines += report_scale.ingest_lines(runs) + report_scale.scale_lines(scales)
    lines += _plot(runs, img_dir)
    lines += report_scale.plot_latency_vs_memories(runs, scales, img_dir)
    lines += report_scale.plot_throughput_vs_clients(results, img_dir)
    failed = [r for r in runs if "error" in r]
    if failed:
        lines += ["## Failed runs", ""]
        lines += [
            f"- {r['system']} {r['workload']} {r['layout']}: `{r['error'][-1]}`" for r in failed
        ]
        lines.append("")
    timing = [[r["system"], r["workload"], r["layout"], _fmt(r["wall_seconds"], 0)] for r in runs]
    lines += ["## Time taken", "", *_table(["system", "workload", "layout", "seconds"], timing)]
    text = "\n".join(lines + _kept_tail(docs))
    docs.parent.mkdir(parents=True, exist_ok=True)
    docs.write_text(text, encoding="utf-8")
    return text


def main(argv: list[str] | None = None) -> int:
    """Re-render the report from a results JSON file."""
    parser = argparse.ArgumentParser(prog="python -m bench.report")
    parser.add_argument("results", type=Path)
    parser.add_argument("--docs", type=Path, default=Path("docs/benchmarks.md"))
    parser.add_argument("--img", type=Path, default=Path("docs/img"))
    args = parser.parse_args(argv)
    render(json.loads(args.results.read_text(encoding="utf-8")), docs=args.docs, img_dir=args.img)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
