"""The quality bench's judge on hand-made stored memories: each category is reachable, and a
memory holding a label's words still fails when it is a copy, a raw turn or assistant text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from bench.llm_quality import SETS, Score, is_episode, judge, says, score_one

USER = "u-t01"

CONV: dict[str, Any] = {
    "id": "t01",
    "sessions": [
        {
            "date": "2023-02-01T10:00:00",
            "messages": [
                {"role": "system", "content": "You are a travel assistant. Policy: no cards."},
                {"role": "user", "content": "I live in Madrid and I'm allergic to peanuts."},
                {"role": "assistant", "content": "Mars has two moons, Phobos and Deimos."},
            ],
        },
        {
            "date": "2023-05-15T10:00:00",
            "messages": [
                {"role": "user", "content": "We moved to Dublin last week! Forget my salary."},
                {"role": "user", "content": "My friend Tom lives in Oslo."},
            ],
        },
    ],
    "facts": [
        {"about": "user", "all": ["dublin"]},
        {"about": "user", "all": ["allerg", "peanut"]},
        {"about": "Tom", "all": ["oslo"]},
    ],
    "changes": [
        {
            "old": {"about": "user", "all": ["madrid"], "not": ["moved from"]},
            "new": {"about": "user", "all": ["dublin"]},
        }
    ],
    "forgotten": [{"about": "user", "all": ["salary"]}],
    "assistant_words": ["phobos"],
}


@pytest.mark.parametrize(
    ("memory", "category"),
    [
        ("The user is allergic to peanuts.", "supported"),
        ("The user moved to Dublin in the week of 2023-05-08.", "supported"),
        ("The user's friend Tom lives in Oslo.", "supported"),
        ("I live in Madrid and I'm allergic to peanuts.", "raw_turn"),
        ("u-t01: My friend Tom lives in Oslo.", "raw_turn"),
        ("u-t01: allergic to peanuts, lives in Madrid", "copy_of_turn"),
        ("I'm allergic to peanuts.", "copy_of_turn"),
        ("My friend Tom lives in Oslo, says the user.", "copy_of_turn"),
        ("We moved to Dublin.", "copy_of_turn"),
        ("live in Madrid and allergic to peanuts", "copy_of_turn"),
        ("Tom lives in Oslo.", "copy_of_turn"),
        # a third-person rewrite is the system's words whether or not it starts with an
        # article: 7 of its 8 words are the turn's in order, but it names the user (here it
        # says what a later turn changed)
        ("User live in Madrid and allergic to peanuts", "stale"),
        ("User's friend Tom lives in Oslo.", "supported"),
        ("Mars has two moons, Phobos and Deimos.", "assistant_text"),
        ("The user knows about Phobos.", "assistant_text"),
        ("You are a travel assistant.", "assistant_text"),
        ("The user lives in Madrid.", "stale"),
        ("The user asked to forget their salary.", "forgotten"),
        ("The user likes Oslo.", "wrong"),
        ("Tom is allergic to peanuts.", "wrong"),
        ("u-t01 moved to Dublin.", "wrong"),
    ],
)
def test_each_memory_gets_the_category_a_person_would_give(memory: str, category: str) -> None:
    assert judge(memory, CONV, USER) == category


def test_a_copy_holding_every_labelled_word_is_not_recall() -> None:
    score = Score()
    result = score_one(CONV, ["I'm allergic to peanuts."], [], USER, score)
    assert result["verdicts"] == ["copy_of_turn"]
    assert (score.kept, score.to_keep) == (0, 3)
    assert score.row()["precision"] == 0.0


def test_changes_and_forgets_are_judged_on_stored_facts() -> None:
    score = Score()
    facts = ["The user lives in Dublin.", "The user lives in Madrid."]
    episodes = ["Forget my salary. My salary is 50k."]
    result = score_one(CONV, facts, episodes, USER, score)
    assert result["changes_right"] == [False]  # Madrid still stored
    assert result["forgets_honoured"] == [True]  # no fact says it ...
    assert score.forgotten_in_episodes == 1  # ... though an episode does
    score = Score()
    result = score_one(CONV, ["The user moved from Madrid to Dublin."], [], USER, score)
    assert result["changes_right"] == [True]
    assert score.row()["precision"] == 1.0


def test_a_label_names_its_subject() -> None:
    label = {"about": "Tom", "all": ["oslo"], "not": ["visit"]}
    assert says(label, "The user's friend Tom lives in Oslo.")
    assert not says(label, "The user lives in Oslo.")
    assert not says(label, "Tom will visit Oslo.")
    assert says(label, "The user lives in Oslo.", subject=False)


def test_episodes_are_told_from_facts() -> None:
    assert is_episode({"memory": "Hi", "role": "user"})
    assert is_episode({"memory": "Hi", "kind": "episode"})
    assert is_episode({"memory": "Hi", "memory_type": "turn"})
    assert not is_episode({"memory": "The user is a nurse.", "kind": "fact"})


@pytest.mark.parametrize("name", sorted(SETS))
def test_every_label_can_be_met_by_a_fact_in_the_systems_words(name: str) -> None:
    """Each labelled set is consistent: its labels compile, and the judge can find a
    supported fact for every label (a hand-written one), so recall 1.0 is reachable."""
    conversations = json.loads(SETS[name].read_text())["conversations"]
    assert len(conversations) >= 6
    for conv in conversations:
        for label in [*conv["facts"], *conv.get("also", ())]:
            subject = (
                "The user" if label["about"] == "user" else f"The user's friend {label['about']}"
            )
            words = " ".join(p.split("|")[0] for p in label["all"])
            fact = f"{subject} fact: {words}."
            assert judge(fact, conv, f"u-{conv['id']}") == "supported", (conv["id"], fact)


@pytest.mark.parametrize(
    ("memory", "lenient", "strict"),
    [
        # the turn with only its subject swapped: a rewrite to the default judge, a copy strictly
        ("The user's friend Tom lives in Oslo.", "supported", "copy_of_turn"),
        ("User's friend Tom lives in Oslo.", "supported", "copy_of_turn"),
        # in the system's own words under either reading
        ("The user is allergic to peanuts.", "supported", "supported"),
        ("The user moved to Dublin in the week of 2023-05-08.", "supported", "supported"),
    ],
)
def test_the_strict_reading_counts_a_subject_swap_as_a_copy(
    memory: str, lenient: str, strict: str
) -> None:
    assert judge(memory, CONV, USER) == lenient
    assert judge(memory, CONV, USER, strict=True) == strict


def test_also_labels_count_as_supported_but_recall_asks_only_for_the_facts() -> None:
    conv = CONV | {"also": [{"about": "user", "all": ["cello"]}]}
    score = Score()
    result = score_one(conv, ["The user plays the cello."], [], USER, score)
    assert result["verdicts"] == ["supported"]
    assert score.row()["precision"] == 1.0
    assert (score.kept, score.to_keep) == (0, 3)
    assert judge("The user plays the cello.", CONV, USER) == "wrong"  # without the label


def test_a_fact_saying_the_news_is_not_stale_for_naming_the_old_state() -> None:
    both = "The user left Madrid and lives in Dublin now."
    assert judge(both, CONV, USER) == "supported"
    assert judge("The user lives in Madrid.", CONV, USER) == "stale"
    score = Score()
    assert score_one(CONV, [both], [], USER, score)["changes_right"] == [True]


@pytest.mark.parametrize(
    "memory",
    ["The user is talking about peanuts.", "User asked about Lyon.", "The user said hello."],
)
def test_a_report_of_the_conversation_is_not_a_fact(memory: str) -> None:
    conv = CONV | {"also": [{"about": "user", "all": ["peanut|lyon|hello"]}]}
    assert judge(memory, conv, USER) == "wrong"
    assert judge("The user is allergic to peanuts.", conv, USER) == "supported"
