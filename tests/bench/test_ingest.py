"""Unit tests for the ingestion benchmark's parts: the CPU split, the bar, the report section."""

import os
import subprocess
import sys
import time

import pytest
from bench.cpu_split import CpuSplit, postmaster_of

from bench import ingest, report_scale


def test_the_cpu_split_finds_a_busy_worker_and_adds_up() -> None:
    # A child spinning in its main thread stands in for the worker.
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        split = CpuSplit(child.pid, None)
        split.start()
        time.sleep(1.0)
        shares = split.stop()
    finally:
        child.kill()
        child.wait(30)
    assert shares["worker main thread (event loop, SQL client)"] > 0
    assert shares["worker other threads (embedding)"] == 0
    assert all(value >= 0 for value in shares.values())
    assert 99.0 <= sum(shares.values()) <= 100.0 + 0.1 * len(shares), "rounded percents"


def test_the_postmaster_is_the_parent_of_a_backend() -> None:
    assert postmaster_of(os.getpid()) == os.getppid()


def test_the_bar_is_the_mean_of_the_best_before_and_after(monkeypatch: pytest.MonkeyPatch) -> None:
    rates = iter([300.0])
    monkeypatch.setattr(ingest, "_rate", lambda *_args: next(rates))
    before = {"batch": 64, "best": "one_session_1_threads", "best_texts_per_s": 400.0}
    bar = ingest._bar(before, ["a turn"])
    assert bar["after"]["one_session_1_threads"] == 300.0
    assert set(bar["after"]) == {
        "batch",
        "texts",
        "cores",
        "one_session_1_threads",
        "best",
        "best_texts_per_s",
    }, "only the best configuration again"
    assert bar["bar"] == 350.0


def test_the_ingest_section_shows_both_measurements_and_the_split() -> None:
    embedder = {
        "batch": 64,
        "texts": 100,
        "cores": 2,
        "one_session_1_threads": 200.0,
        "2_streams_1_thread": 400.0,
        "best": "2_streams_1_thread",
        "best_texts_per_s": 400.0,
    }
    after = {
        "batch": 64,
        "texts": 100,
        "cores": 2,
        "2_streams_1_thread": 360.0,
        "best": "2_streams_1_thread",
        "best_texts_per_s": 360.0,
    }
    worker = {
        "turns": 1000,
        "turns_per_s": 304.0,
        "worker_peak_rss_mb": 350.0,
        "cpu_percent_of_cores": {"worker other threads (embedding)": 75.0, "idle": 2.0},
    }
    result = {"embedder": embedder, "embedder_after": after, "worker": worker, "ratio": 0.8}
    text = "\n".join(report_scale.ingest_lines([{"workload": "ingest", "result": result}]))
    assert "| 2 streams 1 thread | 400 | 360 |" in text
    assert "| one session 1 threads | 200 | – |" in text
    assert "**304 turns/s = 80% of the embedder's best 380 texts/s**" in text
    assert "| worker other threads (embedding) | 75.0 |" in text


def test_the_embedder_alone_is_the_model_the_settings_name(monkeypatch: pytest.MonkeyPatch) -> None:
    # The real MiniLM runs; the spy only records which settings built it. The bar must be the
    # model the worker runs (MEMHUB_EMBEDDER), not a fixed one.
    from memhub.memory import services

    built = []
    real = services.embedder_from_settings

    def spy(settings: object) -> object:
        built.append(settings)
        return real(settings)  # type: ignore[arg-type]

    monkeypatch.setenv("MEMHUB_EMBEDDER", "minilm")
    monkeypatch.setattr(services, "embedder_from_settings", spy)
    rate = ingest._rate(["a short turn"] * 4, batch=2, threads=1, streams=2)
    assert rate > 0
    assert [(s.embedder, s.embedder_threads) for s in built] == [("minilm", 1)] * 2
