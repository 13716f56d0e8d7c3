"""bench.question_spans, the two ideas docs/retrieval.md measures and memhub does not ship:
the span of the past a question names, its parts, and the merge of two rankings."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from bench.question_spans import dated_search, merge_rankings, query_parts, query_window

ASKED = datetime(2023, 5, 30, 21, 0, tzinfo=UTC)  # a Tuesday


def _days(window: tuple[datetime, datetime] | None) -> tuple[str, str] | None:
    return None if window is None else (f"{window[0]:%Y-%m-%d %H}", f"{window[1]:%Y-%m-%d %H}")


@pytest.mark.parametrize(
    ("question", "window"),
    [
        ("What did I buy 10 days ago?", ("2023-05-19 00", "2023-05-22 00")),  # a day either side
        ("the gift I ordered two weeks ago", ("2023-05-12 00", "2023-05-21 00")),
        ("How often did I bake in the past two weeks?", ("2023-05-16 21", "2023-05-30 21")),
        ("babies born in the last few months", ("2023-03-01 21", "2023-05-30 21")),
        ("what I said in the past week", ("2023-05-23 21", "2023-05-30 21")),
        ("eggs sold this month", ("2023-05-01 00", "2023-06-01 00")),
        ("the cocktail I tried last weekend", ("2023-05-27 00", "2023-05-29 00")),
        ("Where was I last week?", ("2023-05-22 00", "2023-05-29 00")),
        ("my trip last year", ("2022-01-01 00", "2023-01-01 00")),
        ("What did I eat yesterday?", ("2023-05-29 00", "2023-05-30 00")),
        ("How many days ago did I read it?", None),
        ("Any recipes for next week?", None),
        ("What should I cook today?", None),
        ("Where do I live?", None),
    ],
)
def test_a_question_names_a_span_of_the_past(question: str, window: tuple[str, str] | None) -> None:
    assert _days(query_window(question, ASKED)) == window


def test_a_span_before_the_calendar_begins_is_none() -> None:
    assert query_window("What did I say 3 years ago?", datetime(1, 1, 20, tzinfo=UTC)) is None


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        ("Which group did I join first, 'Page Turners' or 'Marketing Professionals'?",
         ("Page Turners", "Marketing Professionals")),
        ("What is the total cost of the car cover and detailing spray I purchased?",
         ("What is the total cost of the car cover", "detailing spray I purchased?")),
        ("What do Melanie and Caroline both like?", ()),  # "Melanie" alone says nothing
        ("How many days after St. Mary's mass?", ()),
    ],
)  # fmt: skip
def test_the_things_a_question_names(question: str, parts: tuple[str, ...]) -> None:
    assert query_parts(question) == parts


def _r(name: str, score: float, day: str = "2023-01-01") -> dict[str, Any]:
    return {"id": name, "score": score, "valid_from": day}


def test_the_second_ranking_is_scaled_to_the_firsts_best() -> None:
    whole = [_r("a", 0.8), _r("b", 0.6), _r("c", 0.5)]
    then = [_r("d", 0.4, "2023-03-15"), _r("b", 0.2)]
    merged = merge_rankings(whole, then)
    assert [(r["id"], round(r["score"], 6)) for r in merged] == [
        ("d", 0.8),  # ties the whole's best, and is newer
        ("a", 0.8),
        ("b", 0.6),  # the better of its two scores
        ("c", 0.5),
    ]
    assert merge_rankings(whole, []) == whole


def test_a_dated_search_filters_on_the_span_only_when_the_question_names_one() -> None:
    calls: list[dict[str, Any]] = []

    def search(query: str, **options: Any) -> list[dict[str, Any]]:
        calls.append(options)
        return [_r("x", 0.5)]

    dated_search(search, "Where do I live?", ASKED)
    dated_search(search, "What did I buy 10 days ago?", None)
    assert calls == [{}, {}]
    dated_search(search, "What did I buy 10 days ago?", ASKED)
    assert calls[-1] == {
        "filters": {
            "AND": [
                {"valid_from": {"gte": "2023-05-19T00:00:00+00:00"}},
                {"valid_from": {"lt": "2023-05-22T00:00:00+00:00"}},
            ]
        }
    }
