"""One attribute a person has one of at a time, by the embedder: an idea for issue 35's
changes of fact, measured and not shipped (docs/llm.md, 7 December 2026, twentieth stop).

A 1.5B writes the new state of a change ("The user went fully vegan since April 2024.") and
leaves the old one current ("The user is pescatarian."): the two share no word and no
relation the change rules read, so consolidation puts no replacement question. A person has
one home, one job, one diet, one phone at a time: when the embedder places two facts closest
to the same such attribute, the new one might end the old. Each attribute here is a few
facts as consolidation writes them; a fact gives the attribute of the example it is closest
to, when that cosine is at least ``GIVES_AT_LEAST`` (all-mpnet-base-v2 int8).
``bench.change_turns`` prints how the rule separates its labelled pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memhub.embed.base import Embedder

#: What a person has one of at a time, each by facts that give it.
ONE_AT_A_TIME: dict[str, tuple[str, ...]] = {
    "home": (
        "The user lives in Berlin.",
        "The user moved to a new flat in Leeds.",
        "The user is relocating to Lisbon.",
        "The user lives in a house in the suburbs.",
    ),
    "job": (
        "The user works as a nurse.",
        "The user is an accountant at a bank.",
        "The user got a new job at Google.",
        "The user quit their job and works as a freelance designer.",
    ),
    "diet": (
        "The user is vegetarian.",
        "The user is vegan.",
        "The user follows a keto diet.",
        "The user eats fish but no meat.",
    ),
    "phone": ("The user has an iPhone.", "The user uses a Samsung Galaxy phone."),
    "car": ("The user drives a Toyota Corolla.", "The user bought a Tesla."),
    "partner": (
        "The user is married to Anna.",
        "The user's girlfriend is Maria.",
        "The user broke up with their boyfriend.",
        "The user is single.",
    ),
    "favourite food": (
        "The user's favourite cuisine is Thai.",
        "The user's favourite food is pizza.",
    ),
    "working hours": ("The user works night shifts.", "The user works day shifts."),
}

#: The cosine a fact needs to the closest example of its attribute.
GIVES_AT_LEAST = 0.5


class Attributes:
    """The attribute each fact gives, by ``embedder``; the examples are embedded once."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._names = [name for name, facts in ONE_AT_A_TIME.items() for _ in facts]
        self._examples: np.ndarray | None = None

    async def of(self, texts: Sequence[str]) -> list[str | None]:
        """The attribute each of ``texts`` gives, or None where it gives none closely enough."""
        if not texts:
            return []
        if self._examples is None:
            examples = [fact for facts in ONE_AT_A_TIME.values() for fact in facts]
            self._examples = np.asarray(await self.embedder.embed(examples))
        cosines = np.asarray(await self.embedder.embed(list(texts))) @ self._examples.T
        found: list[str | None] = []
        for row in cosines:
            best = int(np.argmax(row))
            found.append(self._names[best] if row[best] >= GIVES_AT_LEAST else None)
        return found
