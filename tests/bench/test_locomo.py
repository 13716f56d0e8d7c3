"""Unit tests for bench.locomo on a tiny inline sample (the real data is never needed here)."""

from datetime import datetime

from bench.locomo import normalize_evidence, parse_sample, parse_session_date

SAMPLE = {
    "sample_id": "conv-x",
    "conversation": {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ana", "dia_id": "D1:1", "text": "Hi Ben!"},
            {
                "speaker": "Ben",
                "dia_id": "D1:2",
                "text": "Look at this.",
                "blip_caption": "a photo of a red kite",
            },
        ],
        "session_2_date_time": "12:09 am on 13 September, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "Back again."}],
        "session_3_date_time": "9:00 am on 1 October, 2023",
    },
    "qa": [
        {"question": "q1", "answer": "a", "evidence": ["D1:2; D2:1"], "category": 1},
        {"question": "q2", "answer": "a", "evidence": ["D:1:1", "D", "D9:9"], "category": 4},
        {"question": "q3", "adversarial_answer": "a", "evidence": [], "category": 5},
    ],
}


def test_session_dates() -> None:
    assert parse_session_date("1:56 pm on 8 May, 2023") == datetime(2023, 5, 8, 13, 56)
    assert parse_session_date("12:09 am on 13 September, 2023") == datetime(2023, 9, 13, 0, 9)


def test_evidence_normalisation() -> None:
    assert normalize_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert normalize_evidence(["D:11:26", "D 3:4", "d1:03", "D1:3"]) == ["D11:26", "D3:4", "D1:3"]
    assert normalize_evidence("D1:1 D1:2") == ["D1:1", "D1:2"]
    assert normalize_evidence(["D"]) == ["D"]


def test_parse_sample_turns_and_questions() -> None:
    conversation = parse_sample(SAMPLE)
    assert conversation.speakers == ("Ana", "Ben")
    assert [t.dia_id for t in conversation.turns] == ["D1:1", "D1:2", "D2:1"]
    assert conversation.turns[2].date == datetime(2023, 9, 13, 0, 9)
    assert conversation.turns[1].ingest_text == "Ben: Look at this. [shares a photo of a red kite]"
    q1, q2, q3 = conversation.questions
    assert q1.evidence == ("D1:2", "D2:1")
    assert q2.evidence == ("D1:1",)
    assert q2.unmatched == ("D", "D9:9")
    assert q3.category == 5
    assert q3.evidence == ()
