"""Deterministic synthetic chat memories and queries for the hot-path workloads.

Built from a small vocabulary of chat-like templates (not LoCoMo), seeded, so every run and every
system sees the same texts in the same order.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta

_NAMES = ("Alex", "Sam", "Priya", "Jonas", "Mei", "Omar", "Lucia", "Tom", "Aiko", "Nia")
_PLACES = (
    "Lisbon",
    "the lake house",
    "Kyoto",
    "the gym",
    "my parents' place",
    "Berlin",
    "the farmers market",
    "the office",
    "Nairobi",
    "the climbing wall",
    "Oaxaca",
    "the cabin",
)
_THINGS = (
    "a sourdough starter",
    "the new bike",
    "a pottery class",
    "the tax forms",
    "a puppy",
    "the garden beds",
    "a guitar",
    "the wedding playlist",
    "a marathon plan",
    "the roof repair",
    "a photography course",
    "the book club pick",
    "a vegan lasagna",
    "the job offer",
)
_FEELINGS = ("excited", "nervous", "exhausted", "proud", "stressed", "relieved", "curious", "happy")
_WHEN = (
    "yesterday",
    "last weekend",
    "this morning",
    "two weeks ago",
    "on Friday",
    "last month",
    "tonight",
    "next Tuesday",
    "over the holidays",
    "after work",
)
_ACTIVITIES = (
    "hiking",
    "painting",
    "baking bread",
    "running",
    "learning Spanish",
    "gardening",
    "playing chess",
    "swimming",
    "writing poems",
    "woodworking",
)

_MEMORY_TEMPLATES = (
    "I went to {place} {when} with {name} and it was great.",
    "{name} told me {when} that they started {activity}.",
    "I'm {feeling} about {thing}; I finally sorted it out {when}.",
    "Remind me to call {name} about {thing}.",
    "I've been {activity} a lot since we moved near {place}.",
    "My favourite thing lately is {activity}, {name} got me into it.",
    "We are planning a trip to {place} {when}, I'm {feeling}.",
    "I bought {thing} {when} and {name} helped me set it up.",
    "Honestly I feel {feeling} whenever {name} brings up {thing}.",
    "{name} and I tried {activity} at {place} {when}.",
    "I don't like {activity} much, but {name} loves it.",
    "Work has been busy, so {thing} is on hold until {when}.",
)
_QUERY_TEMPLATES = (
    "What did I do at {place}?",
    "When did {name} start {activity}?",
    "How do I feel about {thing}?",
    "Who got me into {activity}?",
    "What is the plan for {place}?",
    "What did {name} help me with?",
    "Any news about {thing}?",
)


def _fill(template: str, rng: random.Random) -> str:
    return template.format(
        name=rng.choice(_NAMES),
        place=rng.choice(_PLACES),
        thing=rng.choice(_THINGS),
        feeling=rng.choice(_FEELINGS),
        when=rng.choice(_WHEN),
        activity=rng.choice(_ACTIVITIES),
    )


@dataclass(frozen=True, slots=True)
class SyntheticTurn:
    """One generated memory, with the user it belongs to and its (fake) time."""

    index: int
    user_id: str
    text: str
    timestamp: datetime


def memories(
    start: int, stop: int, *, users: int, seed: int = 7, prefix: str = "hot"
) -> Iterator[SyntheticTurn]:
    """Turns ``start`` to ``stop`` of the stream; users take turns round-robin.

    Each turn is generated from its own seed, so any slice is reproducible without the ones
    before it.
    """
    epoch = datetime(2024, 1, 1)
    for i in range(start, stop):
        rng = random.Random(seed * 1_000_003 + i)
        text = _fill(rng.choice(_MEMORY_TEMPLATES), rng)
        yield SyntheticTurn(i, f"{prefix}-u{i % users}", text, epoch + timedelta(minutes=7 * i))


def queries(
    count: int, *, users: int, seed: int = 11, prefix: str = "hot"
) -> list[tuple[str, str]]:
    """``count`` (user_id, query) pairs spread over the users."""
    rng = random.Random(seed)
    return [
        (f"{prefix}-u{rng.randrange(users)}", _fill(rng.choice(_QUERY_TEMPLATES), rng))
        for _ in range(count)
    ]
