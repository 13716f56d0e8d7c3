"""A fact drawn from a turn tells that turn's place in the episodes' ranking, or nothing.

``told_once`` runs on the episodes and the facts each fused among themselves
(tests/engine/test_episodes.py drives it end to end through ``add(infer=True)`` and
``search``); here it is fed ranked candidates directly.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from memhub.engine.fusion import ScoredCandidate
from memhub.engine.retrieve import Search, _kept, told_once
from memhub.store.records import Candidate, MemoryRecord, Scope

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def episode(turn: int, score: float = 0.5) -> ScoredCandidate:
    return _scored(f"turn {turn} as said", (turn,), role="user", score=score)


def fact(text: str, *turns: int, score: float = 0.5) -> ScoredCandidate:
    return _scored(text, turns, role=None, score=score)


def _scored(
    text: str, turns: tuple[int, ...], role: str | None, score: float = 0.5
) -> ScoredCandidate:
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
    return ScoredCandidate(Candidate(record, score, 1, None, None), score)


def told(episodes: list[ScoredCandidate], facts: list[ScoredCandidate]) -> list[str]:
    return [s.candidate.record.memory for s in told_once(episodes, facts)]


def test_a_fact_tells_its_turn_in_the_place_of_the_episode_with_that_place_s_score() -> None:
    episodes = [episode(1, 0.9), episode(2, 0.7), episode(3, 0.4)]
    allergy = fact("Ada is allergic to shellfish.", 2, score=0.95)
    result = told_once(episodes, [allergy])
    assert [s.candidate.record.memory for s in result] == [
        "turn 1 as said",
        "Ada is allergic to shellfish.",
        "turn 3 as said",
    ]
    assert [s.score for s in result] == [0.9, 0.7, 0.4]  # the transcript's order and scores


def test_a_fact_scoring_below_its_turn_s_episode_leaves_the_episode() -> None:
    episodes = [episode(1, 0.9), episode(2, 0.7)]
    assert told(episodes, [fact("Ada lives in Oslo.", 2, score=0.3)]) == [
        "turn 1 as said",
        "turn 2 as said",
    ]


def test_facts_of_turns_not_found_take_no_place() -> None:
    # however well they score: the turns found are the transcript's, whatever a model drew
    episodes = [episode(1, 0.4), episode(2, 0.3)]
    assert told(episodes, [fact("Ada moved to Berlin.", 7, score=1.0)]) == [
        "turn 1 as said",
        "turn 2 as said",
    ]


def test_one_place_one_telling_the_best_fact_first() -> None:
    episodes = [episode(1, 0.5), episode(2, 0.4)]
    facts = [
        fact("Ada lives in Oslo.", 1, score=0.8),
        fact("Ada is allergic to shellfish.", 1, score=0.6),  # same turn: its place is taken
    ]
    assert told(episodes, facts) == ["Ada lives in Oslo.", "turn 2 as said"]


def test_a_fact_citing_several_turns_tells_the_best_placed_of_them() -> None:
    episodes = [episode(n, 1.0 - n / 10) for n in range(1, 6)]
    marathon = fact("Ada trained for a marathon all spring.", 4, 2, 5, score=0.9)
    assert told(episodes, [marathon]) == [
        "turn 1 as said",
        "Ada trained for a marathon all spring.",
        "turn 3 as said",
        "turn 4 as said",
        "turn 5 as said",
    ]


def test_without_facts_the_episodes_are_returned_as_ranked() -> None:
    episodes = [episode(1), episode(2), fact("Ada prefers tea.")]  # a fact stated directly
    assert told_once(episodes, []) == episodes


def kept(
    ranked: list[ScoredCandidate],
    limit: int = 10,
    max_tokens: int | None = None,
    threshold: float | None = None,
) -> list[str]:
    """What a search returns of ``ranked``: the cut-offs (texts whole: the excerpts have
    tests of their own)."""
    search = Search("q", Scope(user_id="ada"), limit, threshold=threshold)
    return [s.candidate.record.memory for s in _kept(ranked, search, max_tokens, 0)]


def test_the_budget_skips_what_does_not_fit_and_keeps_what_does() -> None:
    long_episode = _scored("I am severely allergic to shellfish. " * 20, (1,), role="user")
    assert kept([long_episode, episode(2)], max_tokens=50) == ["turn 2 as said"]
    assert len(kept([long_episode, episode(2)])) == 2


def test_the_threshold_and_the_limit() -> None:
    ranked = [episode(1, 0.9), episode(2, 0.5), episode(3, 0.2)]
    assert kept(ranked, threshold=0.5) == ["turn 1 as said", "turn 2 as said"]
    assert kept(ranked, limit=1) == ["turn 1 as said"]
