"""memhub against the result shapes mem0ai 2.2 itself returned for the same script of calls.

The shapes were recorded by ``python -m bench.mem0_compat --record`` where mem0ai is installed
(the bench venv); here only memhub runs, on the real PostgreSQL and embedder. Its LLM is
``ScriptedOpenAIServer`` (memhub.testing), standing in because no capable model runs here.
Every difference must be one docs/mem0.md explains (``bench.mem0_compat.DIFFERENCES``).
"""

from __future__ import annotations

import json

from bench.mem0_compat import FIXTURE, STEPS, differences, explanation, memhub_shapes


def test_memhub_matches_recorded_mem0_shapes_but_for_explained_differences(db_url: str) -> None:
    recorded = json.loads(FIXTURE.read_text())
    assert set(recorded) == {s.name for s in STEPS}, "re-record: the script changed"
    ours = memhub_shapes(db_url)
    unexplained = [
        f"{name}: {path} (mem0 {theirs}, memhub {mine})"
        for name, entry in recorded.items()
        for path, theirs, mine in differences(entry["mem0"], ours[name])
        if explanation(name, path) is None
    ]
    assert unexplained == []


def test_the_drop_in_keys_are_there() -> None:
    recorded = json.loads(FIXTURE.read_text())
    # What Mem0 code reads most: ids from add(), results of search / get_all.
    assert set(recorded["add_infer_false"]["mem0"]["results"][0]) >= {"id", "memory", "event"}
    assert set(recorded["search"]["mem0"]["results"][0]) >= {"id", "memory", "score"}


def test_differences_reports_missing_extra_and_type_changes() -> None:
    mem0 = {"results": [{"id": "str", "score": "float"}]}
    memhub = {"results": [{"id": "int", "extra": "str"}]}
    assert differences(mem0, memhub) == [
        ("results[].extra", "missing", "str"),
        ("results[].id", "str", "int"),
        ("results[].score", "float", "missing"),
    ]
