"""No test asserts on elapsed wall time: on a loaded 2-core machine every such bound flakes.

A test says what happened (counts, recorded decisions, events) or drives a fake clock where
time is the subject. Waiting for something with a generous deadline is fine; asserting that it
happened *quickly* is not. The checker parses every test module and fails on a comparison that
reads a stopwatch:

- an operand holds a difference of a clock reading and another time (``monotonic() - started``,
  ``created_at - datetime.now(UTC)``), or a name or attribute bound from one
  (``took = perf_counter() - t0``), or an HTTP response's ``elapsed``;
- an operand is a deadline closer than ``MIN_DEADLINE_SECONDS`` (``clock() + 2``), or a clock
  reading against one.

It follows names within a module, not calls: a helper that returns a duration for its caller
to bound is for review to catch (two were, in tests/ops). Benchmarks (``bench/``, outside
tests/) measure time on purpose and are not checked.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

TESTS = Path(__file__).parent
# A deadline this far off fails only when something never happens, not when it is slow.
MIN_DEADLINE_SECONDS = 30.0
CLOCKS = frozenset(
    {
        "perf_counter",
        "perf_counter_ns",
        "monotonic",
        "monotonic_ns",
        "time",
        "time_ns",
        "process_time",
        "now",
        "utcnow",
    }
)

# "path:line" of a comparison that must read a clock, with the reason; empty and kept so.
ALLOWED: dict[str, str] = {}


def _is_clock_call(node: ast.AST) -> bool:
    """``time.monotonic()``, ``perf_counter()``, ``loop.time()``, ``datetime.now(UTC)`` ..."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    return name in CLOCKS


def _short_constant(node: ast.AST) -> bool:
    if not isinstance(node, ast.Constant) or isinstance(node.value, bool):
        return False
    return isinstance(node.value, int | float) and node.value < MIN_DEADLINE_SECONDS


def _offset(node: ast.AST) -> bool:
    """A fixed offset (``timedelta(days=1)``, ``60``): clock minus one is a moment, not a span."""
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.Call) and getattr(node.func, "id", "") == "timedelta"


def _operands(node: ast.AST, operator: type[ast.operator]) -> tuple[ast.expr, ast.expr] | None:
    """``(left, right)`` if ``node`` is ``left <operator> right``, else None."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, operator):
        return node.left, node.right
    return None


def _target_key(node: ast.AST) -> str | None:
    """A name (``took``) or a dotted attribute (``self.took``) a value is bound to."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        owner = _target_key(node.value)
        return f"{owner}.{node.attr}" if owner else node.attr
    return None


@dataclass
class _Module:
    """What each name of one module was bound from, then the stopwatch comparisons in it."""

    readings: set[str] = field(default_factory=set)  # started = monotonic()
    spans: set[str] = field(default_factory=set)  # took = monotonic() - started
    short_deadlines: set[str] = field(default_factory=set)  # deadline = monotonic() + 2

    def reads_clock(self, node: ast.AST) -> bool:
        return any(
            _is_clock_call(n) or _target_key(n) in self.readings
            for n in ast.walk(node)
            if isinstance(n, ast.Call | ast.Name | ast.Attribute)
        )

    def is_elapsed(self, node: ast.AST) -> bool:
        for n in ast.walk(node):
            if (pair := _operands(n, ast.Sub)) is not None:
                left, right = pair
                if self.reads_clock(left) and not _offset(right):
                    return True
                if self.reads_clock(right) and not _offset(left):
                    return True
            named = isinstance(n, ast.Name | ast.Attribute)
            if named and (_target_key(n) in self.spans or getattr(n, "attr", "") == "elapsed"):
                return True
        return False

    def is_short_deadline(self, node: ast.AST) -> bool:
        for n in ast.walk(node):
            if _target_key(n) in self.short_deadlines:
                return True
            pair = _operands(n, ast.Add)
            if pair is not None and self.reads_clock(pair[0]) and _short_constant(pair[1]):
                return True
        return False

    def bind(self, targets: list[ast.expr], value: ast.AST) -> None:
        keys = [key for target in targets if (key := _target_key(target))]
        if self.is_elapsed(value):
            self.spans.update(keys)
        elif self.is_short_deadline(value):
            self.short_deadlines.update(keys)
        elif self.reads_clock(value):
            self.readings.update(keys)

    def reads_stopwatch(self, compare: ast.Compare) -> bool:
        operands = [compare.left, *compare.comparators]
        return any(self.is_elapsed(o) or self.is_short_deadline(o) for o in operands)


def stopwatch_comparisons(root: Path) -> list[str]:
    """Every ``path:line`` under ``root`` whose comparison reads a stopwatch."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        module = _Module()
        # Bindings first (in source order), so a name used in a nested helper is known.
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                module.bind(node.targets, node.value)
            elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr) and node.value:
                module.bind([node.target], node.value)
        name = path.relative_to(root).as_posix()
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare) and module.reads_stopwatch(node):
                found.append(f"{name}:{node.lineno}")
    return found


def test_no_test_compares_elapsed_wall_time() -> None:
    found = [where for where in stopwatch_comparisons(TESTS) if where not in ALLOWED]
    assert not found, "assert counts, events or decisions, or use a fake clock: " + ", ".join(found)


def test_the_allowlist_names_only_what_is_there() -> None:
    stale = set(ALLOWED) - set(stopwatch_comparisons(TESTS))
    assert not stale, f"no longer a stopwatch comparison, remove from ALLOWED: {sorted(stale)}"


def test_the_checker_finds_each_shape_of_stopwatch(tmp_path: Path) -> None:
    flagged = """\
import time
def f(response):
    started = time.monotonic()
    assert time.monotonic() - started < 1.0
    took = time.perf_counter() - started
    assert took < 2
    assert response.elapsed.total_seconds() < 5
    soon = time.monotonic() + 2
    assert time.monotonic() < soon
    assert abs(record.created_at - datetime.now(UTC)) < timedelta(seconds=5)
"""
    fine = """\
import time
def g(timeout):
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pass
    assert time.monotonic() < deadline, "never happened"
    until = time.monotonic() + timeout
    assert time.monotonic() < until
    assert calls == 1 and len(events) > 0
    print(f"took {time.monotonic() - deadline:.1f} s")
    assert purge(datetime.now(UTC) - timedelta(days=1)) == 0
"""
    (tmp_path / "flagged.py").write_text(flagged)
    (tmp_path / "fine.py").write_text(fine)
    assert stopwatch_comparisons(tmp_path) == [f"flagged.py:{n}" for n in (4, 6, 7, 9, 10)]
