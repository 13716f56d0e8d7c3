"""Unit tests for the 1M profile's pure parts: who owns each row, row determinism, the report."""

from collections import Counter
from pathlib import Path

import numpy as np

from bench import machine, report_scale, scale_data


def test_layout_gives_the_big_user_its_share_and_spreads_the_rest() -> None:
    layout = scale_data.Layout(rows=10_000, users=100, big_rows=2_000)
    owners = Counter(layout.owner(i) for i in range(layout.rows))
    assert owners.pop("scale-big") == 2_000
    assert len(owners) == 100
    assert set(owners.values()) == {80}


def test_rows_of_some_owners_equal_the_same_rows_of_the_whole() -> None:
    layout = scale_data.Layout(rows=300, users=10, big_rows=60)
    texts = ["a b c", "d e f", "g h i"]
    vectors = np.eye(3, 384, dtype=np.float32)
    whole = list(scale_data.rows(layout, texts, vectors, 0, 300))
    some = list(scale_data.rows(layout, texts, vectors, 0, 300, owners={"scale-u3"}))
    assert len(whole) == 300 and len(some) == 24
    expected = [r for r in whole if r[1] == "scale-u3"]
    assert [r[:7] for r in some] == [r[:7] for r in expected]
    assert all(np.array_equal(a[7], b[7]) for a, b in zip(some, expected, strict=True))
    assert all(abs(float(np.linalg.norm(r[7])) - 1.0) < 1e-5 for r in whole)


def test_machine_names_cpu_cores_and_load() -> None:
    described = machine.describe()
    assert described["cpus"] >= 1 and len(described["load_before"]) == 3
    assert "cores" in machine.summary(described)


def test_scale_section_renders_plain_and_partitioned(tmp_path: Path) -> None:
    search = {k: {"p50_ms": 5.0, "p95_ms": 9.0} for k in ("small_user", "big_user")}
    plain = {
        "layout": {"rows": 1000, "users": 10, "big_rows": 200},
        "partitions": 0,
        "machine": machine.describe(),
        "sizes": {"rows": 1000, "table_mb": 3.0, "index_mb": {"memories_embedding_hnsw": 2.0}},
        "search": search | {"query_embedding": {"p50_ms": 2.0}},
        "load": {"index_build_seconds": {"memories_embedding_hnsw": 12.0}},
    }
    lines = report_scale.scale_lines([plain, plain | {"partitions": 16}])
    text = "\n".join(lines)
    assert "## 1M memories" in text and "| hash, 16, shared_buffers ? | 1,000 |" in text
