"""Unit tests for bench.query's pure parts: the EXPLAIN walk and the docs section it writes."""

from pathlib import Path

from bench.query import BEGIN, END, PARTS, _ctes, summary, write_section

PLAN = {
    "Node Type": "Hash Join",
    "Plans": [
        {"Subplan Name": "CTE vec", "Actual Total Time": 0.7, "Actual Loops": 1},
        {
            "Node Type": "Nested Loop",
            "Plans": [{"Subplan Name": "CTE probe", "Actual Total Time": 2.0, "Actual Loops": 3}],
        },
        {"Subplan Name": "SubPlan 1", "Actual Total Time": 5.0, "Actual Loops": 1},
    ],
}


def _result(p95: float) -> dict[str, object]:
    part = summary([1.0, 2.0, p95])
    row = {"clients": 8, "searches_per_s": 100.0, **part}
    return {
        "memories": 100_000,
        "cpu": "a test CPU (avx2)",
        "sequential": {
            **dict.fromkeys(PARTS, part),
            "overhead_p95_ms": p95 - 2.0,
            "embedder_qps": 400.0,
        },
        "clients": [row],
        "clients_while_ingesting": {**row, "turns_added": 5},
        "explain_ms": {"text: execution": 2.0, "vector: execution": 0.25},
        "timeline": {
            "steps": {"search": {"p50": 12.0, "p95": 17.5}},
            "text_last_share": 0.5,
        },
    }


def test_ctes_are_found_at_any_depth_and_loops_multiply() -> None:
    assert _ctes(PLAN) == [("vec", 0.7), ("probe", 6.0)]


def test_summary_takes_the_95th_percentile_from_sorted_values() -> None:
    found = summary([float(n) for n in range(100, 0, -1)])
    assert (found["p50"], found["p95"], found["n"]) == (51.0, 96.0, 100)


def test_the_section_is_replaced_in_place_and_the_rest_kept(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    docs.write_text("# Benchmarks\n\nkept\n", encoding="utf-8")
    write_section(docs, _result(3.0))
    write_section(docs, _result(7.0))
    text = docs.read_text(encoding="utf-8")
    assert text.count(BEGIN) == text.count(END) == 1
    assert text.startswith("# Benchmarks\n\nkept\n")
    assert "**5.00 ms**" in text and "**1.00 ms**" not in text
    assert "| 8 + worker ingesting | 100 |" in text
    assert "| vector: execution | 0.25 |" in text
    assert "runs on its own connection while the query is embedded" in text
    assert "| search | 12.00 | 17.50 |" in text and "after the embedding in 50% of" in text


def test_the_section_names_the_embedder_and_the_overhead_beside_its_p95(tmp_path: Path) -> None:
    result = _result(7.0)
    result["embedder"] = "minilm"
    sequential = result["sequential"]
    assert isinstance(sequential, dict)
    sequential["embedding"] = summary([1.0, 2.0, 4.0])
    docs = tmp_path / "benchmarks.md"
    write_section(docs, result)
    text = docs.read_text(encoding="utf-8")
    assert "embedder `minilm`" in text
    assert "search p95 minus embedding p95: **3.00 ms**" in text


def test_the_section_names_the_candidates_when_the_run_recorded_them(tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    write_section(docs, {**_result(7.0), "candidates": 100})
    assert ", 100 candidates per retriever, on a test CPU" in docs.read_text(encoding="utf-8")
