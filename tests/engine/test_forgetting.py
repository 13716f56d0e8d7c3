"""Which stored facts a request to forget naming none by a word may mean (``forgetting.meant``),
with the real MiniLM embedder the suite runs (tests/fix_env.py); the model's yes-or-no question
that follows is driven end to end in tests/engine/test_attacks.py."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest

from memhub.embed.onnx_minilm import MiniLMEmbedder
from memhub.engine.forgetting import meant, requests_naming_no_fact
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
