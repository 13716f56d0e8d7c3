"""Fusion of vector, text, rank and recency signals: pure logic, no database."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memhub.engine.fusion import PRESETS, FusionConfig, fuse
from memhub.errors import UsageError
from memhub.store.records import Candidate, MemoryRecord, Scope, TextRanking

NOW = datetime(2025, 1, 1, tzinfo=UTC)


def _candidate(
    sim: float | None,
    vrank: int | None,
    text: float | None,
    trank: int | None,
    age_days: float = 0.0,
    turn: int | None = None,
    previous_turn: int | None = None,
    role: str | None = None,
    memory: str = "m",
) -> Candidate:
    at = NOW - timedelta(days=age_days)
    record = MemoryRecord(
        id=uuid.uuid4(),
        scope=Scope(user_id="u"),
        memory=memory,
        hash="h",
        metadata={},
        memory_type=None,
        valid_from=at,
        valid_to=None,
        superseded_by=None,
        source_turn_ids=() if turn is None else (turn,),
        created_at=at,
        updated_at=None,
        role=role,
    )
    return Candidate(record, sim, vrank, text, trank, previous_turn)


def test_weights_must_add_up_to_one_and_not_be_negative() -> None:
    with pytest.raises(UsageError, match="add up to 1"):
        FusionConfig(vector_weight=0.5, text_weight=0.1, rrf_weight=0.1)
    with pytest.raises(UsageError, match="negative"):
        FusionConfig(vector_weight=1.2, text_weight=-0.2, rrf_weight=0.0)


@pytest.mark.parametrize(
    "field", ["term_cap", "scope_cap", "neighbour_words_max", "neighbour_words_turns"]
)
def test_text_ranking_counts_must_not_be_negative(field: str) -> None:
    # a negative LIMIT would be PostgreSQL's error at search time, not the caller's
    with pytest.raises(UsageError, match=f"TextRanking.{field} must be 0 or more"):
        TextRanking(**{field: -1})  # type: ignore[arg-type]
    assert getattr(TextRanking(**{field: 0}), field) == 0  # type: ignore[arg-type]


def test_presets_are_valid_and_only_puts_all_weight_on_one_signal() -> None:
    assert set(PRESETS) >= {"default", "compact", "semantic", "keyword", "recent"}
    only = FusionConfig.only("text")
    assert (only.vector_weight, only.text_weight, only.rrf_weight) == (0.0, 1.0, 0.0)
    recent = PRESETS["default"].with_recency(0.2, 7.0)
    total = recent.vector_weight + recent.text_weight + recent.rrf_weight + recent.recency_weight
    assert total == pytest.approx(1.0)
    assert recent.recency_half_life_days == 7.0


def test_a_candidate_found_by_both_retrievers_beats_one_found_by_one() -> None:
    both = _candidate(0.6, 1, 4.0, 1)
    vector_only = _candidate(0.6, 2, None, None)
    text_only = _candidate(None, None, 4.0, 2)
    ranked = fuse([text_only, vector_only, both], PRESETS["default"], NOW)
    assert ranked[0].candidate is both


def test_the_best_candidate_of_every_signal_scores_one() -> None:
    best = _candidate(1.0, 1, 3.0, 1)
    (scored,) = fuse([best], FusionConfig(), NOW)
    assert scored.score == pytest.approx(1.0)


def test_recency_prefers_the_newer_of_two_equal_candidates() -> None:
    old = _candidate(0.5, 1, 2.0, 1, age_days=90)
    new = _candidate(0.5, 1, 2.0, 1, age_days=1)
    ranked = fuse([old, new], PRESETS["recent"], NOW)
    assert ranked[0].candidate is new
    assert ranked[0].score > ranked[1].score


signals = st.tuples(
    st.one_of(st.none(), st.floats(-1.0, 1.0)),
    st.one_of(st.none(), st.integers(1, 500)),
    st.one_of(st.none(), st.floats(0.0, 1e6)),
    st.one_of(st.none(), st.integers(1, 500)),
    st.floats(0.0, 10_000.0),
)


# No deadline: these check values, and a shared machine can stall any example past 200 ms.
@settings(deadline=None)
@given(st.lists(signals, max_size=30), st.sampled_from(sorted(PRESETS)))
def test_scores_stay_in_unit_interval_and_sorted(
    rows: list[tuple[float | None, int | None, float | None, int | None, float]], preset: str
) -> None:
    ranked = fuse([_candidate(*row) for row in rows], PRESETS[preset], NOW)
    scores = [s.score for s in ranked]
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_a_turn_gains_from_the_turns_said_around_it() -> None:
    # "What did you paint?" matches the question; the answer after it shares no word with it.
    question = _candidate(0.8, 1, 5.0, 1, turn=10, previous_turn=9)
    answer = _candidate(0.3, 3, None, None, turn=11, previous_turn=10)
    unrelated = _candidate(0.35, 2, None, None, turn=30, previous_turn=29)
    # No cut-off: the weak candidates' order is what this test looks at.
    alone = FusionConfig(previous_turn_weight=0.0, next_turn_weight=0.0, min_score_ratio=0.0)
    assert [s.candidate for s in fuse([question, answer, unrelated], alone, NOW)][1] is unrelated
    config = FusionConfig(min_score_ratio=0.0)
    ranked = fuse([question, answer, unrelated], config, NOW)
    assert [s.candidate for s in ranked] == [question, answer, unrelated]
    own = {s.candidate.record.id: s.score for s in fuse([question, answer], alone, NOW)}
    scores = {s.candidate.record.id: s.score for s in ranked}
    assert scores[answer.record.id] == pytest.approx(
        own[answer.record.id] + config.previous_turn_weight * own[question.record.id]
    )


def test_neighbour_weights_are_checked_and_a_lone_best_candidate_still_scores_one() -> None:
    with pytest.raises(UsageError, match="neighbour"):
        FusionConfig(previous_turn_weight=-0.1)
    (scored,) = fuse([_candidate(1.0, 1, 3.0, 1, turn=2, previous_turn=1)], FusionConfig(), NOW)
    assert scored.score == pytest.approx(1.0)


def test_strong_neighbours_keep_their_order_instead_of_tying_at_one() -> None:
    # Three near-identical turns in a row, the middle one the exact match: every sum exceeds 1,
    # and dividing by the largest keeps the exact match first (capping would tie them at 1).
    before = _candidate(0.95, 2, 4.0, 2, turn=1, previous_turn=None)
    exact = _candidate(1.0, 1, 5.0, 1, turn=2, previous_turn=1)
    after = _candidate(0.95, 3, 4.0, 3, turn=3, previous_turn=2)
    ranked = fuse([after, before, exact], FusionConfig(), NOW)
    assert ranked[0].candidate is exact and ranked[0].score == pytest.approx(1.0)
    assert 0.0 < ranked[2].score < ranked[1].score < 1.0


def test_candidates_far_below_the_best_score_are_left_out() -> None:
    best = _candidate(0.9, 1, 5.0, 1)
    close = _candidate(0.8, 2, 4.0, 2)
    weak = _candidate(0.1, 3, None, None)
    everything = fuse([weak, close, best], FusionConfig(min_score_ratio=0.0), NOW)
    assert [s.candidate for s in everything] == [best, close, weak]
    assert everything[2].score < 0.5 * everything[0].score <= everything[1].score
    compact = PRESETS["compact"]
    assert (compact.min_score_ratio, FusionConfig().min_score_ratio) == (0.5, 0.0)
    assert fuse([weak, close, best], FusionConfig(), NOW) == everything
    ranked = fuse([weak, close, best], compact, NOW)
    assert [s.candidate for s in ranked] == [best, close]
    assert [s.score for s in ranked] == [s.score for s in everything[:2]]
    assert FusionConfig.only("vector").min_score_ratio == 0.0
    with pytest.raises(UsageError, match="min_score_ratio"):
        FusionConfig(min_score_ratio=1.5)


@settings(deadline=None)
@given(st.lists(signals, min_size=1, max_size=30), st.floats(0.0, 1.0))
def test_the_cut_off_keeps_a_prefix_of_the_full_ranking(
    rows: list[tuple[float | None, int | None, float | None, int | None, float]], ratio: float
) -> None:
    candidates = [_candidate(*row) for row in rows]
    everything = fuse(candidates, FusionConfig(min_score_ratio=0.0), NOW)
    kept = fuse(candidates, FusionConfig(min_score_ratio=ratio), NOW)
    assert [s.candidate for s in kept] == [s.candidate for s in everything[: len(kept)]]
    assert kept and all(s.score >= ratio * kept[0].score for s in kept)
    assert all(s.score < ratio * kept[0].score for s in everything[len(kept) :])


LONG = "A long answer about sourdough. " * 30  # 930 characters


def test_a_long_assistant_message_scores_below_the_persons_turn_it_ties() -> None:
    """LongMemEval: long answers match a question by topic and crowd the person's own turns
    out of the top results; a long assistant message loses the discount's share."""
    answer = _candidate(0.8, 1, 1.0, 1, role="assistant", memory=LONG)
    said = _candidate(0.8, 1, 1.0, 1, age_days=1, role="user", memory="I bake sourdough.")
    ranked = fuse([answer, said], FusionConfig(), NOW)
    assert [s.candidate for s in ranked] == [said, answer]
    assert ranked[1].score == pytest.approx(ranked[0].score * 0.7)
    # without the discount the tie goes to the newer, the answer
    plain = fuse([answer, said], FusionConfig(long_assistant_discount=0.0), NOW)
    assert [s.candidate for s in plain] == [answer, said]


def test_the_turn_after_a_long_answer_inherits_its_discounted_score() -> None:
    """The discount comes before the neighbour turns: the person's next turn, matching
    nothing, gains a share of the answer's discounted score and stays below the answer."""
    answer = _candidate(0.8, 1, 1.0, 1, turn=1, role="assistant", memory=LONG)
    after = _candidate(0.1, 2, None, None, turn=2, previous_turn=1, role="user")
    first, second = fuse([after, answer], FusionConfig(), NOW)
    assert first.candidate is answer and second.candidate is after
    alone = replace(FusionConfig(), previous_turn_weight=0.0, next_turn_weight=0.0)
    own = {
        s.candidate.record.id: s.score
        for s in fuse([answer, after], replace(alone, long_assistant_discount=0.0), NOW)
    }
    own_answer, own_after = own[answer.record.id], own[after.record.id]
    scored = fuse([answer, after], replace(FusionConfig(), next_turn_weight=0.0), NOW)
    assert [s.score for s in scored] == pytest.approx(
        [own_answer * 0.7, own_after + 0.3 * own_answer * 0.7]
    )


@pytest.mark.parametrize(
    ("role", "memory"), [("assistant", "A short answer."), ("user", LONG), (None, LONG)]
)
def test_a_short_assistant_message_and_a_long_turn_of_the_person_keep_their_score(
    role: str | None, memory: str
) -> None:
    kept = _candidate(0.8, 1, 1.0, 1, role=role, memory=memory)
    other = _candidate(0.8, 1, 1.0, 1, age_days=1, role="user")
    (first, second) = fuse([kept, other], FusionConfig(), NOW)
    assert first.candidate is kept and first.score == second.score


def test_the_discount_of_long_assistant_messages_is_checked() -> None:
    with pytest.raises(UsageError, match="long_assistant_discount"):
        FusionConfig(long_assistant_discount=1.0)
    with pytest.raises(UsageError, match="long_message_chars"):
        FusionConfig(long_message_chars=-1)
    assert FusionConfig.only("vector").long_assistant_discount == 0.0
