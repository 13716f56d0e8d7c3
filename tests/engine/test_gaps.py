"""The second, short question about a user turn's statements the first call left unwritten,
and a granted request to forget honoured when the model proposed no DELETE.

The LLM is memhub.testing's scripted OpenAI-compatible server: a real 1.5B model does not
answer deterministically, so each test scripts the model the bench saw (one fact of a turn
stating three; NONE, or the same fact again, for a request to forget) and checks what
memhub decides. Real PostgreSQL, real embedder.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, date, datetime
from typing import Any, cast

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.engine.consent import facts_clearly_asked, forgotten_words
from memhub.engine.gaps import ask, uncovered
from memhub.engine.grounding import says_again
from memhub.engine.prompts import (
    GAP_FACT_MAX_CHARS,
    GAP_SYSTEM,
    TURN_TRANSLATION_SYSTEM,
    GapReply,
    PromptTurn,
)
from memhub.llm import LLM
from memhub.llm.base import StructuredResult, Usage
from memhub.testing import ScriptedOpenAIServer
from tests.engine.conftest import scripted, store_facts

THREE = "My sister Mira is a vet in Leeds. We adopted a puppy called Rex, and I started pottery."
SERTRALINE = "The user takes sertraline for anxiety."
NURSE = "The user is a nurse on night shifts."


def prompt_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"])


def is_question(request: dict[str, Any]) -> bool:
    return request["messages"][0]["content"].startswith(GAP_SYSTEM[:40])


def ops(*operations: dict[str, Any]) -> str:
    return json.dumps({"operations": list(operations)})


@pytest.fixture
def gap_settings(settings: MemhubSettings, llm: ScriptedOpenAIServer) -> MemhubSettings:
    return scripted(settings, llm, llm_fill_gaps=True, llm_check_replacements=False)


async def facts(memory: AsyncMemory, user: str) -> list[str]:
    found = await memory.get_all(user_id=user, filters={"kind": "fact"})
    return sorted(r["memory"] for r in found["results"])


def test_the_statements_no_fact_covers_are_the_uncovered_sentences() -> None:
    written = ["The user's sister Mira is a vet in Leeds."]
    rest = ("We adopted a puppy called Rex, and I started pottery.",)
    assert uncovered(THREE, written).sentences == rest
    # one clause uncovered is enough: the puppy is written, the pottery is not
    written.append("The user has a puppy called Rex.")
    gap = uncovered(THREE, written)
    assert gap.sentences == rest
    # an answer must say something of the uncovered clause, of the person
    assert gap.refusal("The user does pottery.") is None
    assert gap.refusal("The user's puppy is called Rex.") is not None
    assert gap.refusal("The user said they started pottery.") is not None
    # passing news of the day it was said on
    assert gap.refusal("The user started pottery on 2023-01-10.", (), date(2023, 1, 10))
    # the same day in words (heldout2's k11: "The party took place on March 6, 2023.")
    said_on = date(2023, 1, 10)
    assert gap.refusal("The user started pottery on January 10, 2023.", (), said_on) is not None
    assert gap.refusal("The user started pottery on 10th January 2023.", (), said_on) is not None
    assert gap.refusal("The user started pottery on January 3, 2023.", (), said_on) is None
    written.append("The user does pottery.")
    assert uncovered(THREE, written).sentences == ()


def test_a_clause_mostly_unwritten_is_asked_and_an_answer_may_add_to_a_written_one() -> None:
    """heldout6's q02 and q01 (read after its run): "fintech" in a written fact covered "the
    fintech lets me work fully remote", and "The user has been doing nights on the cardiac
    ward ... since 2019" was refused for holding no word of the unwritten clauses."""
    remote = "I'm keeping my job, the fintech lets me work fully remote"
    written = ["The user is keeping their job.", "The user is a UX designer at a fintech."]
    gap = uncovered(remote, written)
    assert gap.sentences == (remote,)
    assert gap.refusal("The user works fully remotely.") is None
    assert gap.refusal("The user is keeping their job at the fintech.") is not None
    assert uncovered(remote, [*written, "The user works fully remote."]).sentences == ()
    nights = "been doing nights on the cardiac ward at the Royal Infirmary since 2019, eating is all over"
    gap = uncovered(nights, ["The user works nights at the Royal Infirmary."])
    assert gap.refusal("The user has been on the cardiac ward since 2019.") is None
    assert gap.refusal("The user works nights at the infirmary.") is not None


def test_an_answer_may_say_a_one_word_clause_of_a_sentence_asked_about() -> None:
    """heldout8's s05 and s10 (read after their runs): the sentence is asked about for its
    longer clause, and the model's "The user's girlfriend Aoife is a midwife." (of "she's a
    midwife") was refused as of no unwritten statement. A one-word clause about someone else
    asks no question of its own, and a word already written is still no answer."""
    said = "she's a midwife, so she'll probably be wrecked after a shift"
    gap = uncovered(said, [])
    assert gap.sentences == (said,)
    assert gap.refusal("The user's girlfriend Aoife is a midwife.", ("Aoife",)) is None
    assert uncovered("she's a midwife", []).sentences == ()  # no statement of its own
    written = ["The user's girlfriend is a midwife."]
    assert uncovered(said, written).refusal("The user's girlfriend is a midwife.") is not None
    # of a sentence asking to forget, only the statements are shown, and only they answer
    asks = "forget the gambling thing, she's a midwife, and i work nights at the depot"
    gap = uncovered(asks, [])
    assert gap.sentences == ("and i work nights at the depot",)
    assert gap.refusal("The user's girlfriend is a midwife.") is not None


def test_one_word_said_of_the_person_themselves_is_a_statement() -> None:
    """heldout8's s05 (read after its runs): "I PASSED!!! first time, only 2 minors" never
    became a fact, and no question was asked about its one-word news. Said of the person
    themselves it is asked about; a word of thinking ("I know") or someone else's one word
    is not."""
    assert uncovered("I PASSED!!!", []).sentences == ("I PASSED!!!",)
    assert uncovered("I PASSED!!!", []).refusal("The user passed their driving test.") is None
    assert uncovered("we moved", []).sentences == ("we moved",)
    assert uncovered("i'm vegan now", []).sentences == ("i'm vegan now",)
    assert uncovered("I know.", []).sentences == ()
    assert uncovered("ok, I guess", []).sentences == ()
    assert uncovered("she hates it", []).sentences == ()  # one word, not of the person
    assert uncovered("I passed", ["The user passed the test."]).sentences == ()


def test_the_log_says_why_an_answer_is_refused() -> None:
    gap = uncovered(THREE, ["The user's sister Mira is a vet in Leeds."])
    said_on = date(2023, 1, 10)
    assert gap.refusal("The user started pottery on January 10, 2023.", (), said_on) == (
        "names the day it was said on"
    )
    assert gap.refusal("The user said they started pottery.") == "reports the conversation"
    assert gap.refusal("The user's sister is a vet.") == "not of the unwritten statements"
    assert gap.refusal("The user does pottery.", (), said_on) is None


def test_a_line_without_a_stop_does_not_run_into_the_next() -> None:
    # a turn written as lines: the written line must not cover the unwritten one with it
    turn = "My sister Mira is a vet in Leeds\nWe adopted a puppy called Rex"
    written = ["The user's sister Mira is a vet in Leeds."]
    assert uncovered(turn, written).sentences == ("We adopted a puppy called Rex",)


@pytest.mark.parametrize(
    "turn",
    [
        "thanks, that's perfect!",  # chatter
        "how tall is Kilimanjaro?",  # a question about the world states nothing
        "Please forget that I take sertraline.",  # a request to forget: its facts are to go
        "ok",
    ],
)
def test_chatter_questions_and_requests_to_forget_ask_nothing(turn: str) -> None:
    assert uncovered(turn, []).sentences == ()


DEBT = "I've got around $18k on credit cards and I need to get serious about paying it down."
DEBT_AWAY = "that bit about what I owe on my cards, I'd rather it wasn't kept if that's ok"


def test_a_sentence_naming_what_a_request_asks_to_forget_asks_nothing() -> None:
    forgotten = forgotten_words([DEBT_AWAY])
    assert uncovered(DEBT, []).sentences == (DEBT,)
    assert uncovered(DEBT, [], forgotten=forgotten).sentences == ()
    # the request's own words ("owe", "cards"), not its verb or its politeness
    other = "I'd rather not pay a subscription, free stuff only please."
    assert uncovered(other, [], forgotten=forgotten).sentences == (other,)


KOFI = (
    "actually forget what I said about Kofi and the gambling, that's his business not mine,"
    " and fyi im a dispatcher for the fire service in Albany"
)


def test_a_turn_asking_to_forget_is_asked_only_about_its_other_statements() -> None:
    # heldout5's e12: the dispatcher job, said beside a request, was never written
    gap = uncovered(KOFI, [])
    assert gap.sentences == (
        "that's his business not mine, and fyi im a dispatcher for the fire service in Albany",
    )
    assert gap.refusal("The user is a dispatcher for the fire service in Albany.") is None
    assert gap.refusal("Kofi has been gambling a lot.") is not None
    # the request's own clause is never shown, in a sentence of its own or not
    assert uncovered("Please forget my address. I moved to Oslo in May.", []).sentences == (
        "I moved to Oslo in May.",
    )


async def test_no_question_brings_back_what_the_window_asks_to_forget(
    gap_settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    """The model writes nothing for the debt (or its facts were refused); the request to
    forget it later in the window keeps the question from asking about it again: the 1.5B
    wrote "The user is serious about paying it down." when asked (bench/llm_set heldout3)."""
    llm.default = lambda request: (
        json.dumps({"facts": ["The user is serious about paying it down."]})
        if is_question(request)
        else ops({"op": "NONE"})
    )
    async with AsyncMemory(settings=gap_settings) as memory:
        await memory.add(
            [
                {"role": "user", "content": DEBT},
                {"role": "assistant", "content": "A free budgeting app could help."},
                {"role": "user", "content": DEBT_AWAY},
            ],
            user_id="debt",
            wait=True,
        )
        assert await facts(memory, "debt") == []
    assert [r for r in llm.chat_requests if is_question(r.json)] == []


def test_only_a_fact_a_request_names_more_than_any_other_is_clearly_asked() -> None:
    likes = ["Ada likes figs.", "Ada likes olives.", "Ada likes dates."]
    assert facts_clearly_asked("Please forget that I like olives.", likes) == [1]
    # all three hold the request's one word: each is asked for (test_consent.py's one word
    # held); a fourth like would make it a kind too common to ask about each
    assert facts_clearly_asked("Please forget what I like.", likes) == [0, 1, 2]
    assert facts_clearly_asked("Please forget what I like.", [*likes, "Ada likes rain."]) == []
    assert facts_clearly_asked("Forget my phone number.", likes) == []  # none named
    assert facts_clearly_asked("Don't forget that I like olives.", likes) == []


def test_every_fact_a_request_names_by_two_words_or_more_is_asked() -> None:
    card = [
        "The user owes about 9k on their credit card.",
        "The user plans to clear the credit card by spring.",
        "The user is a nurse.",
    ]
    asked = "On second thought, could you not keep the credit card stuff?"
    assert facts_clearly_asked(asked, card) == [0, 1]
    likes = ["Ada likes figs.", "Ada likes olives.", "Ada likes dates."]
    assert facts_clearly_asked("Please forget that I like olives and figs.", likes) == [0, 1]
    # one word of the request, held by two facts, names both (test_consent.py)
    assert facts_clearly_asked("Forget the card thing.", card) == [0, 1]


def test_an_answer_that_says_a_known_fact_again_is_known() -> None:
    assert says_again(
        "The user's sister Mira is a vet.", ["The user's sister Mira is a vet in Leeds."]
    )
    assert not says_again("The user has a puppy.", ["The user's sister Mira is a vet in Leeds."])


class _Answers:
    """An LLM whose every structured answer is ``value`` (what ``gaps.ask`` reads of one)."""

    model_name = "answers"

    def __init__(self, value: GapReply) -> None:
        self.value = value

    async def generate_structured(self, messages: Any, model: Any) -> StructuredResult[Any]:
        return StructuredResult(self.value, Usage(calls=1), "")


async def test_a_fact_the_server_cut_at_the_schemas_length_is_dropped() -> None:
    # llama.cpp, enforcing the schema, cut a longer fact at 200 characters, mid-word
    cut = ("The user's sister Mira is a vet in Leeds who " + "treats horses and " * 12)[:200]
    assert len(cut) == GAP_FACT_MAX_CHARS
    reply = GapReply(facts=["The user started pottery.", cut])
    said = PromptTurn(1, "user", datetime(2023, 1, 10, tzinfo=UTC), THREE)
    llm = cast(LLM, _Answers(reply))
    assert (await ask(llm, said, None, None))[1] == ["The user started pottery."]


def test_the_reply_takes_the_shapes_a_small_model_writes() -> None:
    one = ["The user does pottery."]
    assert GapReply.model_validate({"facts": one}).facts == one
    assert GapReply.model_validate(one).facts == one
    shaped = {"operations": [{"op": "ADD", "text": one[0], "turns": [1]}]}
    assert GapReply.model_validate(shaped).facts == one
    assert GapReply.model_validate({"facts": [{"fact": one[0]}]}).facts == one


async def test_a_turn_stating_more_than_its_facts_gets_one_question_about_the_rest(
    gap_settings: MemhubSettings,
    llm: ScriptedOpenAIServer,
    db_url: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The first call keeps one fact of three; the question is about the two sentences left,
    and each fact of its answer passes the ADD guards: a copy of the turn, a copy of the
    question's own example and a fact already written are refused, the rest stored."""
    answers = [
        "The user has a puppy called Rex.",
        "The user started pottery.",
        "I adopted a puppy called Rex.",  # the turn in its own voice: a copy
        "The user plays the cello.",  # the question's example, not the user's
        "The user's sister Mira is a vet.",  # written by the first call already
    ]

    def model(request: dict[str, Any]) -> str:
        if is_question(request):
            return json.dumps({"facts": answers})
        return ops({"op": "ADD", "text": "The user's sister Mira is a vet in Leeds.", "turns": [1]})

    llm.default = model
    caplog.set_level(logging.INFO, "memhub.consolidation")
    async with AsyncMemory(settings=gap_settings) as memory:
        await memory.add(THREE, user_id="gap", wait=True)
        assert await facts(memory, "gap") == [
            "The user has a puppy called Rex.",
            "The user started pottery.",
            "The user's sister Mira is a vet in Leeds.",
        ]
    (question,) = [prompt_of(r.json) for r in llm.chat_requests if is_question(r.json)]
    assert "We adopted a puppy called Rex" in question and "vet in Leeds" not in question
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT sum(calls) FROM memory_llm_usage WHERE user_id = 'gap'")
        assert await cur.fetchone() == (2,)  # the consolidation call and the question
    # each refusal is logged with why, the written fact's too (it says nothing unwritten)
    said = [r.getMessage() for r in caplog.records if r.name == "memhub.consolidation"]
    assert any(f"{answers[-1]!r} refused: not of the unwritten" in m for m in said), said


async def test_a_turn_its_facts_cover_asks_no_question(
    gap_settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    llm.default = ops(
        {"op": "ADD", "text": "The user's sister Mira is a vet in Leeds.", "turns": [1]}
    )
    async with AsyncMemory(settings=gap_settings) as memory:
        await memory.add("My sister Mira is a vet in Leeds.", user_id="covered", wait=True)
        assert await facts(memory, "covered") == ["The user's sister Mira is a vet in Leeds."]
    assert [r for r in llm.chat_requests if is_question(r.json)] == []


async def test_an_unusable_question_answer_leaves_the_first_calls_facts(
    gap_settings: MemhubSettings, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    def model(request: dict[str, Any]) -> str:
        if is_question(request):
            return "Sure! The user has a puppy."  # no JSON, twice (the repair too)
        return ops({"op": "ADD", "text": "The user's sister Mira is a vet in Leeds.", "turns": [1]})

    llm.default = model
    async with AsyncMemory(settings=gap_settings) as memory:
        await memory.add(THREE, user_id="garbled", wait=True)
        assert await facts(memory, "garbled") == ["The user's sister Mira is a vet in Leeds."]
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT count(*) FROM memory_jobs")
        assert await cur.fetchone() == (0,)  # completed, not parked


@pytest.mark.parametrize(
    ("request_", "answer"),
    [
        # the model answers nothing
        ("Please forget that I take sertraline.", ops({"op": "NONE"})),
        # the model adds the very fact again: refused, and the fact retired
        (
            "Forget the sertraline thing, please.",
            ops({"op": "ADD", "text": SERTRALINE, "turns": [1]}),
        ),
    ],
)
async def test_a_granted_request_is_honoured_when_the_model_proposes_no_delete(
    gap_settings: MemhubSettings, llm: ScriptedOpenAIServer, request_: str, answer: str
) -> None:
    """Retired visibly: in the review list with why (memhub read the request, not the model)
    and undone in one step; the fact the request does not name stays."""
    llm.default = answer
    async with AsyncMemory(settings=gap_settings) as memory:
        await store_facts(memory, "meds", SERTRALINE, NURSE)
        await memory.add(request_, user_id="meds", wait=True)
        assert await facts(memory, "meds") == [NURSE]
        changes = (await memory.model_changes(user_id="meds"))["results"]
        # the fact, and the request's own episode that says it too
        assert sorted(c["before"] for c in changes) == sorted([request_, SERTRALINE])
        (change,) = [c for c in changes if c["before"] == SERTRALINE]
        assert "the model proposed no DELETE" in change["reason"]
        await memory.undo_change(change["id"], user_id="meds")
        assert await facts(memory, "meds") == sorted([NURSE, SERTRALINE])


@pytest.mark.parametrize(
    "said",
    [
        "Don't forget that I take sertraline.",  # negated: asks nothing
        # naming no fact by a word: by meaning alone memhub retires nothing (only a model's
        # DELETE of the fact it means may stand)
        "I'd prefer you didn't hang on to the medication thing from before.",
        'My friend wrote: "forget that I take sertraline".',  # someone else's words
        "I take sertraline, it helps a lot.",  # no request at all
    ],
)
async def test_no_request_retires_nothing_whatever_the_model_answers(
    gap_settings: MemhubSettings, llm: ScriptedOpenAIServer, said: str
) -> None:
    llm.default = ops({"op": "NONE"})
    async with AsyncMemory(settings=gap_settings) as memory:
        await store_facts(memory, "kept", SERTRALINE, NURSE)
        await memory.add(said, user_id="kept", wait=True)
        assert await facts(memory, "kept") == sorted([NURSE, SERTRALINE])
        assert (await memory.model_changes(user_id="kept"))["results"] == []


async def test_a_fact_stated_and_taken_back_in_one_conversation_is_not_stored(
    gap_settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    """The model adds the fact the user asked, two turns later, not to keep: refused; the
    fact no request names stands."""
    owed = "The user has $18k on credit cards."
    llm.default = ops(
        {"op": "ADD", "text": owed, "turns": [1]},
        {"op": "ADD", "text": "The user is lactose intolerant.", "turns": [2]},
    )
    said = [
        {"role": "user", "content": "I've got around $18k on credit cards."},
        {"role": "user", "content": "I'm lactose intolerant, is ghee ok?"},
        {"role": "user", "content": "Please forget what I owe on my cards."},
    ]
    async with AsyncMemory(settings=gap_settings) as memory:
        await memory.add(said, user_id="owed", wait=True)
        assert await facts(memory, "owed") == ["The user is lactose intolerant."]


async def test_a_fact_drawn_from_a_request_alone_is_not_stored(
    gap_settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    """heldout8's s01 (read after its blind run): from "can u forget the speeding thing i told
    u about" the 1.5B wrote "The user is the one who said the speeding thing.", which kept
    the forgotten thing in memory. A fact saying only what the turn's request names is
    refused; one saying what the rest of the turn says stands."""
    llm.default = ops(
        {"op": "ADD", "text": "The user is the one who said the speeding thing.", "turns": [1]},
        {"op": "ADD", "text": "The user was outside all day.", "turns": [1]},
    )
    said = "outside all day. also can u forget the speeding thing i told u about, its sorted"
    async with AsyncMemory(settings=gap_settings) as memory:
        await memory.add([{"role": "user", "content": said}], user_id="s01", wait=True)
        assert await facts(memory, "s01") == ["The user was outside all day."]


async def test_the_question_carries_the_applications_rules(
    settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    """What the application forbids storing, the question is told too."""
    llm.default = lambda request: (
        json.dumps({"facts": []}) if is_question(request) else ops({"op": "NONE"})
    )
    ruled = scripted(
        settings, llm, llm_fill_gaps=True, custom_instructions="Never store addresses."
    )
    async with AsyncMemory(settings=ruled) as memory:
        await memory.add("My sister Mira is a vet in Leeds.", user_id="ruled", wait=True)
    (question,) = [prompt_of(r.json) for r in llm.chat_requests if is_question(r.json)]
    assert "Never store addresses." in question


SWEDISH = "Okej, nyhet: jag har börjat äta fisk igen. Läkaren tyckte att jag behövde mer B12."
FISH = "The user has started eating fish again."


@pytest.mark.parametrize("english", ["Okay, news: I have started eating fish again.", None])
async def test_an_answer_in_english_about_a_turn_read_in_english_may_stand(
    gap_settings: MemhubSettings, llm: ScriptedOpenAIServer, english: str | None
) -> None:
    """heldout15's x04 (read after its runs): the first call wrote nothing of the change to
    fish, the question's answer "The user has started eating fish again." stood on the turn's
    English reading and was then refused as of no unwritten statement, which were read in
    Swedish only. The answer may hold a word of the reading's uncovered statements; with no
    English reading it is refused as before (ungrounded). (The scripted server plays the
    model: a real one does not answer deterministically.)"""

    def answer(request: dict[str, Any]) -> str:
        if request["messages"][0]["content"].startswith(TURN_TRANSLATION_SYSTEM[:60]):
            return json.dumps({"english": english} if english else {})
        return json.dumps({"facts": [FISH]}) if is_question(request) else ops({"op": "NONE"})

    llm.default = answer
    async with AsyncMemory(settings=gap_settings) as memory:
        await memory.add(SWEDISH, user_id="sv", wait=True)
        assert await facts(memory, "sv") == ([FISH] if english else [])
    assert len([r for r in llm.chat_requests if is_question(r.json)]) == 1
