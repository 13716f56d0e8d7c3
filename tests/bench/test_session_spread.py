"""The re-ranking ideas of bench.session_spread, on hand-made result lists."""

from __future__ import annotations

from typing import Any

from bench.session_spread import (
    as_two_roles,
    assistant_prior,
    co_occurrence,
    lme_scores,
    locomo_scores,
    spread,
    where_evidence_lies,
)


def result(id_: str, score: float, session: str, role: str = "user") -> dict[str, Any]:
    return {"id": id_, "score": score, "session": session, "role": role}


RESULTS = [
    result("a1", 0.90, "A"),
    result("a2", 0.88, "A", "assistant"),
    result("a3", 0.87, "A"),
    result("b1", 0.80, "B"),
    result("a4", 0.79, "A"),
    result("c1", 0.50, "C"),
]


def ids(results: list[dict[str, Any]]) -> list[str]:
    return [r["id"] for r in results]


def test_spread_lets_a_close_second_session_into_the_top_five_and_keeps_the_rest_in_order() -> None:
    assert ids(spread(RESULTS, 0.0)) == ids(RESULTS)
    # a2 at 0.88 * 0.9 = 0.792 < b1's 0.80: B's turn comes second
    assert ids(spread(RESULTS, 0.1)) == ["a1", "b1", "a2", "a3", "a4", "c1"]
    # a distant session stays out however strong the spread
    assert "c1" not in ids(spread(RESULTS, 0.3))[:3]


def test_spread_beyond_two_a_session_leaves_the_second_pick_alone() -> None:
    assert ids(spread(RESULTS, 0.1, free=2))[:3] == ["a1", "a2", "b1"]


def test_co_occurrence_and_the_assistant_prior_reorder_by_their_rules() -> None:
    # B's only turn gains nothing; A's turns gain 0.5 x A's best other score
    assert ids(co_occurrence(RESULTS, 0.5))[:4] == ["a1", "a2", "a3", "a4"]
    assert ids(assistant_prior(RESULTS, 0.2)).index("a2") == 4  # 0.704, after a4's 0.79


def test_scores_count_sessions_and_evidence_turns() -> None:
    question = {"answer_sessions": ["A", "B"], "evidence": ["a3", "b1"]}
    assert lme_scores(question, RESULTS) == {"all@5": 1.0, "turn@5": 1.0, "turn@10": 1.0}
    assert lme_scores(question, RESULTS[:3])["all@5"] == 0.0
    locomo = [
        {"id": "D1:3", "score": 0.9, "session": 1},
        {"id": "D2:1", "score": 0.8, "session": 2},
    ]
    assert locomo_scores({"evidence": ["D1:3", "D3:4"]}, locomo) == {
        "r@5": 0.5,
        "r@10": 0.5,
        "all@5": 0.0,
    }


def test_two_roles_makes_the_second_speaker_the_assistant() -> None:
    question = {"results": [{"id": "D1:1", "second_speaker": True, "role": "user"}]}
    assert as_two_roles([question])[0]["results"][0]["role"] == "assistant"


def test_where_evidence_lies_counts_each_evidence_turn_by_its_place() -> None:
    results = [{"id": f"D1:{n}"} for n in range(1, 61)]  # D1:1 first ... D1:60 sixtieth
    locomo = [
        {"category": 1, "evidence": ["D1:3", "D1:15", "D9:9"], "results": results},
        {"category": 4, "evidence": ["D1:51"], "results": results},  # 51st: past the top 50
    ]
    shares = where_evidence_lies(locomo)
    assert shares["multi-hop"] == (1 / 3, 1 / 3, 1 / 3)
    assert shares["single-hop"] == (0.0, 0.0, 1.0)
