"""bench.longmemeval's parts that decide its figures: dates, the subset, the scoring."""

from __future__ import annotations

from datetime import datetime

from bench.longmemeval import Item, aggregate, parse_date, parse_item, score, select


def _item(question_id: str, kind: str, answers: frozenset[str] = frozenset({"s2"})) -> Item:
    return Item(question_id, kind, "q?", (), (), (), answers)


def test_dates_read_as_longmemeval_writes_them() -> None:
    assert parse_date("2023/05/20 (Sat) 02:21") == datetime(2023, 5, 20, 2, 21)


def test_an_item_keeps_the_date_its_question_is_asked_on() -> None:
    raw = {
        "question_id": "q1",
        "question_type": "temporal-reasoning",
        "question": "What kitchen appliance did I buy 10 days ago?",
        "question_date": "2023/03/25 (Sat) 18:26",
        "answer": "a smoker",
        "answer_session_ids": ["s1"],
        "haystack_dates": ["2023/03/15 (Wed) 11:56"],
        "haystack_session_ids": ["s1"],
        "haystack_sessions": [[{"role": "user", "content": "I just got a smoker today."}]],
    }
    item = parse_item(raw)
    assert item.question_date == datetime(2023, 3, 25, 18, 26)
    assert parse_item({**raw, "question_date": ""}).question_date is None


def test_halves_are_alternate_questions_of_each_type_and_disjoint() -> None:
    items = [_item(f"{kind}{n}", kind) for kind in ("b", "a") for n in range(5)]
    half_a = select(items, "a", None, None)
    half_b = select(items, "b", None, None)
    assert [i.question_id for i in half_a] == ["a0", "a2", "a4", "b0", "b2", "b4"]
    assert [i.question_id for i in half_b] == ["a1", "a3", "b1", "b3"]
    assert [i.question_id for i in select(items, "b", ["b"], 1)] == ["b1"]


def test_session_and_turn_recall_and_tokens() -> None:
    item = _item("q", "multi-session", frozenset({"s1", "s3"}))
    where = {"m1": ("s1", True), "m2": ("s2", False), "m3": ("s3", True), "m4": ("s3", True)}
    found = [{"id": i, "memory": "x" * 8} for i in ("m2", "m1", "m9", "m4")]
    scored = score(item, found, where, lambda text: len(text) // 4)
    assert (scored.any_at_5, scored.all_at_5) == (True, True)
    assert scored.turn_recall_10 == 2 / 3 and scored.tokens_10 == 8
    only_first = score(item, found[:2], where, lambda text: 1)
    assert (only_first.any_at_5, only_first.all_at_5) == (True, False)
    overall = aggregate([scored, only_first])
    assert overall["all@5"] == 0.5 and overall["questions"] == 2


def test_the_answers_words_kept_by_what_a_result_returns() -> None:
    item = Item(
        "q", "single-session-assistant", "q?", (), (), (), frozenset({"s1"}), "Osteria in Modena"
    )
    where = {"m1": ("s1", True)}
    whole = {"m1": "We ate at Osteria Francescana. It is in Modena, near the station."}
    cut = [{"id": "m1", "memory": "We ate at Osteria Francescana.", "passage": {}}]
    assert score(item, cut, where, len, whole).answer_kept == 0.5  # Modena cut away
    full = [{"id": "m1", "memory": whole["m1"]}]
    assert score(item, full, where, len, {}).answer_kept == 1.0
    elsewhere = [{"id": "m1", "memory": "nothing of it"}]
    assert score(item, elsewhere, where, len, {}).answer_kept is None  # no answer word to keep
    rubric = Item("p", "single-session-preference", "q?", (), (), (), frozenset(), "Modena")
    assert score(rubric, full, where, len, {}).answer_kept is None
