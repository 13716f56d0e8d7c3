"""The one ranking of a search's candidates, and the checks of its cut-offs: no database."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

import pytest

from memhub.engine.retrieve import Search, rank
from memhub.engine.search_config import SearchConfig
from memhub.errors import UsageError
from memhub.store.records import RawCandidate, Scope
from tests.records import memory_record

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def _found(hash_: str, sim: float | None, text: float | None) -> RawCandidate:
    record = memory_record(
        id=uuid.uuid5(uuid.NAMESPACE_OID, hash_), memory=f"memory {hash_}", hash=hash_, at=NOW
    )
    return RawCandidate(record, sim, text)


def test_each_signal_is_ranked_best_first_and_a_missing_signal_is_unranked() -> None:
    ranked = rank([_found("a", 0.2, None), _found("b", 0.9, 1.5), _found("c", None, 3.0)])
    assert [(c.record.hash, c.vector_rank, c.text_rank) for c in ranked] == [
        ("a", 2, None),
        ("b", 1, 2),
        ("c", None, 1),
    ]


def test_the_ranking_is_a_function_of_the_data_not_of_the_order_found() -> None:
    # Text scores equal but for the last bits (BM25 sums in another order) and equal cosines.
    found = [
        _found("d", 0.5, 2.0000000000001),
        _found("b", 0.5, 2.0),
        _found("c", 0.7, 1.9999999999999),
        _found("a", 0.5, 1.0),
    ]
    first = rank(found)
    for seed in range(5):
        shuffled = found[:]
        random.Random(seed).shuffle(shuffled)
        assert rank(shuffled) == first
    # Ties go by hash: the list is in hash order, and equal signals rank in that order.
    assert [c.record.hash for c in first] == ["a", "b", "c", "d"]
    assert {c.record.hash: c.text_rank for c in first} == {"a": 4, "b": 1, "c": 2, "d": 3}
    assert {c.record.hash: c.vector_rank for c in first} == {"a": 2, "b": 3, "c": 1, "d": 4}
    assert {c.text_score for c in first if c.record.hash != "a"} == {2.0}


@pytest.mark.parametrize(
    ("threshold", "max_tokens", "message"),
    [(1.5, None, "threshold"), (-0.1, None, "threshold"), (None, 0, "max_tokens")],
)
def test_cut_offs_are_refused_before_anything_runs(
    threshold: float | None, max_tokens: int | None, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        Search("q", Scope(user_id="u"), 10, threshold=threshold)
        SearchConfig(max_tokens=max_tokens)
