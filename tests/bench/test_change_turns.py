"""bench.change_turns: its pairs load with their labels, a change is read only in the
person's own statements, and each question to the model shows the facts as data."""

from __future__ import annotations

import json

import pytest
from bench.attributes import Attributes
from bench.change_turns import (
    QUESTIONS,
    _rewrite_messages,
    _turn_messages,
    _verdict_messages,
    load,
    main,
    rewrite_lost,
    variant_names,
)

from memhub.embed import create_embedder
from memhub.engine.grounding import content_words


def test_the_pairs_load_with_the_sets_own_change_labels() -> None:
    pairs = load()
    assert len(pairs) == 47
    assert sum(pair.ends for pair in pairs) == 7
    assert all(pair.said and pair.stored and pair.new for pair in pairs)


def test_every_question_shows_the_stored_fact_as_data() -> None:
    pair = load()[0]
    for messages in (
        _turn_messages(pair, with_new_fact=False),
        _turn_messages(pair, with_new_fact=True),
        _verdict_messages(pair),
        _rewrite_messages(pair),
    ):
        assert [m["role"] for m in messages] == ["system", "user"]
        assert json.dumps(pair.stored, ensure_ascii=False) in messages[1]["content"]
    assert json.dumps(pair.new, ensure_ascii=False) in _verdict_messages(pair)[1]["content"]
    assert "new_fact" not in _turn_messages(pair, with_new_fact=False)[1]["content"]


def test_a_rewrite_is_a_change_only_when_it_drops_a_word_of_the_stored_fact() -> None:
    lost = rewrite_lost("The user is pescatarian.", "The user is vegan.")
    assert lost == content_words("pescatarian")  # stems, as grounding keeps them
    assert not rewrite_lost("The user lives in Adelaide.", "The user lives in Adelaide.")
    # adding what else was said keeps every stored word: not a change
    assert not rewrite_lost(
        "The user lives in Adelaide.", "The user lives in Adelaide and restores a BSA."
    )


def test_an_unknown_variant_is_refused_before_any_call() -> None:
    assert variant_names("verdict,rewrite") == ["verdict", "rewrite"]
    assert set(QUESTIONS) == {"pair", "turn", "both", "verdict", "rewrite", "qa", "qa_new"}
    with pytest.raises(SystemExit):
        main(["--url", "http://127.0.0.1:9/v1", "--variants", "pair,nope"])


async def test_facts_of_one_attribute_are_placed_together_and_others_apart() -> None:
    """bench.attributes by a real embedder (MiniLM, the tests' own; the bar was set on the
    default all-mpnet-base-v2, where ``bench.change_turns`` prints what it separates)."""
    embedder = create_embedder("minilm")
    try:
        given = await Attributes(embedder).of(
            [
                "The user is pescatarian.",
                "The user went fully vegan since April 2024.",
                "The user lives in Dayton Ohio.",
                "The user is moving out to Tucson in February.",
                "The user uses a Samsung A14 phone.",
                "The user upgraded to an iPhone 15.",
                "The user failed the first Orgo midterm.",
                "The user has a dog named Rex.",
            ]
        )
        assert given == ["diet", "diet", "home", "home", "phone", "phone", None, None]
        assert await Attributes(embedder).of([]) == []
    finally:
        await embedder.aclose()
