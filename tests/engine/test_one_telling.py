"""One search ranks facts and episodes together without telling one turn twice.

``one_telling`` runs on the fused ranking (tests/engine/test_episodes.py drives it end to end
through ``add(infer=True)`` and ``search``); here it is fed ranked candidates directly.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from memhub.engine.fusion import ScoredCandidate
from memhub.engine.retrieve import Search, _kept, one_telling
from memhub.store.records import Candidate, MemoryRecord, Scope

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def episode(turn: int) -> ScoredCandidate:
    return _scored(f"turn {turn} as said", (turn,), role="user")


def fact(text: str, *turns: int) -> ScoredCandidate:
    return _scored(text, turns, role=None)


def _scored(text: str, turns: tuple[int, ...], role: str | None) -> ScoredCandidate:
    record = MemoryRecord(
        id=uuid.uuid4(),
        scope=Scope(user_id="ada"),
        memory=text,
        hash=text,
        metadata={},
        memory_type=None,
        valid_from=NOW,
        valid_to=None,
        superseded_by=None,
        source_turn_ids=turns,
        created_at=NOW,
        updated_at=None,
        role=role,
    )
    return ScoredCandidate(Candidate(record, 0.5, 1, None, None), 0.5)


def texts(ranked: list[ScoredCandidate]) -> list[str]:
    return [s.candidate.record.memory for s in one_telling(ranked)]


def test_a_fact_below_its_only_episode_is_dropped() -> None:
    assert texts([episode(1), fact("Ada is allergic to shellfish.", 1), episode(2)]) == [
        "turn 1 as said",
        "turn 2 as said",
    ]


def test_an_episode_below_a_fact_of_that_turn_alone_is_dropped() -> None:
    assert texts([fact("Ada is allergic to shellfish.", 1), episode(2), episode(1)]) == [
        "Ada is allergic to shellfish.",
        "turn 2 as said",
    ]


def test_a_fact_citing_many_turns_removes_no_episode() -> None:
    many = fact("Ada trained for a marathon all spring.", *range(1, 25))
    ranked = [many, *(episode(n) for n in range(1, 25))]
    assert texts(ranked) == [
        "Ada trained for a marathon all spring.",
        *(f"turn {n} as said" for n in range(1, 25)),
    ]


def test_a_fact_whose_turns_are_all_told_above_is_dropped() -> None:
    both = fact("Ada moved from Paris to Berlin.", 1, 2)
    assert texts([episode(1), both, episode(2)]) == [
        "turn 1 as said",
        "Ada moved from Paris to Berlin.",
        "turn 2 as said",
    ]
    assert texts([episode(1), episode(2), both]) == ["turn 1 as said", "turn 2 as said"]


def test_facts_never_remove_facts_and_episodes_never_remove_episodes() -> None:
    ranked = [
        fact("Ada lives in Oslo.", 1),
        fact("Ada is allergic to shellfish.", 1),
        episode(2),
        _scored("turn 2 as said", (2,), role="user"),  # the same words said twice
    ]
    assert texts(ranked) == [
        "Ada lives in Oslo.",
        "Ada is allergic to shellfish.",
        "turn 2 as said",
        "turn 2 as said",
    ]


def test_a_fact_citing_no_turn_is_kept() -> None:
    assert texts([episode(1), fact("Ada prefers tea.")]) == ["turn 1 as said", "Ada prefers tea."]


def test_facts_only_or_episodes_only_rankings_are_unchanged() -> None:
    facts = [fact("Ada lives in Oslo.", 1), fact("Ada likes tea.", 1), fact("Ada runs.", 1, 2)]
    episodes = [episode(1), episode(2), episode(3)]
    assert one_telling(facts) == facts
    assert one_telling(episodes) == episodes


def kept(
    ranked: list[ScoredCandidate], limit: int = 10, max_tokens: int | None = None
) -> list[str]:
    """What a search returns of ``ranked``: the rule applied with the cut-offs."""
    search = Search("q", Scope(user_id="ada"), limit, max_tokens=max_tokens)
    return [s.candidate.record.memory for s in _kept(ranked, search)]


def test_a_result_the_budget_skips_tells_nothing() -> None:
    long_episode = _scored("I am severely allergic to shellfish. " * 20, (1,), role="user")
    short_fact = fact("Ada is allergic to shellfish.", 1)
    # the episode does not fit 50 tokens, so the fact of its turn is returned instead
    assert kept([long_episode, short_fact], max_tokens=50) == ["Ada is allergic to shellfish."]
    assert len(kept([long_episode, short_fact])) == 1  # without a budget: the episode alone


def test_the_limit_counts_what_is_returned() -> None:
    ranked = [episode(1), fact("Ada is allergic to shellfish.", 1), episode(2), episode(3)]
    assert kept(ranked, limit=2) == ["turn 1 as said", "turn 2 as said"]
