"""How often a model answers consolidation's forget question right.

The question (``prompts.FORGET_CHECK_SYSTEM``) is put only where a person's request to forget
names no stored fact by a word and the embedder picks one fact clearly; a yes retires it.
These pairs, written for it, hold the right fact and, beside it, a fact of another kind the
same request must not take: ``--url`` names an OpenAI-compatible server (``tools/llm_tier.py
serve --model 1.5b``). Prints each answer and the count right; docs/consolidation.md holds
the figures.

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
    for request, fact, asked in PAIRS:
        answer = await llm.generate_structured(forget_check_messages(request, fact), ForgetReply)
        right += answer.value.forget == asked
        print(f"{answer.value.forget!s:5} (right: {asked!s:5}) {request[:45]!r} / {fact!r}")
    print(f"{right} of {len(PAIRS)} right")
    return right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", required=True, help="the server's /v1 URL")
    parser.add_argument("--model", default="local", help="model name sent to the server")
    args = parser.parse_args()
    asyncio.run(run(args.url, args.model))


if __name__ == "__main__":
    main()
