"""Relative dates made absolute from the day a turn was said (engine/dates.py)."""

from __future__ import annotations

from datetime import date

import pytest

from memhub.engine.dates import absolute_dates, keep_the_date, names_the_day, resolve_relative_dates

MONDAY = date(2023, 5, 15)


@pytest.mark.parametrize(
    ("text", "meaning"),
    [
        ("I ran my first half marathon yesterday!", [("yesterday", "2023-05-14")]),
        ("Starting tomorrow.", [("tomorrow", "2023-05-16")]),
        ("We moved to Dublin last week!", [("last week", "the week of 2023-05-08")]),
        ("See you next week", [("next week", "the week of 2023-05-22")]),
        ("I moved last month.", [("last month", "April 2023")]),
        ("Visiting him next month.", [("next month", "June 2023")]),
        ("The wedding is next Saturday.", [("next saturday", "2023-05-20")]),
        ("It was last Monday.", [("last monday", "2023-05-08")]),
        ("I quit two weeks ago.", [("two weeks ago", "the week of 2023-05-01")]),
        ("3 days ago", [("3 days ago", "2023-05-12")]),
        ("We married last year.", [("last year", "2022")]),
        ("this weekend", [("this weekend", "the weekend of 2023-05-20")]),
        # a bare weekday by its sentence's tense; "on Mondays" is a habit, not a date
        ("I live in Oslo. On Monday I start.", [("monday", "2023-05-22")]),
        ("On Friday we went hiking.", [("friday", "2023-05-12")]),
        ("I swim on Mondays. Monday is fine.", []),
        # "in two weeks" of what is to come; after a past verb it says how long
        ("Her birthday is in two weeks.", [("in two weeks", "the week of 2023-05-29")]),
        ("Back in 3 days.", [("in 3 days", "2023-05-18")]),
        ("I lost 5 kg in 3 months.", []),
        ("We finished it in 2 days.", []),
        # the turn's own week, month or year
        ("Vegan since the start of the month.", [("the start of the month", "May 2023")]),
        ("Due by the end of the week.", [("the end of the week", "the week of 2023-05-15")]),
    ],
)
def test_each_expression_means_one_date(text: str, meaning: list[tuple[str, str]]) -> None:
    assert resolve_relative_dates(text, MONDAY) == meaning


def test_months_roll_over_the_year() -> None:
    assert resolve_relative_dates("last month", date(2023, 1, 3)) == [
        ("last month", "December 2022")
    ]
    assert resolve_relative_dates("next month", date(2023, 12, 3)) == [
        ("next month", "January 2024")
    ]


def test_an_expression_said_twice_is_noted_once() -> None:
    assert resolve_relative_dates("Yesterday? yes, yesterday.", MONDAY) == [
        ("yesterday", "2023-05-14")
    ]


@pytest.mark.parametrize(
    ("fact", "dated"),
    [
        ("The user ran a half marathon yesterday.", "The user ran a half marathon on 2023-05-14."),
        (
            "The user moved to Dublin last week.",
            "The user moved to Dublin in the week of 2023-05-08.",
        ),
        (
            "The user visits Jonas in Munich next month.",
            "The user visits Jonas in Munich in June 2023.",
        ),
        ("The wedding is on next Saturday.", "The wedding is on 2023-05-20."),
        ("Next month the user flies to Rome.", "In June 2023 the user flies to Rome."),
        ("The user lives in Oslo.", "The user lives in Oslo."),
        # a preposition of its own stays; a date the model also wrote is not said twice
        (
            "The user is a supervisor as of last week.",
            "The user is a supervisor as of the week of 2023-05-08.",
        ),
        ("The user flies next month, in June 2023.", "The user flies in June 2023."),
        ("The user flies next month in June.", "The user flies in June 2023."),
        ("The user moved last month in the city.", "The user moved in April 2023 in the city."),
        (
            "The user's son's birthday is in two weeks.",
            "The user's son's birthday is in the week of 2023-05-29.",
        ),
        (
            "The user went vegan since the start of the month.",
            "The user went vegan since May 2023.",
        ),
    ],
)
def test_a_fact_keeps_the_date_its_turn_meant(fact: str, dated: str) -> None:
    assert absolute_dates(fact, MONDAY) == dated


MOVE = "Big change: I moved to Vienna last month and I now teach chemistry at a high school."
START = "I quit Siemens two weeks ago; on Monday I start at Helio as an electrical engineer."


OTIS = "I need ideas for my son Otis's party, it's in two weeks. He's mad about dinosaurs."


@pytest.mark.parametrize(
    ("fact", "turn", "kept"),
    [
        # the clause that shares the fact's words gives its date, the other clause none
        ("The user lives in Vienna.", MOVE, "The user lives in Vienna since April 2023."),
        ("The user teaches chemistry at a high school.", MOVE, None),
        ("The user works at Helio.", START, "The user works at Helio from 2023-05-22."),
        ("The user quit Siemens.", START, "The user quit Siemens in the week of 2023-05-01."),
        (
            "The user ran a marathon.",
            "I ran a marathon yesterday!",
            "The user ran a marathon on 2023-05-14.",
        ),
        # a clause of little more than a date goes with its neighbour; a comma ends a clause
        (
            "The user is a developer at Shopify.",
            "I got hired as a developer at Shopify, starting tomorrow.",
            "The user is a developer at Shopify from 2023-05-16.",
        ),
        ("The user's son is 7.", "he's 7, we're going to the museum on Saturday", None),
        # whom the fact is about is no tie to a date (heldout2's k11)
        ("The user's son Otis is mad about dinosaurs.", OTIS, None),
        ("The user's son Otis is in Harrogate.", OTIS, None),
        (
            "The user's son Otis's party is planned.",
            OTIS,
            "The user's son Otis's party is planned in the week of 2023-05-29.",
        ),
        # dated already, no date in the turn, or two dates for one clause: left as it is
        ("The user lives in Vienna since 2022.", MOVE, None),
        ("The user lives in Oslo.", "I live in Oslo.", None),
        ("The user met Ana.", "I met Ana yesterday or last week.", None),
    ],
)
def test_a_fact_gets_back_the_date_its_clause_said(fact: str, turn: str, kept: str | None) -> None:
    assert keep_the_date(fact, turn, MONDAY) == (kept or fact)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("The party took place on 2023-03-06.", True),
        ("The party took place on March 6, 2023.", True),
        ("on 6th March 2023", True),
        ("on the 6 of March 2023", True),
        ("on March 16, 2023", False),  # another day
        ("on March 6", False),  # no year: not read as the day
        ("Sipho starts Grade 1 in the week of 2023-03-06.", False),  # a week, not the day
        ("The user goes ice fishing in the weekend of 2023-03-06.", False),  # a weekend
        ("in the week of 2023-03-06, on 2023-03-06", True),
    ],
)
def test_the_day_said_on_is_read_in_iso_and_in_words(text: str, named: bool) -> None:
    assert names_the_day(text, date(2023, 3, 6)) is named
