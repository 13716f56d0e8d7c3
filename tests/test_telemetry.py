"""What a user charts, through OpenTelemetry's SDK and in-memory exporters.

Real PostgreSQL and embedder; the LLM is ``ScriptedOpenAIServer`` (the only stand-in allowed:
no model runs here), so consolidation spends tokens a test can count.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from memhub import AsyncMemory, MemhubSettings
from memhub.telemetry import METRIC_ATTRIBUTES, QueueDepth, operation, queue_depth
from memhub.testing import ScriptedOpenAIServer

_installed: tuple[InMemorySpanExporter, InMemoryMetricReader] | None = None


@pytest.fixture
def otel() -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    """SDK providers with in-memory exporters; the API allows setting them once per process."""
    global _installed
    if _installed is None:
        spans, reader = InMemorySpanExporter(), InMemoryMetricReader()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
        trace.set_tracer_provider(tracer_provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        _installed = spans, reader
    _installed[0].clear()
    return _installed


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Every data point memhub's meter collected now, by metric name (not those of another
    library recording through the same global provider, such as http.server.active_requests)."""
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else []:
        for scope in resource.scope_metrics:
            if scope.scope.name != "memhub":
                continue
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


@pytest.fixture
def llm() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server


async def test_a_user_can_chart_latency_queue_depth_and_tokens(
    otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
    settings: MemhubSettings,
    llm: ScriptedOpenAIServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spans, reader = otel
    monkeypatch.setattr(queue_depth(), "interval", 0.0)
    quick = settings.model_copy(
        update={
            "llm_base_url": llm.base_url,
            "llm_model": "scripted-model",
            "llm_max_retries": 0,
            "consolidation_delay": 0.0,
            "worker_poll_interval": 0.05,
        }
    )
    reply = {"operations": [{"op": "ADD", "text": "Ada lives in Berlin.", "turns": [1]}]}
    llm.enqueue(json.dumps(reply))
    async with AsyncMemory(settings=quick) as memory:
        await memory.add("I live in Berlin.", user_id="ada", wait=True)
        await memory.search("Where does Ada live?", user_id="ada")
        for _ in range(200):  # the worker counts once a reader has asked
            found = points(reader)
            if "memhub.queue.depth" in found:
                break
            await asyncio.sleep(0.05)

    latency = {
        p.attributes["memhub.operation"]: p.count for p in found["memhub.operation.duration"]
    }
    assert latency.get("add", 0) >= 1 and latency.get("search", 0) >= 1
    assert latency.get("ingest", 0) >= 1 and latency.get("consolidate", 0) >= 1
    depth = {p.attributes["memhub.status"]: p.value for p in found["memhub.queue.depth"]}
    assert set(depth) == {"queued", "parked"} and depth["parked"] == 0
    tokens = {
        (p.attributes["memhub.model"], p.attributes["memhub.token.type"]): p.value
        for p in found["memhub.llm.tokens"]
    }
    assert tokens[("scripted-model", "prompt")] > 0
    assert tokens[("scripted-model", "completion")] > 0

    for name, data_points in found.items():
        for point in data_points:
            assert set(point.attributes) <= METRIC_ATTRIBUTES, name

    finished = {span.name: span for span in spans.get_finished_spans()}
    assert {"memhub.add", "memhub.search", "memhub.ingest", "memhub.consolidate"} <= set(finished)
    assert finished["memhub.add"].attributes is not None
    assert finished["memhub.add"].attributes["memhub.turns"] == 1  # counts stay on spans


def test_counts_reach_spans_but_not_metric_series(
    otel: tuple[InMemorySpanExporter, InMemoryMetricReader],
) -> None:
    spans, reader = otel
    with operation("test.bounded", {"memhub.jobs": 7, "memhub.step": 3, "memhub.agent": "a"}):
        pass
    (span,) = [s for s in spans.get_finished_spans() if s.name == "memhub.test.bounded"]
    assert span.attributes is not None and span.attributes["memhub.jobs"] == 7
    (point,) = [
        p
        for p in points(reader)["memhub.operation.duration"]
        if p.attributes["memhub.operation"] == "test.bounded"
    ]
    assert dict(point.attributes) == {
        "memhub.operation": "test.bounded",
        "memhub.agent": "a",
        "memhub.outcome": "ok",
    }


def test_the_queue_is_counted_only_after_a_reader_asks_and_at_most_once_per_interval(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = [100.0]
    monkeypatch.setattr("memhub.telemetry.time.monotonic", lambda: clock[0])
    depth = QueueDepth(interval=15.0)
    assert not depth.claim()  # no reader: never counted
    assert list(depth.observe(None)) == []  # type: ignore[arg-type]
    assert depth.claim()
    assert not depth.claim()  # one worker loop counts, the others do not
    depth.update({"queued": 3, "parked": 0})
    observed = {o.attributes["memhub.status"]: o.value for o in depth.observe(None)}  # type: ignore[arg-type, index]
    assert observed == {"queued": 3, "parked": 0}
    assert not depth.claim()  # asked again, but within the interval
    clock[0] += 15.0
    assert depth.claim()
