"""Which stored facts a request to forget naming none by a word may mean (``forgetting.meant``),
with the real MiniLM embedder the suite runs (tests/fix_env.py); the model's yes-or-no question
that follows is driven end to end in tests/engine/test_attacks.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memhub.embed.onnx_minilm import MiniLMEmbedder
from memhub.engine.forgetting import BESIDE_ASKED, drawn_beside, meant, requests_naming_no_fact
from memhub.engine.operations import PlannedOp
from memhub.store.records import MemoryRecord, Scope, Turn

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def stored(text: str) -> MemoryRecord:
    return MemoryRecord(
        uuid.uuid4(), Scope("u"), text, text, {}, None, NOW, None, None, (), NOW, None
    )


@pytest.fixture(scope="module")
def embedder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


async def test_each_fact_is_asked_about_with_the_request_closest_to_it(
    embedder: MiniLMEmbedder,
) -> None:
    """Two requests in one turn, each naming a different fact by meaning only: each fact is
    put to the model's question with its own request, not with the first one's words."""
    salary, pills, city = (
        stored(t)
        for t in (
            "Ada is paid 48k a year.",
            "Ada takes sertraline for anxiety.",
            "Ada lives in Oslo.",
        )
    )
    said = (
        "Please forget the salary figure I gave you. And forget the medication thing from "
        "before too."
    )
    texts = {1: said}
    asks = requests_naming_no_fact(
        [Turn(1, "u", "s", "user", said, None, None, None)], texts, [salary, pills, city]
    )
    assert len(asks) == 2  # neither request shares a word with a stored fact

    found = await meant(embedder, asks, texts, [salary, pills, city])

    assert len(found) == 1 and found[0].until_a_yes
    by_fact = dict(found[0].candidates)
    assert set(by_fact) == {salary.id, pills.id}  # the two closest, never the city
    assert "salary" in by_fact[salary.id] and "medication" not in by_fact[salary.id]
    assert "medication" in by_fact[pills.id] and "salary" not in by_fact[pills.id]


async def test_a_fact_the_turn_asks_to_keep_is_never_meant(embedder: MiniLMEmbedder) -> None:
    """ "but don't forget where I live" keeps the city out of the candidates, however close."""
    salary, city = stored("Ada is paid 48k a year."), stored("Ada lives in Oslo.")
    said = "Please forget the salary figure I gave you, but don't forget where I live."
    texts = {1: said}
    asks = requests_naming_no_fact(
        [Turn(1, "u", "s", "user", said, None, None, None)], texts, [salary, city]
    )

    found = await meant(embedder, asks, texts, [salary, city])

    assert [a.facts for a in found] == [(salary.id,)]


def drawn_from(text: str, *turn_ids: int) -> MemoryRecord:
    return MemoryRecord(
        uuid.uuid4(), Scope("u"), text, text, {}, None, NOW, None, None, turn_ids, NOW, None
    )


def retiring(fact: MemoryRecord, said: str, turn_id: int = 9) -> PlannedOp:
    asking = Turn(turn_id, "u", "s", "user", said, None, None, None)
    return PlannedOp("DELETE", fact, None, (asking,), (turn_id,), unproposed=True)


def test_the_facts_drawn_beside_a_retired_fact_are_each_put_to_the_model() -> None:
    """A request retires the salary by its word; the two other facts the model drew from the
    same turn share no word with the request and are each asked about with the request's
    words (what it points back at); a fact of another turn is not asked about."""
    salary = drawn_from("The user's current salary is RM6,800.", 7)
    senior = drawn_from("The user's senior colleague at the same level earns RM7,500.", 7)
    increment = drawn_from("The user wants to ask for an increment.", 6, 7)
    cat = drawn_from("The user has a cat named Oyen.", 3)
    said = "Eh the salary number I told you last time, can delete or not? Don't want it kept."

    asks = drawn_beside([retiring(salary, said)], {9: said}, [salary, senior, increment, cat])

    assert [a.facts for a in asks] == [(senior.id, increment.id)]
    assert not asks[0].until_a_yes  # each asked on its own: two may both be meant
    assert all("salary number" in request for _, request in asks[0].candidates)


def test_nothing_beside_is_asked_about_that_the_turn_keeps_or_that_no_request_retired() -> None:
    salary = drawn_from("The user earns 48k.", 7)
    cat = drawn_from("The user has a cat named Oyen.", 7)
    raise_ = drawn_from("The user will ask for a raise.", 7)
    keeping = "Please forget my salary, but don't forget about the cat."
    assert [a.facts for a in drawn_beside([retiring(salary, keeping)], {9: keeping}, [cat])] == []
    # a change, not a request's retire: nothing asked
    change = PlannedOp("SUPERSEDE", salary, "The user earns 52k.", (), ())
    assert drawn_beside([change], {}, [cat, raise_]) == []
    # at most BESIDE_ASKED facts a retired fact, each asked once though two share the turn
    many = [drawn_from(f"The user owns shop number {n}.", 7) for n in range(5)]
    said = "please forget my salary and the raise"
    asks = drawn_beside(
        [retiring(salary, said), retiring(raise_, said)], {9: said}, [salary, raise_, *many]
    )
    assert [len(ask.facts) for ask in asks] == [BESIDE_ASKED, len(many) - BESIDE_ASKED]
    assert [fact for ask in asks for fact in ask.facts] == [m.id for m in many]
