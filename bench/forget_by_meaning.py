"""What consolidation retires for a request to forget, with and without the model's yes.

memhub reads a request to forget itself (``engine/forgetting``): a request naming a stored fact
by its words retires it; a request naming none by a word ("please forget the salary figure I
gave you" beside "The user is currently on 48k") means the fact the embedder finds clearly
closest (``meant``), which is retired only if the model, asked one yes-or-no question about
that fact (``prompts.forget_check_messages``), says yes. This bench runs those functions on
requests, each beside three stored facts, the model proposing no DELETE, and prints what each
retires, and what it would retire if the embedder's pick went without the question (tried
and reverted on 4 December 2026: docs/consolidation.md). ``DEV`` are the requests the rule's
numbers were set on (bench/llm_set); ``HELD_OUT`` and ``HELD_OUT_2`` were written on 4
December 2026 for this bench and never used to set anything. It also counts the model's yes
to every request/fact pair, asked or not.

    .venv/bin/python -m bench.forget_by_meaning --url http://127.0.0.1:PORT/v1

(``--url``: an OpenAI-compatible server, ``tools/llm_tier.py serve --model 1.5b``; without it,
only what the rules retire without the question.)
"""

from __future__ import annotations

import argparse
import asyncio
from datetime import UTC, datetime
from uuid import uuid4

from bench.forget_question import llm_at
from memhub.config import MemhubSettings
from memhub.embed.base import Embedder
from memhub.engine.forgetting import (
    asked_to_forget,
    meant,
    requests_naming_no_fact,
    tied_by_a_word,
)
from memhub.engine.prompts import ForgetReply, forget_check_messages
from memhub.llm import LLM
from memhub.memory.services import embedder_from_settings
from memhub.store.records import MemoryRecord, Scope, Turn

#: (request, stored facts, the 1-based number of the fact it asks to forget; 0: none shown)
Case = tuple[str, list[str], int]

DEV: list[Case] = [
    (
        "Please forget the salary figure I gave you.",
        [
            "The user is gearing up to ask for a raise.",
            "The user is a dental hygienist in Bristol.",
            "The user is currently on 48k.",
        ],
        3,
    ),
    (
        "Oh, and scratch the bit about where we live, I'd rather that wasnt stored.",
        [
            "The user's son Otis is turning 7 on 2023-02-27.",
            "The user lives in Harrogate.",
            "The user's son Otis loves dinosaurs.",
        ],
        2,
    ),
    (
        "on second thoughts, scrap the name of my firm from whatever you keep, my boss is funny",
        [
            "The user hates sounding stiff in emails.",
            "The user is a paralegal at Halvorsen & Pike.",
            "The user writes emails to clients.",
        ],
        2,
    ),
    (
        "Thinking about it, I'd prefer you didn't hang on to the medication thing from before.",
        [
            "The user takes sertraline for anxiety.",
            "The user is a nurse on night shifts.",
            "The user has a cat.",
        ],
        1,
    ),
    (
        "Forget my old phone number please.",
        [
            "The user's address is 12 Elm Street.",
            "The user lives in Oslo.",
            "The user's email is ana@example.com.",
        ],
        0,
    ),
    (
        "forget the gym stuff",
        [
            "The user likes olives.",
            "The user's sister Aoife is a midwife.",
            "The user lives in Leeds.",
        ],
        0,
    ),
]

HELD_OUT: list[Case] = [
    (
        "can you drop the thing about my health scare",
        [
            "The user runs marathons.",
            "The user had a kidney stone removed in March 2023.",
            "The user works as an architect.",
        ],
        2,
    ),
    (
        "don't keep anything about my ex please",
        [
            "The user's ex-husband Tom lives in Leeds.",
            "The user's daughter is 9.",
            "The user plays chess.",
        ],
        1,
    ),
    (
        "wipe what I told you about my debts",
        [
            "The user is learning Portuguese.",
            "The user's car is a Fiat.",
            "The user's sister Aoife is a midwife.",
        ],
        0,
    ),
    (
        "I'd rather you not remember my birthday",
        [
            "The user's brother's birthday is in June.",
            "The user was born on 1990-04-12.",
            "The user likes carrot cake.",
        ],
        2,
    ),
    (
        "forget where my kids go to school",
        [
            "The user's kids are 6 and 8.",
            "The user lives in Cork.",
            "The user's kids attend St Mary's Primary.",
        ],
        3,
    ),
    (
        "please forget the stuff about my drinking",
        [
            "The user drinks oat milk lattes.",
            "The user is a teacher.",
            "The user has been sober for two years.",
        ],
        3,
    ),
    (
        "scratch my work details",
        [
            "The user's dog is called Bean.",
            "The user is vegetarian.",
            "The user enjoys bouldering.",
        ],
        0,
    ),
    (
        "forget about the wedding stuff",
        [
            "The user's sister is a florist.",
            "The user is getting married on 2024-06-01 in Lisbon.",
            "The user likes jazz.",
        ],
        2,
    ),
]

#: Written on 4 December 2026 at 16:12 UTC, before any change to the rules was tried on them.
HELD_OUT_2: list[Case] = [
    (
        "forget what I told you about my surgery",
        [
            "The user had knee surgery in May 2023.",
            "The user's physio is Dr Patel.",
            "The user plays tennis.",
        ],
        1,
    ),
    (
        "please don't store anything on my mortgage",
        [
            "The user pays 1,200 a month on the house loan.",
            "The user lives in Dublin.",
            "The user likes gardening.",
        ],
        1,
    ),
    (
        "delete the bit about my allergies from your memory",
        [
            "The user is allergic to penicillin.",
            "The user's son has a nut allergy.",
            "The user is a chef.",
        ],
        1,
    ),
    (
        "forget my cat",
        [
            "The user has a cat named Miso.",
            "The user's neighbour has a cat.",
            "The user drinks coffee.",
        ],
        1,
    ),
    (
        "forget the running stuff",
        ["The user runs 10k every Sunday.", "The user's laptop runs Linux.", "The user is vegan."],
        1,
    ),
    (
        "forget about my old car",
        [
            "The user sold their Volvo in 2022.",
            "The user cycles to work.",
            "The user's partner is called Sam.",
        ],
        1,
    ),
    (
        "could you not remember my phone number",
        [
            "The user's phone number is 555-0199.",
            "The user's email is kai@example.com.",
            "The user lives in Perth.",
        ],
        1,
    ),
    (
        "forget my salary",
        ["The user's partner earns 60k.", "The user is a welder.", "The user likes fishing."],
        0,
    ),
    (
        "wipe the thing about my dad from memory",
        [
            "The user's father passed away in 2021.",
            "The user has two brothers.",
            "The user lives in Galway.",
        ],
        1,
    ),
    (
        "forget my address",
        [
            "The user lives at 4 Rue Clerc.",
            "The user's office is on Main Street.",
            "The user likes chess.",
        ],
        1,
    ),
]


def _records(request: str, facts: list[str]) -> tuple[list[Turn], list[MemoryRecord]]:
    now = datetime.now(UTC)
    turn = Turn(1, "u", "s", "user", request, None, None, now)
    shown = [
        MemoryRecord(uuid4(), Scope("u"), f, f, {}, None, now, None, None, (), now, None)
        for f in facts
    ]
    return [turn], shown


async def _retired(embedder: Embedder, case: Case) -> tuple[set[int], list[int], set[int]]:
    """The 1-based numbers of the facts consolidation may retire for the case, the model
    having proposed no DELETE: those the request names by their words (``asked_to_forget``),
    those it may mean by the embedder, closest first (``meant``: asked in turn until a yes),
    and those it names by one word they share (``tied_by_a_word``: each asked)."""
    request, facts, _ = case
    turns, shown = _records(request, facts)
    numbers = {record.id: n for n, record in enumerate(shown, start=1)}
    words = {numbers[i] for i in asked_to_forget(turns, {1: request}, shown)}
    asks = requests_naming_no_fact(turns, {1: request}, shown)
    meaning = [
        numbers[i]
        for ask in await meant(embedder, asks, {1: request}, shown)
        for i in ask.facts
        if numbers[i] not in words
    ]
    tied = {numbers[i] for ask in tied_by_a_word(turns, {1: request}, shown) for i in ask.facts}
    tied -= words
    return words, meaning, tied


async def _said_yes(llm: LLM, request: str, facts: list[str]) -> set[int]:
    """The 1-based numbers of the facts the model says ``request`` asks to forget, each
    asked as consolidation asks it."""
    yes = set()
    for number, fact in enumerate(facts, start=1):
        answer = await llm.generate_structured(forget_check_messages(request, fact), ForgetReply)
        if answer.value.forget:
            yes.add(number)
    return yes


def _tally(retired: list[set[int]], cases: list[Case]) -> str:
    """How many cases retired exactly the meant fact (or nothing, when none is meant), and
    how many wrong facts were retired in all."""
    pairs = [(got, want) for got, (_, _, want) in zip(retired, cases, strict=True)]
    right = sum(got == ({want} if want else set()) for got, want in pairs)
    wrong = sum(len(got - {want}) for got, want in pairs)
    return f"{right} of {len(cases)} right, {wrong} wrong facts retired"


async def run(url: str | None, model: str) -> None:
    embedder = embedder_from_settings(MemhubSettings(database_url="memory://"))
    llm = llm_at(url, model) if url else None
    for name, cases in (("dev", DEV), ("held-out", HELD_OUT), ("held-out-2", HELD_OUT_2)):
        alone: list[set[int]] = []  # the embedder's pick without the question
        asked: list[set[int]] = []  # memhub's rule: a meaning pick retired only on a yes
        yes_right = yes_other = 0
        for case in cases:
            request, facts, want = case
            words, meaning, tied = await _retired(embedder, case)
            alone.append(words | set(meaning[:1]) | tied)
            line = f"{name:10} (right: {want}) without the question {sorted(alone[-1])}"
            if llm is not None:
                said_yes = await _said_yes(llm, request, facts)
                yes_right += want in said_yes
                yes_other += len(said_yes - {want})
                first_yes = [n for n in meaning if n in said_yes][:1]
                asked.append(words | set(first_yes) | (tied & said_yes))
                line += f", with it {sorted(asked[-1])}"
            print(f"{line} {request[:50]!r}")
        print(f"{name}, without the question: {_tally(alone, cases)}")
        if llm is not None:
            right_facts = sum(want > 0 for _, _, want in cases)
            others = sum(len(facts) for _, facts, _ in cases) - right_facts
            print(
                f"{name}, with it: {_tally(asked, cases)}; its yes to {yes_right} of"
                f" {right_facts} right facts, to {yes_other} of {others} others"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--url", help="an OpenAI-compatible server's /v1 URL: also ask the question"
    )
    parser.add_argument("--model", default="local", help="model name sent to the server")
    args = parser.parse_args()
    asyncio.run(run(args.url, args.model))


if __name__ == "__main__":
    main()
