"""Unit tests for bench.loo's fitting: the grids are valid configs, the fit picks the best one."""

import uuid
from dataclasses import replace
from datetime import UTC, datetime

from bench.locomo import Question
from bench.loo import _fit, neighbour_grid, ratio_grid, weight_grid

from memhub.engine.fusion import PRESETS, FusionConfig
from memhub.store.records import Candidate, MemoryRecord, Scope, TextRanking

NOW = datetime(2024, 1, 1, tzinfo=UTC)


def _candidate(dia_id: str, sim: float, turn: int, previous: int | None) -> Candidate:
    record = MemoryRecord(
        id=uuid.uuid4(),
        scope=Scope(user_id="u"),
        memory=dia_id,
        hash=dia_id,
        metadata={"dia_id": dia_id},
        memory_type=None,
        valid_from=NOW,
        valid_to=None,
        superseded_by=None,
        source_turn_ids=(turn,),
        created_at=NOW,
        updated_at=None,
    )
    return Candidate(record, sim, None, None, None, previous)


def test_grids_hold_valid_configs_around_the_default() -> None:
    weights = weight_grid(PRESETS["default"])
    assert len(weights) == len(set(weights)) == 40
    assert all(isinstance(c, FusionConfig) for c in weights)
    neighbours = neighbour_grid(PRESETS["default"])
    assert PRESETS["default"] in neighbours
    assert {(c.vector_weight, c.candidates) for c in neighbours} == {(0.49, 100)}


def test_fit_picks_the_config_that_finds_the_evidence() -> None:
    # The evidence (the answer) follows a turn that matches the question far better; only
    # the neighbour signal can lift it above eleven distractors.
    question = _candidate("D1:1", 0.9, 1, None)
    answer = _candidate("D1:2", 0.1, 2, 1)
    distractors = [_candidate(f"D2:{n}", 0.2, 10 + n, None) for n in range(11)]
    asked = [("u", Question("q?", 4, ("D1:2",)))]
    grid = (
        FusionConfig.only("vector"),
        FusionConfig(
            vector_weight=1.0,
            text_weight=0.0,
            rrf_weight=0.0,
            previous_turn_weight=0.5,
            min_score_ratio=0.0,
        ),
    )
    pools = {TextRanking(): [[question, answer, *distractors]]}
    assert _fit(grid, pools, asked, len) is grid[1]


def test_fit_scores_each_config_on_the_candidates_of_its_own_text_ranking() -> None:
    # Only the pool of the ranking with the words said around holds the evidence.
    answer = _candidate("D1:2", 0.9, 1, None)
    distractors = [_candidate(f"D2:{n}", 0.2, 10 + n, None) for n in range(11)]
    asked = [("u", Question("q?", 4, ("D1:2",)))]
    without, with_words = TextRanking(neighbour_words_weight=0.0), TextRanking()
    grid = tuple(replace(FusionConfig.only("vector"), text=r) for r in (without, with_words))
    pools = {without: [distractors], with_words: [[answer, *distractors]]}
    assert _fit(grid, pools, asked, len) is grid[1]


def test_fit_under_a_token_cap_picks_the_best_config_that_is_short_enough() -> None:
    # Two strong candidates and ten weak ones of 4 "tokens" each (len of the dia id): with no
    # cut-off the top 10 is 40 tokens; a cut-off at half the best score keeps 2 (8 tokens).
    strong = [_candidate(f"D1:{n}", 0.9, n, None) for n in (1, 2)]
    weak = [_candidate(f"D2:{n}", 0.1, 10 + n, None) for n in range(10)]
    asked = [("u", Question("q?", 4, ("D2:0",)))]
    grid = ratio_grid(FusionConfig.only("vector"))
    pools = {TextRanking(): [[*strong, *weak]]}
    assert _fit(grid, pools, asked, len).min_score_ratio == 0.0
    assert _fit(grid, pools, asked, len, token_cap=10.0).min_score_ratio > 0.0
    assert _fit(grid, pools, asked, len, token_cap=1.0).min_score_ratio > 0.0
