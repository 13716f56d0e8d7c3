"""Relative dates in a turn, made absolute from the turn's own time.

A small model copies "last week" into a fact, or computes the wrong day; the calendar is not
its strength. So the prompt shows, beside each turn, what its relative expressions mean on
the day it was said ("yesterday" = 2023-05-14), and the model only has to copy the date.
English only, and only expressions with one reading: "next Saturday" is the first Saturday
after the turn's day, "last Saturday" the last one before it; a bare weekday ("on Monday")
could be either and is left to the model.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

__all__ = ["absolute_dates", "resolve_relative_dates"]

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_UNITS = r"(day|week|month|year)s?"
_EXPRESSION = re.compile(
    r"\b(?:(yesterday|today|tonight|tomorrow)"
    r"|(last|this|next)\s+(week|month|year|weekend|" + "|".join(_WEEKDAYS) + r")"
    r"|(\d{1,2}|" + "|".join(_NUMBERS) + r")\s+" + _UNITS + r"\s+ago)\b",
    re.IGNORECASE,
)


def _week_of(day: date) -> str:
    return f"the week of {day - timedelta(days=day.weekday()):%Y-%m-%d}"


def _month(day: date, shift: int) -> str:
    index = day.year * 12 + day.month - 1 + shift
    return f"{date(index // 12, index % 12 + 1, 1):%B %Y}"


def _weekday(day: date, which: str, name: str) -> str:
    target = _WEEKDAYS.index(name) if name in _WEEKDAYS else 5  # a weekend starts on Saturday
    ahead = (target - day.weekday()) % 7
    if which == "last":
        found = day - timedelta(days=(day.weekday() - target) % 7 or 7)
    elif which == "next":
        found = day + timedelta(days=ahead or 7)
    else:  # this: on or after the turn's day
        found = day + timedelta(days=ahead)
    if name == "weekend":
        return f"the weekend of {found:%Y-%m-%d}"
    return f"{found:%Y-%m-%d}"


def _ago(day: date, count: int, unit: str) -> str:
    if unit.startswith("day"):
        return f"{day - timedelta(days=count):%Y-%m-%d}"
    if unit.startswith("week"):
        return _week_of(day - timedelta(weeks=count))
    if unit.startswith("month"):
        return _month(day, -count)
    return str(day.year - count)


def _meaning(match: re.Match[str], day: date) -> str:
    simple, which, what, count, unit = (g.casefold() if g else g for g in match.groups())
    if simple:
        shift = {"yesterday": -1, "tomorrow": 1}.get(simple, 0)
        return f"{day + timedelta(days=shift):%Y-%m-%d}"
    if which:
        step = {"last": -1, "this": 0, "next": 1}[which]
        if what == "week":
            return _week_of(day + timedelta(weeks=step))
        if what == "month":
            return _month(day, step)
        if what == "year":
            return str(day.year + step)
        return _weekday(day, which, what)
    number = int(count) if count.isdigit() else _NUMBERS[count]
    return _ago(day, number, unit)


def resolve_relative_dates(text: str, said_on: date) -> list[tuple[str, str]]:
    """Each relative expression of ``text`` with what it means on ``said_on``, in order,
    each expression once: ``[("yesterday", "2023-05-14"), ...]``."""
    seen: dict[str, str] = {}
    for match in _EXPRESSION.finditer(text):
        phrase = match.group(0)
        seen.setdefault(phrase.casefold(), _meaning(match, said_on))
    return list(seen.items())


_PREPOSITION = re.compile(r"(?:\b(?:on|in|at|during)\s+)?$", re.IGNORECASE)


def _dated(meaning: str) -> str:
    if meaning.startswith("the "):
        return f"in {meaning}"
    return f"on {meaning}" if meaning[:1].isdigit() and "-" in meaning else f"in {meaning}"


def absolute_dates(text: str, said_on: date) -> str:
    """``text`` with each relative expression replaced by the date it meant on ``said_on``:
    "ran a half marathon yesterday" -> "ran a half marathon on 2023-05-14"."""
    parts: list[str] = []
    last = 0
    for match in _EXPRESSION.finditer(text):
        before = text[last : match.start()]
        before = before[: _PREPOSITION.search(before).start()]  # type: ignore[union-attr]
        parts += [before, _dated(_meaning(match, said_on))]
        if before and not before.endswith(" "):
            parts.insert(-1, " ")
        last = match.end()
    result = "".join(parts) + text[last:]
    return result[:1].upper() + result[1:]
