"""Two ideas for questions that name when or several things, measured through the public
``search()`` (issue 37; docs/retrieval.md, "A question's dates and parts: measured, not
shipped"). Neither is in memhub: ``bench.session_spread --asked-at`` and ``--query-parts``
run them.

- **The span a question names** ("What kitchen appliance did I buy 10 days ago?", "in the past
  two weeks", "this month", "last weekend", "yesterday"), read from the date the question is
  asked: what was said in that span is searched on its own (``filters`` on ``valid_from``) and
  merged with the whole search.
- **The things a question names** ("the car cover and the detailing spray", "'Page Turners' or
  'Marketing Professionals'"): each part searched on its own and merged.

The merge (:func:`merge_rankings`) scales the second ranking so that its best scores as the
whole search's best, keeps each memory at the better of its scores, and sorts best first
(ties: newer first).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any

# The counts and units a turn's relative dates are read with (memhub.engine.dates).
from memhub.engine.dates import _NUMBERS, _UNITS
from memhub.engine.grounding import content_words

Result = dict[str, Any]
Search = Callable[..., list[Result]]


# A question's own relative dates ("what did I buy 10 days ago?"): when the thing was said, read
# from when the question is asked. Only the past: a question about "next week" asks about
# plans, which were said at any time; and not a bare "today" ("what should I cook today?"
# asks for what is known, not for what was said today).
_COUNT_OR_FEW = r"(\d{1,3}|few|couple(?:\s+of)?|" + "|".join(_NUMBERS) + r")\s+" + _UNITS
_QUESTION_WINDOW = re.compile(
    r"\b(?:(yesterday|earlier\s+today)"
    r"|(?:the\s+)?(?:past|last)\s+" + _COUNT_OR_FEW + r"(?!\s+ago)"
    r"|(?:the\s+)(?:past|last)\s+(day|week|month|year)"
    r"|" + _COUNT_OR_FEW + r"\s+ago"
    r"|(last|this)\s+(week|month|year|weekend))\b",
    re.IGNORECASE,
)
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
# Around a day counted back ("10 days ago"): people round, so a day either side for days, half
# a unit for longer units.
_AGO_SLACK_DAYS = {"day": 1, "week": 4, "month": 15, "year": 183}


def _count(word: str) -> int:
    word = word.casefold()
    if word.isdigit():
        return int(word)
    if word.startswith("couple"):
        return 2
    return 3 if word == "few" else _NUMBERS[word]


def _calendar(day: date, which: str, what: str) -> tuple[date, date]:
    """The calendar week, month, year or weekend ``which`` ("last" or "this") of ``day``:
    first day, and the day after the last."""
    back = 1 if which == "last" else 0  # how many weeks, months or years before this one
    if what == "weekend":
        # The Saturday of the day's own week, or (last) the one before it.
        saturday = day + timedelta(days=5 - day.weekday(), weeks=-back)
        return saturday, saturday + timedelta(days=2)
    if what == "week":
        monday = day - timedelta(days=day.weekday(), weeks=back)
        return monday, monday + timedelta(weeks=1)
    if what == "month":
        index = day.year * 12 + day.month - 1 - back
        after = index + 1
        return date(index // 12, index % 12 + 1, 1), date(after // 12, after % 12 + 1, 1)
    return date(day.year - back, 1, 1), date(day.year - back + 1, 1, 1)


def query_window(query: str, asked_at: datetime) -> tuple[datetime, datetime] | None:
    """The span of time the first relative date of a question names, read from when it is
    asked, or None: "10 days ago" (that day, a day either side), "in the past two weeks" (the
    14 days up to ``asked_at``), "this month", "last weekend", "yesterday". English only; days
    are UTC days. A question that names no such span returns None."""
    match = _QUESTION_WINDOW.search(query)
    if match is None:
        return None
    try:
        return _window(match, asked_at if asked_at.tzinfo else asked_at.replace(tzinfo=UTC))
    except (OverflowError, ValueError):  # counted back past the year 1, or over 9999
        return None


def _window(match: re.Match[str], moment: datetime) -> tuple[datetime, datetime]:
    day = moment.date()
    simple, count, unit, past_unit, ago, ago_unit, which, what = (
        g.casefold() if g else g for g in match.groups()
    )
    if simple:
        start = day - timedelta(days=simple == "yesterday")
        return _utc(start), _utc(start + timedelta(days=1))
    if count or past_unit:
        number = _count(count) if count else 1
        unit_name = (unit or past_unit).rstrip("s")
        return moment - timedelta(days=number * _UNIT_DAYS[unit_name]), moment
    if ago:
        unit_name = ago_unit.rstrip("s")
        center = day - timedelta(days=_count(ago) * _UNIT_DAYS[unit_name])
        slack = timedelta(days=_AGO_SLACK_DAYS[unit_name])
        return _utc(center - slack), _utc(center + slack + timedelta(days=1))
    first, after = _calendar(day, which, what)
    return _utc(first), _utc(after)


def _utc(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)


# Names in quotes: 'The Nightingale', "Sapiens"; an apostrophe inside a word ("Mary's") is none.
_QUOTED = re.compile(r"""(?:(?<=\s)|^)['"‘“]([^'"‘’“”]{2,80})['"’”](?=[\s,.?!;:]|$)""")
_JOINED = re.compile(r",?\s+\b(?:and|or)\b\s+", re.IGNORECASE)
MAX_PARTS = 3


def query_parts(query: str) -> tuple[str, ...]:
    """The things ``query`` names, two or more, or (): quoted names when it quotes two or
    more, else the pieces between "and" / "or" when each has two content words."""
    quoted = [q.strip() for q in _QUOTED.findall(query) if q.strip()]
    if len(quoted) >= 2:
        return tuple(quoted[:MAX_PARTS])
    pieces = [p.strip() for p in _JOINED.split(query) if p.strip()]
    if not 2 <= len(pieces) <= MAX_PARTS or any(len(content_words(p)) < 2 for p in pieces):
        return ()
    return tuple(pieces)


def merge_rankings(first: Sequence[Result], other: Sequence[Result]) -> list[Result]:
    """``other`` scaled so that its best scores as ``first``'s best, each memory at the
    better of its two scores, best first (ties: newer first, then ``first``'s order)."""
    if not first or not other or other[0]["score"] <= 0:
        return list(first or other)
    scale = first[0]["score"] / other[0]["score"]
    best: dict[str, Result] = {}
    for r in (*first, *({**r, "score": min(1.0, r["score"] * scale)} for r in other)):
        kept = best.setdefault(r["id"], r)
        if r["score"] > kept["score"]:
            best[r["id"]] = r
    ranked = sorted(best.values(), key=lambda r: r.get("valid_from") or "", reverse=True)
    return sorted(ranked, key=lambda r: r["score"], reverse=True)


def dated_search(search: Search, question: str, asked_at: datetime | None) -> list[Result]:
    """``search(question)`` merged with the search of the span the question names, if any."""
    found = search(question)
    window = None if asked_at is None else query_window(question, asked_at)
    if window is None:
        return found
    start, end = (moment.isoformat() for moment in window)
    within = {"AND": [{"valid_from": {"gte": start}}, {"valid_from": {"lt": end}}]}
    return merge_rankings(found, search(question, filters=within))


def search_by_parts(search: Search, question: str, found: list[Result]) -> list[Result]:
    """``found`` merged with the search of each thing the question names."""
    for part in query_parts(question):
        found = merge_rankings(found, search(part))
    return found
