"""OpenTelemetry spans and metrics for memhub's operations; no-ops unless the app installs an SDK.

Only ``opentelemetry-api`` is used: the API's proxy tracer and meter forward to whatever
provider the application configures later, and cost next to nothing when none is. Spans may
carry any attribute (counts, sizes); metric series carry only the bounded keys of
``METRIC_ATTRIBUTES``, so their number cannot grow with traffic.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache

from opentelemetry import metrics, trace
from opentelemetry.trace import Span, Status, StatusCode

__all__ = [
    "METRIC_ATTRIBUTES",
    "Instruments",
    "QueueDepth",
    "instruments",
    "meter",
    "metric_attributes",
    "operation",
    "queue_depth",
    "record_guard",
    "record_llm_usage",
    "record_memory_error",
    "record_refused_operation",
    "tracer",
]

_SCOPE = "memhub"
Attributes = Mapping[str, str | int | float | bool]

# Each takes few values (operation names, outcomes, agent and tool names the application
# defines, model names, job statuses, consolidation's refusal codes). A count such as
# memhub.turns would start a new time series per distinct value: it belongs on the span only.
METRIC_ATTRIBUTES = frozenset(
    {
        "memhub.operation",
        "memhub.outcome",
        "memhub.agent",
        "memhub.tool",
        "memhub.partial",
        "memhub.model",
        "memhub.token.type",
        "memhub.status",
        "memhub.reason",
    }
)


def metric_attributes(attributes: Attributes) -> dict[str, str | int | float | bool]:
    """The bounded part of ``attributes``: what a metric data point may carry."""
    return {key: value for key, value in attributes.items() if key in METRIC_ATTRIBUTES}


@cache
def tracer() -> trace.Tracer:
    """memhub's tracer (the API's proxy until an SDK is configured)."""
    return trace.get_tracer(_SCOPE)


@cache
def meter() -> metrics.Meter:
    """memhub's meter (the API's proxy until an SDK is configured)."""
    return metrics.get_meter(_SCOPE)


@dataclass(frozen=True)
class Instruments:
    """The metric instruments memhub records into."""

    duration: metrics.Histogram
    errors: metrics.Counter
    recall_hits: metrics.Histogram
    injected_tokens: metrics.Histogram
    llm_tokens: metrics.Counter
    llm_calls: metrics.Counter
    guard_refused: metrics.Counter
    refused_operations: metrics.Counter
    queue_depth: metrics.ObservableGauge


@cache
def instruments() -> Instruments:
    """The instruments, created on first use."""
    m = meter()
    return Instruments(
        duration=m.create_histogram(
            "memhub.operation.duration", unit="s", description="Latency of memhub operations."
        ),
        errors=m.create_counter(
            "memhub.agent.memory.errors",
            description="Memory failures an agent call survived without memory.",
        ),
        recall_hits=m.create_histogram(
            "memhub.agent.recall.hits", description="Memories recalled per agent call."
        ),
        injected_tokens=m.create_histogram(
            "memhub.agent.recall.injected_tokens",
            unit="{token}",
            description="Estimated tokens of the injected memory message.",
        ),
        llm_tokens=m.create_counter(
            "memhub.llm.tokens", unit="{token}", description="Tokens spent on consolidation."
        ),
        llm_calls=m.create_counter(
            "memhub.llm.calls", description="LLM requests made by consolidation (with repairs)."
        ),
        guard_refused=m.create_counter(
            "memhub.guard.refused",
            description="Model-initiated removals refused or capped (a DELETE, SUPERSEDE,"
            " forget or delete_memory no user request supported, or beyond the cap).",
        ),
        refused_operations=m.create_counter(
            "memhub.consolidation.refused",
            description="Operations a model proposed that consolidation refused, by reason"
            " (ungrounded, a copy of the prompt or the assistant, invalid, unparsable).",
        ),
        queue_depth=m.create_observable_gauge(
            "memhub.queue.depth",
            callbacks=[queue_depth().observe],
            unit="{job}",
            description="Background jobs per status (queued, parked), as a worker last counted.",
        ),
    )


class QueueDepth:
    """Job counts for the ``memhub.queue.depth`` gauge, counted only while someone collects.

    Counting is a query, so workers count only after a metric reader has asked (no SDK, no
    reader: never) and at most once per ``interval`` seconds.
    """

    def __init__(self, interval: float = 15.0) -> None:
        self.interval = interval
        self._counts: dict[str, int] = {}
        self._asked = False
        self._counted_at = float("-inf")

    def claim(self) -> bool:
        """True, for one caller, when a reader has asked and ``interval`` has passed.

        The caller then counts and passes the counts to :meth:`update`; concurrent worker
        loops do not count twice.
        """
        now = time.monotonic()
        if not self._asked or now - self._counted_at < self.interval:
            return False
        self._asked, self._counted_at = False, now
        return True

    def update(self, counts: Mapping[str, int]) -> None:
        """Record the counts per status a worker just read."""
        self._counts = dict(counts)

    def observe(self, _options: metrics.CallbackOptions) -> Iterable[metrics.Observation]:
        """The gauge's callback: the last counts, and a request for fresh ones."""
        self._asked = True
        return [metrics.Observation(n, {"memhub.status": s}) for s, n in self._counts.items()]


@cache
def queue_depth() -> QueueDepth:
    """The process's queue depth holder (what any of its workers counted last)."""
    return QueueDepth()


@contextmanager
def operation(
    name: str, attributes: Attributes | None = None, *, activate: bool = True
) -> Iterator[Span]:
    """A span named ``memhub.<name>`` whose latency lands in ``memhub.operation.duration``.

    The span gets every attribute; the latency's data point only the bounded ones
    (:data:`METRIC_ATTRIBUTES`) plus ``memhub.outcome`` (``ok``, ``error``, ``cancelled``).

    An exception marks the span as failed and is re-raised unchanged. Pass ``activate=False``
    around a ``yield`` of an async generator: an activated span's context token would be
    detached in another context when the generator resumes.
    """
    attrs = {"memhub.operation": name, **(attributes or {})}
    started = time.perf_counter()
    outcome = "ok"
    span = tracer().start_span(f"memhub.{name}", attributes=attrs)
    try:
        if activate:
            with trace.use_span(
                span, end_on_exit=False, record_exception=False, set_status_on_exception=False
            ):
                yield span
        else:
            yield span
    except (GeneratorExit, asyncio.CancelledError):
        outcome = "cancelled"  # an abandoned stream or a cancelled task, not a failure
        raise
    except BaseException as exc:
        outcome = "error"
        span.record_exception(exc)
        span.set_status(Status(StatusCode.ERROR, type(exc).__name__))
        raise
    finally:
        span.end()
        instruments().duration.record(
            time.perf_counter() - started, metric_attributes({**attrs, "memhub.outcome": outcome})
        )


def record_llm_usage(model: str, prompt_tokens: int, completion_tokens: int, calls: int) -> None:
    """Count one consolidation call's LLM cost."""
    tools = instruments()
    tools.llm_calls.add(calls, {"memhub.model": model})
    tools.llm_tokens.add(prompt_tokens, {"memhub.model": model, "memhub.token.type": "prompt"})
    tools.llm_tokens.add(
        completion_tokens, {"memhub.model": model, "memhub.token.type": "completion"}
    )


def record_refused_operation(model: str, reason: str) -> None:
    """Count one operation consolidation refused (see ``memhub.consolidation.refused``)."""
    instruments().refused_operations.add(1, {"memhub.model": model, "memhub.reason": reason})


def record_memory_error(operation_name: str, attributes: Attributes | None = None) -> None:
    """Count one memory failure that an agent call survived."""
    instruments().errors.add(
        1, metric_attributes({"memhub.operation": operation_name, **(attributes or {})})
    )


def record_guard(operation_name: str, outcome: str) -> None:
    """Count one model-initiated removal the guard refused (``refused``) or capped."""
    instruments().guard_refused.add(
        1, {"memhub.operation": operation_name, "memhub.outcome": outcome}
    )
