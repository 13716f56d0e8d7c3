"""Loader for the LoCoMo conversation format: turns with session dates, questions with evidence.

The data is read at run time from outside the repository (its licence forbids shipping it).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

#: Categories as LoCoMo's own scorer defines them; 5 (adversarial) is left out of recall figures.
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
RECALL_CATEGORIES: frozenset[int] = frozenset({1, 2, 3, 4})

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
_EVIDENCE_SPLIT = re.compile(r"[;,]|\s(?=D)")
_CAPTION_PREFIX = re.compile(r"^(a|an) (photo|picture|image) of ", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Turn:
    """One utterance of a conversation."""

    dia_id: str
    speaker: str
    text: str
    session: int
    date: datetime
    caption: str | None = None

    @property
    def ingest_text(self) -> str:
        """The text a memory system stores for this turn: speaker, words, and any photo caption."""
        text = f"{self.speaker}: {self.text}"
        if self.caption:
            # BLIP captions mostly start with "a photo of"; drop it so the phrase reads once.
            caption = _CAPTION_PREFIX.sub("", self.caption)
            text += f" [shares a photo of {caption}]"
        return text


@dataclass(frozen=True, slots=True)
class Question:
    """A question with the turns that answer it.

    ``evidence`` holds the normalised ids that match a turn; ``unmatched`` those that match none
    (malformed beyond repair, or pointing at turns the data does not have).
    """

    question: str
    category: int
    evidence: tuple[str, ...]
    unmatched: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Conversation:
    """One LoCoMo sample: two speakers, their turns in order, and the questions about them."""

    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]


def default_data_path() -> Path:
    """``../shared/data/locomo-dev.json`` relative to the repository root."""
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo-dev.json"


def parse_session_date(value: str) -> datetime:
    """Parse LoCoMo's session stamp, e.g. ``"1:56 pm on 8 May, 2023"`` (naive local time)."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")


def normalize_evidence(raw: list[str] | str) -> list[str]:
    """Split and repair evidence ids: ``"D1:3; D2:5"`` -> two ids, ``"D:11:26"`` -> ``"D11:26"``.

    Pieces that still do not look like ``D<session>:<turn>`` are returned unchanged so that the
    caller counts them as unmatched.
    """
    items = [raw] if isinstance(raw, str) else raw
    ids: list[str] = []
    for item in items:
        for piece in _EVIDENCE_SPLIT.split(str(item)):
            compact = re.sub(r"\s+", "", piece).upper()
            if not compact:
                continue
            compact = re.sub(r"^D:(?=\d+:\d+$)", "D", compact)
            match = _DIA_ID.fullmatch(compact)
            ids.append(f"D{int(match[1])}:{int(match[2])}" if match else compact)
    return list(dict.fromkeys(ids))


def _parse_turns(conversation: dict[str, object]) -> list[Turn]:
    turns: list[Turn] = []
    sessions = sorted(
        (int(m[1]), key) for key in conversation if (m := _SESSION_KEY.fullmatch(key))
    )
    for number, key in sessions:
        raw_turns = conversation[key]
        if not isinstance(raw_turns, list):
            continue
        date = parse_session_date(str(conversation[f"{key}_date_time"]))
        for raw in raw_turns:
            turns.append(
                Turn(
                    dia_id=raw["dia_id"],
                    speaker=raw["speaker"],
                    text=raw["text"],
                    session=number,
                    date=date,
                    caption=raw.get("blip_caption") or None,
                )
            )
    return turns


def _parse_question(raw: dict[str, object], known_ids: set[str]) -> Question:
    ids = normalize_evidence(raw.get("evidence") or [])  # type: ignore[arg-type]
    return Question(
        question=str(raw["question"]),
        category=int(raw["category"]),  # type: ignore[call-overload]
        evidence=tuple(i for i in ids if i in known_ids),
        unmatched=tuple(i for i in ids if i not in known_ids),
    )


def parse_sample(sample: dict[str, object]) -> Conversation:
    """Build a :class:`Conversation` from one element of the LoCoMo JSON list."""
    conversation = sample["conversation"]
    assert isinstance(conversation, dict)
    turns = _parse_turns(conversation)
    known_ids = {t.dia_id for t in turns}
    qa = sample.get("qa") or []
    assert isinstance(qa, list)
    return Conversation(
        sample_id=str(sample.get("sample_id", "")),
        speakers=(str(conversation["speaker_a"]), str(conversation["speaker_b"])),
        turns=tuple(turns),
        questions=tuple(_parse_question(q, known_ids) for q in qa),
    )


def load_locomo(path: Path | None = None) -> list[Conversation]:
    """Load every conversation of a LoCoMo JSON file (default: :func:`default_data_path`)."""
    source = path or default_data_path()
    if not source.exists():
        raise FileNotFoundError(
            f"LoCoMo data not found at {source}; pass --locomo PATH "
            "(it is never copied into the repository)"
        )
    with source.open(encoding="utf-8") as f:
        samples = json.load(f)
    return [parse_sample(s) for s in samples]
