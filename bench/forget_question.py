"""How often a model answers consolidation's forget question right.

The question (``prompts.FORGET_CHECK_SYSTEM``) is put where a person's request to forget names
no stored fact by a word and the embedder points at one, and for the few facts a request ties
by one word, a name or a source turn (docs/consolidation.md); a yes retires the fact. Each
request here is paired with the fact it means and, beside it, a fact of another kind it must
not take. ``PAIRS`` were written for this bench; ``READ`` come from the logged runs of
bench/llm_set's sets and bench.forget_by_meaning's cases; ``FRESH`` were written on 6 December
2026 before either wording below was asked about them. ``--url`` names an OpenAI-compatible
server (``tools/llm_tier.py serve --model 1.5b``). Prints each wrong answer and, per group,
the yeses to facts meant and to facts not meant; docs/consolidation.md holds the figures.

    .venv/bin/python -m bench.forget_question --url http://127.0.0.1:PORT/v1
"""

from __future__ import annotations

import argparse
import asyncio

from memhub.config import MemhubSettings
from memhub.engine.prompts import ForgetReply, forget_check_messages
from memhub.llm import LLM
from memhub.memory.services import llm_from_settings

MEDICATION = "Thinking about it, I'd prefer you didn't hang on to the medication thing from before."
FIRM = "on second thoughts, scrap the name of my firm from whatever you keep, my boss is funny"
PHONE = "Forget my old phone number please."
SALARY = "Please forget the salary figure I gave you."
HOME = "Oh, and scratch the bit about where we live, I'd rather that wasnt stored."

#: (request, stored fact, whether the request asks to forget it)
PAIRS = [
    (MEDICATION, "The user takes sertraline for anxiety.", True),
    (MEDICATION, "The user is a nurse on night shifts at the infirmary.", False),
    (FIRM, "The user is a paralegal at Halvorsen & Pike.", True),
    (FIRM, "The user hates sounding stiff in emails.", False),
    (PHONE, "The user's address is 12 Elm Street.", False),
    (PHONE, "The user lives in Oslo.", False),
    (SALARY, "The user is paid 48k a year.", True),
    (SALARY, "The user works at the bank.", False),
    ("forget the gym stuff", "The user likes olives.", False),
    (HOME, "The user lives in Oslo.", True),
    (HOME, "The user has a dog named Pickle.", False),
    ("please forget what I said about my ex", "The user's sister Aoife is a midwife.", False),
    (
        "hmm, actually that bit about what I owe on my cards, I'd rather it wasn't kept",
        "The user has around $18k on credit cards.",
        True,
    ),
    (
        "Actually, don't keep the stuff about my kid's school.",
        "The user's son goes to Greenfield Primary.",
        True,
    ),
]


FERTILITY = (
    "i've had second thoughts about sharing the fertility stuff here; could you wipe whatever"
    " you've got on that"
)

#: From the logged runs of heldout9 (read after its runs) and bench.forget_by_meaning's cases.
READ = [
    (
        "about kamau, please don't keep that information",
        "The user's brother Kamau is drinking too much.",
        True,
    ),
    (
        "about kamau, please don't keep that information",
        "The user's brother Kamau lost his job at the flower farm.",
        True,
    ),
    (
        "about kamau, please don't keep that information",
        "The user keeps four dairy cows at their shamba in Subukia.",
        False,
    ),
    (
        "about kamau, please don't keep that information",
        "The user's wife Njeri handles the milk sales.",
        False,
    ),
    (
        "eh the salary number i told you last time, can delete or not? don't want it kept anywhere",
        "The user's senior colleague at the same level earns RM7,500.",
        True,
    ),
    (
        "eh the salary number i told you last time, can delete or not? don't want it kept anywhere",
        "The user has a cat named Oyen.",
        False,
    ),
    (
        "excuse me, about my company name i told you; please delete it",
        "The user works as accountant at Tanaka Shoji.",
        True,
    ),
    (
        "excuse me, about my company name i told you; please delete it",
        "The user lives in Osaka.",
        False,
    ),
    (
        "excuse me, about my company name i told you; please delete it",
        "The user's English is not so good.",
        False,
    ),
    (
        FERTILITY,
        "The user started IVF in April 2024.",
        True,
    ),
    (
        FERTILITY,
        "The user is a paralegal at an immigration law firm in Toronto.",
        False,
    ),
    (
        "can you drop the thing about my health scare",
        "The user had a kidney stone removed in March 2023.",
        True,
    ),
    ("can you drop the thing about my health scare", "The user runs marathons.", False),
    ("forget where my kids go to school", "The user's kids attend St Mary's Primary.", True),
    ("forget where my kids go to school", "The user's kids are 6 and 8.", False),
    ("I'd rather you not remember my birthday", "The user was born on 1990-04-12.", True),
    ("I'd rather you not remember my birthday", "The user's brother's birthday is in June.", False),
    ("forget my old phone number please", "The user's address is 12 Elm Street.", False),
    ("forget my salary", "The user's partner earns 60k.", False),
    ("wipe what I told you about my debts", "The user's car is a Fiat.", False),
]

#: Written on 6 December 2026 before either wording of the question was asked about them.
FRESH = [
    (
        "please forget the stuff about my therapy sessions",
        "The user sees Dr Lowe every Thursday for CBT.",
        True,
    ),
    (
        "please forget the stuff about my therapy sessions",
        "The user works Thursdays from home.",
        False,
    ),
    ("don't keep my bank details", "The user banks with Monzo.", True),
    ("don't keep my bank details", "The user is saving for a trip to Japan.", False),
    ("can you forget about my ex", "The user dated Marco for four years until 2022.", True),
    ("can you forget about my ex", "The user's current partner is Sam.", False),
    ("scratch the info on my kid's allergy", "The user's daughter Mia can't eat peanuts.", True),
    ("scratch the info on my kid's allergy", "The user's daughter Mia is 7.", False),
    ("I'd rather you didn't store my workplace", "The user is a cashier at Tesco in Dundee.", True),
    ("I'd rather you didn't store my workplace", "The user lives in Dundee.", False),
    (
        "forget the thing about my court case",
        "The user is suing their former landlord for the deposit.",
        True,
    ),
    ("forget the thing about my court case", "The user rents a flat in Leith.", False),
    ("delete what I said about my weight", "The user is 92 kg.", True),
    ("delete what I said about my weight", "The user is 1.80 m tall.", False),
    ("don't remember my pregnancy", "The user is expecting a baby in March.", True),
    ("don't remember my pregnancy", "The user's sister has two kids.", False),
    ("forget my car stuff", "The user drives a 2012 Ford Focus.", True),
    ("forget my car stuff", "The user cycles to work in summer.", False),
    ("please forget the religion stuff", "The user goes to mass every Sunday.", True),
    ("please forget the religion stuff", "The user volunteers at a food bank on Saturdays.", False),
]


def llm_at(url: str, model: str) -> LLM:
    """The OpenAI-compatible server at ``url`` as consolidation calls it, with a timeout a
    one-thread server on a loaded machine keeps within."""
    settings = MemhubSettings(
        database_url="memory://",
        llm_provider="llamacpp",
        llm_base_url=url,
        llm_model=model,
        llm_timeout=600.0,
    )
    llm = llm_from_settings(settings)
    assert llm is not None
    return llm


async def run(url: str, model: str) -> int:
    llm = llm_at(url, model)
    right = 0
    for name, pairs in (("written", PAIRS), ("read", READ), ("fresh", FRESH)):
        yes_meant = yes_other = 0
        for request, fact, asked in pairs:
            messages = forget_check_messages(request, fact)
            forget = (await llm.generate_structured(messages, ForgetReply)).value.forget
            right += forget == asked
            yes_meant += forget and asked
            yes_other += forget and not asked
            if forget != asked:
                print(f"wrong: {forget!s:5} {request[:50]!r} / {fact!r}")
        meant = sum(asked for _, _, asked in pairs)
        print(
            f"{name}: yes to {yes_meant} of {meant} facts meant,"
            f" to {yes_other} of {len(pairs) - meant} others"
        )
    print(f"{right} of {len(PAIRS) + len(READ) + len(FRESH)} right")
    return right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="the server's /v1 URL")
    parser.add_argument("--model", default="local", help="model name sent to the server")
    args = parser.parse_args()
    asyncio.run(run(args.url, args.model))


if __name__ == "__main__":
    main()
