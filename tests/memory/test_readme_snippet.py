"""README.md's Mem0-style snippet, run as written (only the database chosen by the
environment), ten times in a row with no waits: each call's value is checked."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def mem0_snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), re.DOTALL)
    (snippet,) = [b for b in blocks if "m = Memory()" in b]
    return snippet


def run_statements(code: str) -> list[tuple[str, Any]]:
    """Execute ``code`` statement by statement; the value of each bare expression."""
    namespace: dict[str, Any] = {}
    values = []
    for node in ast.parse(code).body:
        source = ast.unparse(node)
        if isinstance(node, ast.Expr):
            values.append(
                (source, eval(compile(ast.Expression(node.value), "README", "eval"), namespace))
            )
        else:
            exec(compile(ast.Module([node], []), "README", "exec"), namespace)
    return values


def test_the_readme_mem0_snippet_works_with_no_waits(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMHUB_DATABASE_URL", db_url)
    for _ in range(10):  # it ends with delete_all: each run starts from nothing
        check(dict(run_statements(mem0_snippet())))


def check(values: dict[str, Any]) -> None:
    searches = [v for source, v in values.items() if source.startswith("m.search(")]
    assert len(searches) == 2
    for found in searches:  # by meaning: "Where does Ada live?" shares no word with the text
        assert [hit["memory"] for hit in found["results"]][:1] == ["I moved to Paris last week."]
    got = values["m.get(memory_id)"]
    assert got is not None and got["memory"] == "I moved to Paris last week."
    assert [e["event"] for e in values["m.history(memory_id)"]] == ["ADD"]
    assert values["m.update(memory_id, '…')"]["result"]["memory"] == "…"
    assert values["m.delete(memory_id)"] == {"message": "Memory deleted successfully!"}
    assert values["m.get_all(user_id='ada')"] == {"results": []}
