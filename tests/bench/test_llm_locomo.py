"""The pure part of bench.llm_locomo: from memories' source turns to LoCoMo evidence recall.

No model and no data: the conversation is built inline.
"""

from datetime import datetime

import pytest
from bench.llm_locomo import (
    Asked,
    best_source,
    fits,
    memory_dia_ids,
    questions_in,
    recall_of_memories,
    sources,
    summarize,
    turn_dia_ids,
)
from bench.locomo import Conversation, Question, Turn
from bench.metrics import recall_at_k

WHEN = datetime(2023, 5, 8, 13, 56)


def conversation() -> Conversation:
    turns = tuple(
        Turn(f"D{s}:{n}", "Ana", f"s{s} t{n}", s, WHEN) for s in (1, 2, 3) for n in (1, 2)
    )
    questions = (
        Question("in 1", 4, ("D1:1",)),
        Question("in 1 and 2", 1, ("D1:2", "D2:1")),
        Question("reaches 3", 2, ("D1:1", "D3:2")),
        Question("adversarial", 5, ("D1:1",)),
        Question("no evidence", 4, ()),
    )
    return Conversation("conv-x", ("Ana", "Ben"), turns, questions)


def test_questions_kept_only_when_all_their_evidence_was_ingested() -> None:
    assert [q.question for q in questions_in(conversation(), 2)] == ["in 1", "in 1 and 2"]
    assert len(questions_in(conversation(), 3)) == 3  # never category 5 nor without evidence


def test_turn_ids_pair_with_the_messages_in_order() -> None:
    assert turn_dia_ids([7, 8], ["D1:1", "D1:2"]) == {7: "D1:1", 8: "D1:2"}
    with pytest.raises(ValueError, match="2 turns for 3 messages"):
        turn_dia_ids([7, 8], ["D1:1", "D1:2", "D1:3"])


def test_sources_join_every_change_and_the_metadata() -> None:
    history = [{"event": "ADD", "turn_ids": [5, 3]}, {"event": "UPDATE", "turn_ids": [9, 5]}]
    assert sources(history, {"source_turn_ids": [3, 11]}) == [5, 3, 9, 11]
    assert sources([], {}) == []
    known = {3: "D1:1", 5: "D1:2", 9: "D2:1"}
    assert memory_dia_ids([5, 3, 9, 11], known) == ["D1:2", "D1:1", "D2:1"]  # 11: elsewhere


def test_a_fact_from_several_turns_covers_each_of_them() -> None:
    ranked = [("D1:5",), ("D2:1", "D1:2"), ()]
    assert recall_of_memories(ranked, ["D1:2", "D2:1"]) == 1.0
    assert recall_of_memories(ranked, ["D1:2", "D3:3"]) == 0.5
    assert recall_of_memories(ranked, ["D1:2"], k=1) == 0.0  # only the first memory counts
    with pytest.raises(ValueError):
        recall_of_memories(ranked, [])


def test_one_turn_per_memory_is_the_usual_recall_at_k() -> None:
    ranked = [f"D1:{n}" for n in range(1, 15)]
    for evidence in (["D1:3"], ["D1:10", "D1:11"], ["D1:14", "D1:1"]):
        expected = recall_at_k(ranked, evidence, 10)
        assert recall_of_memories([(d,) for d in ranked], evidence, 10) == expected


def test_the_best_source_is_the_turn_that_says_most_of_the_fact() -> None:
    texts = {
        "D1:1": "Jon: I lost my job as a banker.",
        "D1:2": "Jon: I want to open a dance studio by the water.",
        "D1:3": "Jon: Dance is my passion.",
    }
    cited = ["D1:1", "D1:3", "D1:2"]
    assert best_source("Jon plans to open a dance studio.", cited, texts) == ("D1:2",)
    assert best_source("Jon likes the sea.", cited, texts) == ("D1:1",)  # a tie: first cited
    assert best_source("anything", [], texts) == ()


def test_summary_per_category_and_overall() -> None:
    asked = [
        Asked(4, ("D1:1",), (("D1:1",), ("D1:2",)), (("D1:1",), ("D1:2",))),
        Asked(4, ("D1:3",), (("D1:1", "D1:2", "D1:3"),), (("D1:1",),)),
        Asked(2, ("D1:1", "D1:2"), (("D1:2",),), (("D1:2",),)),
    ]
    table = summarize(asked)
    assert table["single-hop"] == {
        "questions": 2,
        "recall@10": 1.0,
        "recall@10_one_turn": 0.5,  # the wide fact's best turn is not the evidence
        "hit@10": 1.0,
        "source_turns@10": 2.5,
    }
    assert table["temporal"]["recall@10"] == 0.5
    assert table["overall"]["questions"] == 3
    assert table["overall"]["recall@10"] == round(2.5 / 3, 3)
    assert table["overall"]["recall@10_one_turn"] == 0.5  # (1 + 0 + 0.5) / 3


def test_a_session_starts_only_if_the_slowest_pace_ends_in_the_budget() -> None:
    done = [{"seconds": 100.0}, {"seconds": 300.0}]
    assert fits(0.0, [], 10.0)  # the first session always runs
    assert fits(500.0, done, None)
    assert fits(700.0, done, 1000.0)
    assert not fits(701.0, done, 1000.0)
