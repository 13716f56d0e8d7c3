"""The replacement check: a new fact that replaces the closest stored one supersedes it.

Small models ADD "lives in Berlin" beside "lives in Paris"; memhub then asks, for each ADD,
whether it replaces the closest stored fact shown in the prompt. The LLM is the scripted
OpenAI-compatible server (memhub.testing.ScriptedOpenAIServer): the real models that run here
do not answer deterministically. It plays a model that ADDs instead of superseding, and
answers the replacement question as each test needs. Real PostgreSQL, real embedder.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.engine import replacing
from memhub.engine.prompts import TURN_TRANSLATION_SYSTEM
from memhub.testing import ScriptedOpenAIServer
from tests.engine.conftest import scripted, store_facts


def prompt_of(request: dict[str, Any]) -> str:
    return "\n".join(str(m["content"]) for m in request["messages"])


def model(adds: dict[str, str], replaces: bool | str) -> Any:
    """ADDs ``adds[turn]`` for a prompt showing that turn; answers the replacement question
    with ``replaces`` (a string: an unusable answer)."""

    def answer(request: dict[str, Any]) -> str:
        prompt = prompt_of(request)
        if "<stored_fact>" in prompt:
            return replaces if isinstance(replaces, str) else json.dumps({"replaces": replaces})
        for turn, fact in adds.items():
            if json.dumps(turn) in prompt:
                return json.dumps({"operations": [{"op": "ADD", "text": fact, "turns": [1]}]})
        return json.dumps({"operations": [{"op": "NONE"}]})

    return answer


async def current(memory: AsyncMemory, user: str) -> list[str]:
    found = await memory.get_all(user_id=user, filters={"kind": "fact"})
    return sorted(r["memory"] for r in found["results"])


async def told(
    memory: AsyncMemory, user: str, said: str, *facts: str, timestamp: str | None = None
) -> list[str]:
    """Stores ``facts`` for ``user``, adds ``said`` as their turn and waits for its
    consolidation: the stored facts' ids."""
    ids = await store_facts(memory, user, *facts)
    await memory.add(said, user_id=user, timestamp=timestamp)
    await memory.wait_idle()
    return ids


def replacement_questions(llm: ScriptedOpenAIServer) -> list[str]:
    return [prompt_of(r.json) for r in llm.chat_requests if "<stored_fact>" in prompt_of(r.json)]


MOVE = {"I moved to Berlin last week.": "Eli lives in Berlin."}
# The turns' own day, so the date a fact gets back from "last week" is known
# (engine/dates.keep_the_date): said on Monday 2023-05-15.
SAID = "2023-05-15T10:00:00Z"
BERLIN = "Eli lives in Berlin since the week of 2023-05-08."
SHOPIFY = "Eli is a web developer at Shopify from 2023-05-16."


async def test_an_add_that_replaces_the_closest_fact_supersedes_it(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    llm.default = model(MOVE, replaces=True)
    (paris,) = await told(
        memory, "eli", "I moved to Berlin last week.", "Eli lives in Paris.", timestamp=SAID
    )
    assert await current(memory, "eli") == [BERLIN]
    (question,) = replacement_questions(llm)
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT sum(calls) FROM memory_llm_usage WHERE user_id = 'eli'")
        assert await cur.fetchone() == (2,)  # the extraction and the question, both counted
    assert '"Eli lives in Paris."' in question and f'"{BERLIN}"' in question
    events = [e["event"] for e in await memory.history(paris, user_id="eli")]
    assert events == ["ADD", "SUPERSEDE"]
    await memory.restore(paris, user_id="eli")  # a wrong yes is undone like any supersession
    assert await current(memory, "eli") == ["Eli lives in Paris."]


async def test_a_no_or_an_unusable_answer_leaves_the_add(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    # A turn the guard lets change the violin fact, so only the model's answer decides.
    said = "I play the viola as well."
    for user, replaces in (("no", False), ("garbled", "I think so, maybe")):
        llm.default = model({said: "Eli plays the viola."}, replaces=replaces)
        asked = len(replacement_questions(llm))
        await told(memory, user, said, "Eli plays the violin.")
        assert len(replacement_questions(llm)) > asked  # the question was put, and answered
        assert await current(memory, user) == ["Eli plays the viola.", "Eli plays the violin."]
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT count(*) FROM memory_jobs")
        assert await cur.fetchone() == (0,)  # every call completed: nothing parked
    episodes = await memory.get_all(user_id="garbled", filters={"kind": "episode"})
    assert [e["memory"] for e in episodes["results"]] == [said]


async def test_a_yes_the_cited_turn_does_not_support_is_refused(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    """A manipulated yes: the user's turn is about a dog, not about where Eli lives. The guard
    reads only the turn and the two facts, so the question is not even put: a yes would be
    refused, and the call is saved."""
    dog = {"We adopted a puppy called Rex.": "Eli has a dog named Rex."}
    llm.default = model(dog, replaces=True)
    await told(memory, "eli", "We adopted a puppy called Rex.", "Eli lives in Paris.")
    assert replacement_questions(llm) == []
    assert await current(memory, "eli") == ["Eli has a dog named Rex.", "Eli lives in Paris."]


async def test_the_question_is_about_the_closest_fact_a_yes_could_replace(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    """The closest stored fact to "Eli lives in Berlin" is the sister's, which the turn does
    not change (the guard would refuse a yes): the question is put about the closest fact a
    yes could replace, where Eli lived."""
    llm.default = model({"I moved to Berlin.": "Eli lives in Berlin."}, replaces=True)
    await told(
        memory, "eli", "I moved to Berlin.", "Eli's sister lives in Berlin.", "Eli lives in Paris."
    )
    (question,) = replacement_questions(llm)
    assert '"Eli lives in Paris."' in question
    assert await current(memory, "eli") == ["Eli lives in Berlin.", "Eli's sister lives in Berlin."]


async def test_the_check_can_be_turned_off(
    settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    llm.default = model(MOVE, replaces=True)
    off = scripted(settings, llm, llm_check_replacements=False)
    async with AsyncMemory(settings=off) as memory:
        await told(
            memory, "eli", "I moved to Berlin last week.", "Eli lives in Paris.", timestamp=SAID
        )
        assert await current(memory, "eli") == [BERLIN, "Eli lives in Paris."]
    assert replacement_questions(llm) == []


async def test_a_new_job_said_plainly_replaces_the_old_one_visibly_and_undoably(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    """The turn does not name the old job: the person says a change ("got hired") and the new
    fact states the old one's relation ("is a ..."). The supersession is listed among the
    model's changes and one undo brings the old fact back under its id."""
    said = "Good news: I got hired as a web developer at Shopify, starting tomorrow."
    llm.default = model({said: "Eli is a web developer at Shopify."}, replaces=True)
    (barista,) = await told(memory, "eli", said, "Eli is a barista at Blue Bottle.", timestamp=SAID)
    assert await current(memory, "eli") == [SHOPIFY]
    (change,) = (await memory.model_changes(user_id="eli"))["results"]
    assert (change["memory_id"], change["event"]) == (barista, "SUPERSEDE")
    assert change["after"] == SHOPIFY
    await memory.undo_change(change["id"], user_id="eli")
    assert "Eli is a barista at Blue Bottle." in await current(memory, "eli")


async def test_a_fact_far_in_meaning_from_the_add_is_not_put_to_the_question(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn shares "commute" with the stored fact, so the guard would let a yes close it,
    but the ADD is about someone else's baby: below ``REPLACES_AT_LEAST`` by the embedder, no
    question is put and a yes-saying model closes nothing. With no floor, it would be asked."""
    said = "doing the commute by e-bike now, my sister had a baby girl"
    commute = "The user commutes 40 minutes each way to the warehouse."
    llm.default = model({said: "The user's sister had a baby girl."}, replaces=True)
    await told(memory, "eli", said, commute)
    assert replacement_questions(llm) == []
    assert await current(memory, "eli") == [commute, "The user's sister had a baby girl."]

    monkeypatch.setattr(replacing, "REPLACES_AT_LEAST", -1.0)
    monkeypatch.setattr(replacing, "one_matter", lambda old, new, names: True)  # the floor alone
    await told(memory, "ada", said, commute)
    (question,) = replacement_questions(llm)
    assert json.dumps(commute) in question


async def test_a_fact_of_another_kind_is_not_put_to_the_question(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """heldout8's s01 (read after its blind run): "works days at the council" and a speeding
    fine share no word and no relation; a yes-saying model closed the fine. It is not asked;
    the night job, of the same kind, is."""
    said = "started days at the council, no more nights at the depot"
    fine = "The user got done for doing 42 in a 30, court in April."
    nights = "The user works nights at the parcel depot."
    llm.default = model({said: "The user works days at the council."}, replaces=True)
    with caplog.at_level(logging.INFO, logger="memhub.consolidation"):
        await told(memory, "s01", said, fine)
    assert replacement_questions(llm) == []
    # the log says why no question was put (engine/replacing.passed_over)
    (line,) = [
        r.getMessage() for r in caplog.records if "no replacement question" in r.getMessage()
    ]
    assert f"{fine!r}: another kind" in line
    assert await current(memory, "s01") == [fine, "The user works days at the council."]
    await told(memory, "s01b", said, fine, nights)
    (question,) = replacement_questions(llm)
    assert json.dumps(nights) in question and json.dumps(fine) not in question


async def test_a_place_in_common_does_not_put_a_fact_to_the_question(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """heldout14's Utrecht (read after its runs): the flat hunt shares only "Utrecht" with the
    job there, and the turn is the person's about it, so the guard would let a yes close the
    job; a 1.5B said yes. Neither the same relation nor two words in common: no question."""
    said = "I'm looking for an apartment in Utrecht, the train from Amersfoort is killing me"
    job = "The user is a fysiotherapeut in Utrecht."
    flat = "The user is looking for an apartment in Utrecht."
    llm.default = model({said: flat}, replaces=True)
    with caplog.at_level(logging.INFO, logger="memhub.consolidation"):
        await told(memory, "w05", said, job)
    assert replacement_questions(llm) == []
    (line,) = [
        r.getMessage() for r in caplog.records if "no replacement question" in r.getMessage()
    ]
    assert f"{job!r}: another kind" in line
    assert await current(memory, "w05") == [job, flat]


async def test_a_fact_about_another_named_person_is_not_put_to_the_question(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """heldout5's e09: the brother's news shares "mum" with the mother's fact, so the guard
    would let a yes close it, and a 1.5B said yes. The new fact is about Halvard, the stored
    one about Ingeborg: no question. With the subjects not compared, it would be asked."""
    said = "my brother Halvard is staying with mum till then"
    mum = "The user's mum Ingeborg broke her wrist and lives on her own in Tromso."
    halvard = "The user's brother Halvard is staying with the user's mum."
    llm.default = model({said: halvard}, replaces=True)
    await told(memory, "eli", said, mum)
    assert replacement_questions(llm) == []
    assert await current(memory, "eli") == [halvard, mum]

    monkeypatch.setattr(replacing, "named_subject", lambda fact: "")
    # one word in common ("mum") would pass it over too: the subjects' test alone is shown
    monkeypatch.setattr(replacing, "one_matter", lambda old, new, names: True)
    await told(memory, "ada", said, mum)
    (question,) = replacement_questions(llm)
    assert json.dumps(mum) in question


async def test_the_questions_log_line_names_both_facts_and_their_cosine(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/consolidation.md: a person reading a run sees what each yes would close."""
    llm.default = model(MOVE, replaces=False)
    await store_facts(memory, "eli", "Eli lives in Paris.")
    with caplog.at_level(logging.INFO, logger="memhub.consolidation"):
        await memory.add("I moved to Berlin last week.", user_id="eli", timestamp=SAID)
        await memory.wait_idle()
    (line,) = [r.getMessage() for r in caplog.records if "replacement check" in r.getMessage()]
    assert BERLIN in line and "for 'Eli lives in Paris.', cosine 0." in line


async def test_a_plan_said_to_be_off_is_put_to_the_question_beside_news_of_another_kind(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    """heldout9's q01 (read after its runs): "Tasmania's off ... the Barossa instead". The
    two facts share no word or relation, but the turn says the old one ended, so the
    question is put and a yes supersedes it, listed for review and undoable."""
    said = "Tasmania's off. Lorraine's wrist isn't right yet. We'll do a few days in the Barossa."
    tour = "The user is booked on a walking tour of Tasmania in May."
    barossa = "The user will spend a few days in the Barossa."
    llm.default = model({said: barossa}, replaces=True)
    (old,) = await told(memory, "q01", said, tour)
    (question,) = replacement_questions(llm)
    assert json.dumps(tour) in question
    assert await current(memory, "q01") == [barossa]
    (change,) = (await memory.model_changes(user_id="q01"))["results"]
    assert (change["memory_id"], change["event"]) == (old, "SUPERSEDE")


async def test_a_change_said_in_a_language_the_rules_do_not_read_stands_on_the_models_yes(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    """heldout11's s03 and s06 (read after their blind runs): "we zijn verhuisd! Sinds 1 juni
    wonen we in Zwolle" holds no word the change rules read, so they refused every change said
    in Dutch or Polish. There the model's yes to the one pair decides (the scripted server
    plays it: the real models do not answer deterministically), and the closed fact is in the
    review list, reopened in one step. A turn the rules read still needs their support."""
    dutch = (
        "Update: we zijn verhuisd! Sinds 1 juni wonen we in Zwolle. Mijn vriendin Lotte heeft"
        " daar een baan gekregen bij het waterschap"
    )
    llm.default = model({dutch: "Eli lives in Zwolle."}, replaces=True)
    (utrecht,) = await told(memory, "eli", dutch, "Eli lives in Utrecht.")
    assert len(replacement_questions(llm)) == 1
    assert await current(memory, "eli") == ["Eli lives in Zwolle."]
    (change,) = (await memory.model_changes(user_id="eli"))["results"]
    assert (change["event"], change["memory_id"]) == ("SUPERSEDE", utrecht)
    await memory.undo_change(change["id"], user_id="eli")
    assert "Eli lives in Utrecht." in await current(memory, "eli")
    # the same pair from a turn in English that says no move: the rules read it and refuse
    # the yes, so the question is not put
    asked = len(replacement_questions(llm))
    dreaming = "We visited Zwolle for the weekend, lovely town."
    llm.default = model({dreaming: "Ada lives in Zwolle."}, replaces=True)
    await told(memory, "ada", dreaming, "Ada lives in Utrecht.")
    assert len(replacement_questions(llm)) == asked
    assert await current(memory, "ada") == ["Ada lives in Utrecht.", "Ada lives in Zwolle."]


POLISH = "Dobra wiadomość: rzuciłem palenie dwa miesiące temu i nie wracam do tego."


@pytest.mark.parametrize(
    "english", ["Good news: I quit smoking two months ago and I'm not going back to it.", None]
)
async def test_a_change_in_a_language_the_rules_do_not_read_is_judged_on_its_english(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, english: str | None
) -> None:
    """A user turn in a language the change rules do not read (consent.read_here) is put into
    English once (forgetting.read_in_english); the rules read that English as they read a
    turn in English. Before, the model's own SUPERSEDE from "rzuciłem palenie" was refused,
    whatever it said, for holding no word the rules read. With no usable English it still
    is. (The scripted server plays the model: a real one does not answer deterministically.)"""

    def answer(request: dict[str, Any]) -> str:
        if request["messages"][0]["content"].startswith(TURN_TRANSLATION_SYSTEM[:60]):
            return json.dumps({"english": english} if english else {})
        if "rzuci" in prompt_of(request):
            change = {"op": "SUPERSEDE", "id": "1", "text": "Eli quit smoking.", "turns": [1]}
            return json.dumps({"operations": [change]})
        return json.dumps({"operations": [{"op": "NONE"}]})

    llm.default = answer
    (smokes,) = await told(memory, "eli", POLISH, "Eli smokes.")
    changes = (await memory.model_changes(user_id="eli"))["results"]
    if english:
        assert await current(memory, "eli") == ["Eli quit smoking."]
        assert [(c["event"], c["memory_id"]) for c in changes] == [("SUPERSEDE", smokes)]
    else:
        assert await current(memory, "eli") == ["Eli smokes."]
        assert changes == []


DUTCH_VISIT = "We waren het hele weekend in Zwolle, echt een leuke stad met mooie grachten."


@pytest.mark.parametrize("english", ["We spent the whole weekend in Zwolle, a lovely town.", None])
async def test_the_replacement_question_in_a_language_the_rules_do_not_read_needs_its_english(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, english: str | None
) -> None:
    """The replacement question's path: a Dutch turn about a weekend visit, an ADD "Eli lives
    in Zwolle." and a yes. With the turn's English the rules read it as they read "We
    visited Zwolle for the weekend" and put no question; without a usable English the yes
    alone decides, as before (the scripted server plays the model)."""
    adding = model({DUTCH_VISIT: "Eli lives in Zwolle."}, replaces=True)

    def answer(request: dict[str, Any]) -> str:
        if request["messages"][0]["content"].startswith(TURN_TRANSLATION_SYSTEM[:60]):
            return json.dumps({"english": english} if english else {})
        return str(adding(request))

    llm.default = answer
    await told(memory, "eli", DUTCH_VISIT, "Eli lives in Utrecht.")
    if english:
        assert replacement_questions(llm) == []
        assert await current(memory, "eli") == ["Eli lives in Utrecht.", "Eli lives in Zwolle."]
    else:
        assert len(replacement_questions(llm)) == 1
        assert await current(memory, "eli") == ["Eli lives in Zwolle."]


async def test_a_fact_the_job_changed_is_not_written_again_nor_asked_about_itself(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """heldout13's v06 (read after its blind runs): the model wrote the old fact again beside
    the new one; it was put to the replacement question against itself (cosine 1.0, six
    calls in that run), and once the new fact had closed it, the copy made it current again.
    A fact and itself are never a question, and an ADD that writes again a fact the job's
    SUPERSEDE closes is refused and counted."""

    def answer(request: dict[str, Any]) -> str:
        if "<stored_fact>" in prompt_of(request):
            return json.dumps({"replaces": True})
        adds = ["Eli lives in Paris.", "Eli lives in Berlin."]
        return json.dumps({"operations": [{"op": "ADD", "text": t, "turns": [1]} for t in adds]})

    llm.default = answer
    await told(memory, "eli", "I moved from Paris to Berlin.", "Eli lives in Paris.")
    assert await current(memory, "eli") == ["Eli lives in Berlin."]
    (question,) = replacement_questions(llm)
    assert '"Eli lives in Berlin."' in question
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT operations FROM memory_llm_usage WHERE user_id = 'eli' ORDER BY id DESC LIMIT 1"
        )
        (operations,) = await cur.fetchone() or (None,)
    assert operations["REFUSED_ALREADY_CHANGED"] == 1


async def test_a_fact_the_model_itself_changed_is_not_written_again_with_the_check_off(
    settings: MemhubSettings, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """The refusal above does not depend on the replacement question: here the model itself
    SUPERSEDEs the stored fact and, in the same answer, ADDs it again word for word; with
    the check turned off (no question is put) the copy is still refused and counted, and the
    stored fact stays closed."""

    def answer(request: dict[str, Any]) -> str:
        prompt = prompt_of(request)
        shown = re.search(r"\[(\d+)\] \(since [^)]*\) \"Eli lives in Paris.\"", prompt)
        if shown is None:
            return json.dumps({"operations": [{"op": "NONE"}]})
        operations = [
            {"op": "SUPERSEDE", "id": shown.group(1), "text": "Eli lives in Berlin.", "turns": [1]},
            {"op": "ADD", "text": "Eli lives in Paris.", "turns": [1]},
        ]
        return json.dumps({"operations": operations})

    llm.default = answer
    off = scripted(settings, llm, llm_check_replacements=False)
    async with AsyncMemory(settings=off) as memory:
        await told(memory, "eli", "I moved from Paris to Berlin.", "Eli lives in Paris.")
        assert await current(memory, "eli") == ["Eli lives in Berlin."]
    assert replacement_questions(llm) == []
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT operations FROM memory_llm_usage WHERE user_id = 'eli' ORDER BY id DESC LIMIT 1"
        )
        (operations,) = await cur.fetchone() or (None,)
    assert operations["REFUSED_ALREADY_CHANGED"] == 1


VEGAN_SAID = "hey again, I've gone fully vegan so no more fish for me"
PESCATARIAN = "The user is pescatarian."
VEGAN = "The user went fully vegan."


def answering(adds: dict[str, str], question: str, answer: str | None) -> Any:
    """ADDs as :func:`model`, says yes to the replacement question, and answers the two
    questions about a stored fact (``replacing.answered_otherwise``) with ``question`` and
    ``answer`` (None: an answer that is not JSON)."""
    extract = model(adds, replaces=True)

    def reply(request: dict[str, Any]) -> str:
        prompt = prompt_of(request)
        if "<question>" in prompt:
            return "not json" if answer is None else json.dumps({"answer": answer})
        if "<fact>" in prompt:
            return json.dumps({"question": question})
        return str(extract(request))

    return reply


def fact_questions(llm: ScriptedOpenAIServer) -> list[str]:
    """The stored facts whose question was asked, as the prompts show them."""
    return [p for r in llm.chat_requests if "<fact>" in (p := prompt_of(r.json))]


def answer_questions(llm: ScriptedOpenAIServer) -> list[str]:
    """The prompts asking a stored fact's question of a new fact."""
    return [p for r in llm.chat_requests if "<question>" in (p := prompt_of(r.json))]


async def test_a_change_the_rules_read_as_of_another_kind_is_answered_by_the_new_fact(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    """heldout19's z03 (read after its runs): "gone fully vegan ... no more fish" beside "is
    pescatarian" share no word and no relation the rules know, so no replacement question is
    put; the person says a change, so the fact's question ("What diet does the user follow?")
    is answered from the new fact, and "vegan" gives another value: the new fact supersedes
    the old one, listed among the model's changes and undone in one step."""
    llm.default = answering({VEGAN_SAID: VEGAN}, "What diet does the user follow?", "vegan")
    with caplog.at_level(logging.INFO, logger="memhub.consolidation"):
        (old,) = await told(memory, "z03", VEGAN_SAID, PESCATARIAN)
    assert replacement_questions(llm) == []  # not the yes-or-no question
    (asked,) = fact_questions(llm)
    assert json.dumps(PESCATARIAN) in asked
    (answered,) = answer_questions(llm)  # asked of the new fact, not of the turn
    assert f"<said>{json.dumps(VEGAN)}</said>" in answered and VEGAN_SAID not in answered
    assert await current(memory, "z03") == [VEGAN]
    (change,) = (await memory.model_changes(user_id="z03"))["results"]
    assert (change["memory_id"], change["event"], change["after"]) == (old, "SUPERSEDE", VEGAN)
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("question of")]
    assert logged == [
        f"question of {PESCATARIAN!r}: 'What diet does the user follow?' answered 'vegan'"
        f" by {VEGAN!r} (another value)"
    ]
    await memory.undo_change(change["id"], user_id="z03")  # the old fact back, as it was
    assert await current(memory, "z03") == [PESCATARIAN]


@pytest.mark.parametrize("answer", ["UNKNOWN", "pescatarian, still", "", None])
async def test_an_answer_that_gives_no_other_value_changes_nothing(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, answer: str | None
) -> None:
    """The new fact does not answer the stored fact's question, answers it with the fact's own
    value, answers nothing, or the answer is unusable: the ADD stands beside the stored fact."""
    llm.default = answering({VEGAN_SAID: VEGAN}, "What diet does the user follow?", answer)
    await told(memory, "z03", VEGAN_SAID, PESCATARIAN)
    assert len(fact_questions(llm)) == 1
    assert await current(memory, "z03") == [PESCATARIAN, VEGAN]
    assert (await memory.model_changes(user_id="z03"))["results"] == []


async def test_no_fact_question_is_put_where_the_person_says_no_change(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    """The same facts, told without a word of change ("I'm vegan-curious, I love fish"): a
    model that would answer "vegan" is not asked, and both facts stay."""
    said = "I'm reading about vegan food, I love fish though"
    llm.default = answering({said: VEGAN}, "What diet does the user follow?", "vegan")
    await told(memory, "z03", said, PESCATARIAN)
    assert fact_questions(llm) == []
    assert await current(memory, "z03") == [PESCATARIAN, VEGAN]


def test_another_value_is_words_of_its_own_none_of_the_facts() -> None:
    assert replacing.gives_another_value("vegan", PESCATARIAN)
    assert replacing.gives_another_value("Tucson", "The user lives in Dayton Ohio.")
    assert not replacing.gives_another_value("Perth", "The user's home base is Perth.")
    assert not replacing.gives_another_value("UNKNOWN", PESCATARIAN)
    assert not replacing.gives_another_value("Unknown.", PESCATARIAN)
    assert not replacing.gives_another_value("", PESCATARIAN)
    assert not replacing.gives_another_value("the", PESCATARIAN)  # no content word
