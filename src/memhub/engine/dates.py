"""Relative dates in a turn, made absolute from the turn's own time.

A small model copies "last week" into a fact, or computes the wrong day; the calendar is not
its strength. So the prompt shows, beside each turn, what its relative expressions mean on
the day it was said ("yesterday" = 2023-05-14), and the model only has to copy the date.
English only, and only expressions with one reading: "next Saturday" is the first Saturday
after the turn's day, "last Saturday" the last one before it; a bare weekday ("on Monday") is
read by its sentence's tense: the last one before the turn's day when the sentence speaks of
the past ("on Monday I started"), else the next one after it ("on Monday I start"). "In two
weeks" is counted forward from the turn's day, unless its sentence speaks of the past ("lost 5
kg in 3 months" says how long); "the start of the month" is the turn's own month.

A small model also drops a date it was shown ("I moved to Vienna last month" becomes "The user
lives in Vienna."); :func:`keep_the_date` gives such a fact back the date its clause said.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

__all__ = [
    "absolute_dates",
    "keep_the_date",
    "names_the_day",
    "resolve_relative_dates",
    "said_at_utc",
]


def said_at_utc(at: datetime | None) -> datetime:
    """A turn's own time, aware: ``conversation_context.created_at`` keeps the UTC wall time
    without a zone (``store.records.utc_wall_time``); None, not yet stamped, is now."""
    if at is None:
        return datetime.now(UTC)
    return at if at.tzinfo else at.replace(tzinfo=UTC)


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH_NAMES = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
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
_COUNT = r"(\d{1,2}|" + "|".join(_NUMBERS) + r")\s+" + _UNITS
_EXPRESSION = re.compile(
    r"\b(?:(yesterday|today|tonight|tomorrow)"
    r"|(last|this|next)\s+(week|month|year|weekend|" + "|".join(_WEEKDAYS) + r")"
    r"|" + _COUNT + r"\s+ago"
    r"|(?<=\bon\s)(" + "|".join(_WEEKDAYS) + r")"
    # "in two weeks", said of what is to come (a past sentence's "in 3 months" is how long)
    r"|in\s+" + _COUNT + r"(?!\s+(?:later|earlier|before|after))"
    # "since the start of the month": the month it was said in
    r"|the\s+(?:start|beginning|end)\s+of\s+(?:the|this)\s+(week|month|year))\b(?!s)",
    re.IGNORECASE,
)
# The past in a sentence: a few irregular verbs and the regular "-ed" form.
_PAST = re.compile(
    r"\b(?:was|were|did|had|went|got|came|left|met|saw|ran|took|made|bought|told|said|quit"
    r"|lost|won|wrote|built|grew|drove|flew|fell|gave|found|became|began|felt|kept|paid|sold"
    r"|spent|taught|thought|brought|caught|ate|drank|swam|rode|broke|chose|forgot|knew|sent"
    r"|\w{3,}ed)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"[^.!?;]+")


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


def _sentence_at(text: str, position: int) -> str:
    return next((m.group(0) for m in _SENTENCE.finditer(text) if m.end() >= position), "")


def _expressions(text: str) -> Iterator[re.Match[str]]:
    """The relative expressions of ``text``; "in two weeks" only where its sentence speaks
    of what is to come ("lost 5 kg in 3 months" says how long, not when)."""
    for match in _EXPRESSION.finditer(text):
        counted_ahead = match.group(7)  # the count of "in two weeks" (see _meaning's groups)
        if counted_ahead and _PAST.search(_sentence_at(text, match.start())):
            continue
        yield match


def _meaning(match: re.Match[str], day: date) -> str:
    groups = (g.casefold() if g else g for g in match.groups())
    simple, which, what, count, unit, bare, ahead, ahead_unit, part_of = groups
    if part_of:  # "the start of the month": the turn's own month
        which, what = "this", part_of
    if ahead:
        return _ago(day, -(int(ahead) if ahead.isdigit() else _NUMBERS[ahead]), ahead_unit)
    if bare:
        past = _PAST.search(_sentence_at(match.string, match.start()))
        return _weekday(day, "last" if past else "next", bare)
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
    for match in _expressions(text):
        phrase = match.group(0)
        seen.setdefault(phrase.casefold(), _meaning(match, said_on))
    return list(seen.items())


_PREPOSITION = re.compile(r"(?:\b(?:on|in|at|during)\s+)?$", re.IGNORECASE)
_OWN_PREPOSITION = re.compile(
    r"\b(?:as of|since|from|by|until|till|before|after|of)\s+$", re.IGNORECASE
)


def _said_again(meaning: str) -> re.Pattern[str]:
    """The date ``meaning`` written out once more right after its expression (", in
    September 2023", " on 2023-05-22"): a month's name or an ISO day, with or without year."""
    first = meaning.split()[0]
    if first.casefold() == "the":
        return re.compile(r"(?!)")
    year = f"(?:\\s+{meaning.split()[1]})?" if " " in meaning else ""
    return re.compile(rf",?\s+(?:on|in)\s+{re.escape(first)}{year}\b", re.IGNORECASE)


def _dated(meaning: str) -> str:
    if meaning.startswith("the "):
        return f"in {meaning}"
    return f"on {meaning}" if meaning[:1].isdigit() and "-" in meaning else f"in {meaning}"


def absolute_dates(text: str, said_on: date) -> str:
    """``text`` with each relative expression replaced by the date it meant on ``said_on``:
    "ran a half marathon yesterday" -> "ran a half marathon on 2023-05-14"; "as of last week"
    -> "as of the week of 2023-05-08"; "next month in June" -> "in June 2023"."""
    parts: list[str] = []
    last = 0
    for match in _expressions(text):
        before = text[last : match.start()]
        meaning = _meaning(match, said_on)
        if _OWN_PREPOSITION.search(before):  # "since", "as of" ... already say how it relates
            cut, dated = len(before), meaning
        else:
            cut = _PREPOSITION.search(before).start()  # type: ignore[union-attr]
            dated = _dated(meaning)
        if before[cut:].strip()[:1].isupper():  # "On Monday I start" -> "On 2023-05-22 I start"
            dated = dated[:1].upper() + dated[1:]
        before = before[:cut]
        parts += [before, dated]
        if before and not before.endswith(" "):
            parts.insert(-1, " ")
        last = match.end()
        said_again = _said_again(meaning).match(text, last)
        if said_again:  # the model wrote the date too: "next month in September"
            last = said_again.end()
    result = "".join(parts) + text[last:]
    return result[:1].upper() + result[1:]


# What already dates a fact: a year, a month's or a weekday's name, or a relative expression.
_DATED = re.compile(
    r"\b(?:\d{4}|" + "|".join((*_MONTH_NAMES, *_WEEKDAYS)) + r")\b",
    re.IGNORECASE,
)


def dates_something(word: str) -> bool:
    """Whether ``word`` is a year, a month's or a weekday's name, or holds a digit: words a
    fact's date gives it, from the turn's timestamp rather than from anything said."""
    return bool(_DATED.fullmatch(word)) or any(c.isdigit() for c in word)


# Clauses of a turn: "I moved to Vienna last month and I now teach chemistry" dates the move;
# a comma ends one too ("he's 7, we're going to the museum on Saturday" dates only the visit).
_CLAUSE = re.compile(r"[.!?;:,]|\s+(?:and|but|so|while|because)\s+", re.IGNORECASE)
_WORD = re.compile(r"[^\W\d_]{4,}")
# Words of four letters or more that say nothing of what a clause is about.
_NOT_CONTENT = frozenset(
    re.findall(r"\w+", "user users that this with from have will they them their about been were")
    + re.findall(r"\w+", "what when where which there then than just also some into over very")
)


def _content(text: str) -> set[str]:
    return {w[:5] for w in _WORD.findall(text.casefold()) if w not in _NOT_CONTENT}


# A fact's subject: "The user", "The user's son Otis", "Mira", "Mira's shop".
_SUBJECT = re.compile(
    r"\W*(?:(?i:the user's)\s+[^\W\d_]+(?:\s+[A-Z][\w'-]*)?|(?i:the user)\b"
    r"|[A-Z][\w-]*(?:'s\s+[^\W\d_]+)?)"
)


def keep_the_date(fact: str, turn: str, said_on: date) -> str:
    """``fact`` with the date the ``turn`` gave it, when the fact has none and exactly one
    clause of the turn with a relative date shares a content word with the fact past its
    subject: from "I moved to Vienna last month and I now teach chemistry", "The user lives
    in Vienna." becomes "The user lives in Vienna since April 2023." ("from" a date to come;
    "on"/"in" for a fact in the past tense: "The user ran a marathon on 2023-05-14.").
    Otherwise ``fact`` as it is."""
    if _DATED.search(fact) or _EXPRESSION.search(fact):
        return fact
    # whom the fact is about says nothing of when: "The user's son Otis is mad about
    # dinosaurs" shares "Otis" with "my son Otis's birthday is in two weeks", not its date
    words = _content(_SUBJECT.sub("", fact, count=1))
    found: list[re.Match[str]] = []
    for start, end in _clauses(turn):
        dates = [m for m in _expressions(turn) if start <= m.start() and m.end() <= end]
        if dates and words & _content(_EXPRESSION.sub(" ", turn[start:end])):
            found += dates
    if len(found) != 1:
        return fact  # no date, or two: which one the fact means is not known
    match = found[0]
    meaning = _meaning(match, said_on)
    if _PAST.search(fact):
        when = _dated(meaning)
    else:  # a state: since a date gone by, from one to come
        when = ("from " if _ahead(match) else "since ") + meaning
    return f"{fact.rstrip().rstrip('.')} {when}."


def _clauses(turn: str) -> list[tuple[int, int]]:
    """The spans of ``turn``'s clauses; a clause that is little more than a date ("...,
    starting tomorrow", "On Monday, ...") belongs to the one before it (or, first, after)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for cut in [*_CLAUSE.finditer(turn), None]:
        end = cut.start() if cut else len(turn)
        if turn[start:end].strip():
            spans.append((start, end))
        start = cut.end() if cut else end
    merged: list[tuple[int, int]] = []
    for index, (start, end) in enumerate(spans):
        text = turn[start:end]
        bare = _EXPRESSION.search(text) and len(_content(_EXPRESSION.sub(" ", text))) <= 1
        if bare and merged:
            merged[-1] = (merged[-1][0], end)
        elif bare and index + 1 < len(spans):
            spans[index + 1] = (start, spans[index + 1][1])
        else:
            merged.append((start, end))
    return merged


def _ahead(match: re.Match[str]) -> bool:
    """Does the expression name a time after the turn's day ("tomorrow", "next month", "on
    Monday I start")?"""
    simple, which, _, _, _, bare, ahead, _, part_of = (
        g.casefold() if g else g for g in match.groups()
    )
    if bare:
        return not _PAST.search(_sentence_at(match.string, match.start()))
    if part_of:  # "by the end of the month" is to come; "since the start of it" is gone by
        return match.group(0).casefold().split()[1] == "end"
    return simple == "tomorrow" or which in ("next", "this") or bool(ahead)


def names_the_day(text: str, day: date) -> bool:
    """Whether ``text`` names ``day`` with its year, as ISO or in words ("2023-03-06", "March
    6, 2023", "6th March 2023"): how a model writes the day a turn was said on. "The week of
    2024-01-29" (``absolute_dates``' reading of "this week" said on that Monday) names a week,
    not the day: "My laaitie Sipho starts Grade 1 this week" is news of the person (heldout12's
    u09, read after its blind runs); so does "the weekend of 2024-01-13", this weekend said
    on that Saturday ("going ice fishing on Lake Wissota this weekend": heldout15's x09)."""
    if re.search(rf"(?<!week of )(?<!weekend of ){day.isoformat()}", text):
        return True
    month, number = _MONTH_NAMES[day.month - 1], rf"0?{day.day}(?:st|nd|rd|th)?"
    in_words = rf"\b(?:{month}\s+{number},?|{number}\s+(?:of\s+)?{month},?)\s+{day.year}\b"
    return re.search(in_words, text, re.IGNORECASE) is not None
