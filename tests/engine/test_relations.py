"""A fact names its person as the user's turns do (``engine/relations.py``).

The rule reads the user's own words; the end-to-end tests drive it through ``add`` with the
scripted OpenAI-compatible server (memhub.testing.ScriptedOpenAIServer) playing a 1.5B model
that copies the prompt's template word "friend" or drops the relation: the real models here
do not answer deterministically. Real PostgreSQL, real embedder.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from memhub import AsyncMemory
from memhub.engine.prompts import TEMPLATE_PERSON
from memhub.engine.relations import (
    as_the_user,
    people_named,
    relation_of,
    the_person_meant,
    with_relation,
)
from memhub.testing import ScriptedOpenAIServer


@pytest.mark.parametrize(
    ("fact", "said", "named"),
    [
        # heldout8 (read after its runs): the template's "friend" for everyone
        ("The user's friend Anja is a violinist.", "meine freundin Anja isst alles", "freundin"),
        ("The user's friend Sam teaches music.", "moved in with my boyfriend sam!!", "boyfriend"),
        ("The user's friend Lorraine paints.", "My wife, Lorraine, paints.", "wife"),
        ("The user's friend Priya is pregnant.", "my best friend priya told me", "best friend"),
        ("The user's friend Dana works nights.", "wife dana works nights", "wife"),
        ("The user's friend Sam teaches music.", "Sam, my boyfriend, teaches music", "boyfriend"),
        # the relation dropped: the fact said the turn again and told no one who Val is
        ("Val got diagnosed in March.", "my mum Val got diagnosed back in march", "mum"),
        ("Isla made a card.", "our granddaughter Isla, who is five", "granddaughter"),
        # heldout10's r05 (read after its runs)
        ("Manon lives in Nantes.", "c'est ma petite-fille Manon qui m'a installé", "petite-fille"),
    ],
)
def test_a_fact_takes_the_relation_the_user_named_the_person_with(
    fact: str, said: str, named: str
) -> None:
    related = with_relation(fact, TEMPLATE_PERSON, [said])
    assert related.startswith(f"The user's {named} ")
    assert related.endswith(fact.removeprefix("The user's friend "))


@pytest.mark.parametrize(
    ("fact", "said"),
    [
        ("The user's friend Tom lives in Oslo.", "My friend Tom lives in Oslo."),  # a friend
        ("Claire is an anaesthetist.", "his fiancée Claire is an anaesthetist"),  # not the user's
        ("Leo likes dinosaurs.", "twins turning 7, maya and leo"),  # no relation said
        ("The user likes Tom.", "my brother Tom"),  # not a fact opening with the person
        ("The user's friend Ravi is a vet.", "my sister Mira is a vet"),  # a name never said
    ],
)
def test_a_fact_stays_as_written_where_no_turn_names_a_relation(fact: str, said: str) -> None:
    assert with_relation(fact, TEMPLATE_PERSON, [said]) == fact


def test_the_latest_relation_counts() -> None:
    """ "my friend Sam" then "my boyfriend Sam": who Sam is now."""
    assert relation_of("Sam", ["my friend Sam is fun", "moved in with my boyfriend sam"]) == (
        "boyfriend"
    )


def test_the_people_a_user_introduces_by_a_relation() -> None:
    said = ["my partner Svenja is reading over my shoulder", "My daughter Wanjiru is in form four"]
    assert people_named(said) == {"Svenja", "Wanjiru"}
    assert people_named(["my wife works nights", "my boss is The Worst"]) == set()


@pytest.mark.parametrize(
    ("fact", "turns", "meant"),
    [
        # heldout9's q03 (read after its runs): the partner's new job written for "Ravi"
        (
            "Ravi has a job at a Reederei in Hamburg.",
            [
                "my partner Svenja is reading over my shoulder",
                "Svenja hat dort eine Stelle bei einer Reederei bekommen.",
            ],
            "Svenja has a job at a Reederei in Hamburg.",
        ),
        (
            "The user's friend Ravi got into Moi University.",
            ["My daughter Wanjiru sits KCSE.", "Wanjiru has been admitted to Moi University!"],
            "The user's friend Wanjiru got into Moi University.",
        ),
        # heldout11's s09 and s04 (read after their blind runs): "he", "ella" go on about the
        # person the turn named before
        (
            "The user's friend Ravi is a structural engineer.",
            [
                "look what my brother Rohan just sent me. he's been after that job for years. "
                "he's a structural engineer, mostly bridges"
            ],
            "The user's friend Rohan is a structural engineer.",
        ),
        (
            "The user's friend Ravi is a vegan.",
            ["Voy a Japón con mi mejor amiga Marta. Ella es vegana y yo soy alérgica."],
            "The user's friend Marta is a vegan.",
        ),
    ],
)
def test_the_templates_made_up_person_is_the_one_the_user_named(
    fact: str, turns: list[str], meant: str
) -> None:
    assert the_person_meant(fact, TEMPLATE_PERSON, turns) == meant


@pytest.mark.parametrize(
    ("fact", "turns"),
    [
        # two people in the sentence: which one is not guessed
        ("Ravi got a job.", ["my wife Ana and my son Tom", "Ana and Tom both got a job."]),
        # a person never introduced by a relation
        ("Ravi got a job at the port.", ["Svenja got a job at the port."]),
        # the user knows a Ravi
        ("Ravi got a job.", ["my brother Ravi got a job", "my wife Ana too, a job"]),
        # ... typed in lower case
        ("Ravi got a job.", ["my brother ravi got a job", "my wife Ana too, a job"]),
        # "he" after two people named: which one is not guessed
        ("Ravi is a vegan.", ["my wife Ana and my son Tom came. He is vegan."]),
        # "she" with no one named before it in the turn
        ("Ravi is a vegan.", ["my wife Ana came.", "She is vegan."]),
        # no sentence holds the fact's words
        ("Ravi likes jazz.", ["my wife Ana got a job"]),
    ],
)
def test_the_templates_person_stays_where_the_turns_name_no_one_person(
    fact: str, turns: list[str]
) -> None:
    assert the_person_meant(fact, TEMPLATE_PERSON, turns) == fact


@pytest.mark.parametrize(
    ("fact", "turns", "meant"),
    [
        (
            "The user's friend Bernard is 67 years old.",
            ["Bonjour ! Je m'appelle Bernard, 67 ans, conducteur SNCF à la retraite."],
            "The user is 67 years old.",
        ),
        (
            "Bernard's dog is called Filou.",
            ["hi, I'm bernard and this is about my dog Filou"],
            "The user's dog is called Filou.",
        ),
        (
            "Mariana works nights at the hospital.",
            ["The user is Mariana."],  # a stored fact names the user
            "The user works nights at the hospital.",
        ),
    ],
)
def test_a_fact_naming_the_user_by_their_own_name_is_the_users(
    fact: str, turns: list[str], meant: str
) -> None:
    assert as_the_user(fact, TEMPLATE_PERSON, turns) == meant


@pytest.mark.parametrize(
    ("fact", "turns"),
    [
        # the user never names themselves
        ("The user's friend Bernard is 67 years old.", ["my friend Bernard turned 67"]),
        # someone else's name
        ("Anna is 30.", ["I'm Bernard", "my daughter Anna turned 30"]),
        # the user is someone's mother, not that someone
        ("Linda is 8 years old.", ["I'm Linda's mum and she just turned 8"]),
        # "I'm tired" names no one a fact opens with
        ("The user's friend Ravi is tired.", ["I'm tired today"]),
    ],
)
def test_a_fact_about_someone_else_keeps_its_person(fact: str, turns: list[str]) -> None:
    assert as_the_user(fact, TEMPLATE_PERSON, turns) == fact


def _adds(turn: str, fact: str) -> Any:
    def answer(request: dict[str, Any]) -> str:
        prompt = "\n".join(str(m["content"]) for m in request["messages"])
        if (
            '"operations"' in json.dumps(request.get("response_format", ""))
            and json.dumps(turn) in prompt
        ):
            return json.dumps({"operations": [{"op": "ADD", "text": fact, "turns": [1]}]})
        return json.dumps({"operations": [{"op": "NONE"}], "facts": []})

    return answer


@pytest.mark.parametrize(
    ("said", "written", "stored"),
    [
        (
            "btw my girlfriend Anja is a violinist in the Gewandhaus orchestra",
            "The user's friend Anja is a violinist in the Gewandhaus orchestra.",
            "The user's girlfriend Anja is a violinist in the Gewandhaus orchestra.",
        ),
        (
            "my sister Ines just got a job at the port of Hamburg",
            "The user's friend Ravi got a job at the port of Hamburg.",
            "The user's sister Ines got a job at the port of Hamburg.",
        ),
        (
            "my mum Val got diagnosed with early alzheimer's back in march",
            "Val got diagnosed with early Alzheimer's in March.",
            "The user's mum Val got diagnosed with early Alzheimer's in March.",
        ),
        (
            "je m'appelle Bernard, conducteur de train SNCF, a la retraite depuis 2019",
            "The user's friend Bernard is a retired SNCF train conductor.",
            "The user is a retired SNCF train conductor.",
        ),
    ],
)
async def test_a_model_fact_is_stored_with_the_users_relation(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, said: str, written: str, stored: str
) -> None:
    """The second was refused as a copy of the turn before (its words the turn's, in order);
    named as the user's mum it is a fact of the user's, and found by "my mum"."""
    llm.default = _adds(said, written)
    await memory.add(said, user_id="eli")
    await memory.wait_idle()
    facts = await memory.get_all(user_id="eli", filters={"kind": "fact"})
    assert [r["memory"] for r in facts["results"]] == [stored]
