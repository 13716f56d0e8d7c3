"""What a model proposes and consolidation refuses: ungrounded facts, copies, long windows.

The LLM is the scripted OpenAI-compatible server (memhub.testing): each test scripts the kind
of answer a small real model gives (the prompt's own example, the assistant's words, a fact
citing the wrong turn, an answer too long for its window) and checks what memhub stored.
"""

from __future__ import annotations

import json
import re
from typing import Any

import psycopg
import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.engine.prompts import CONSOLIDATION_SYSTEM, TURN_TRANSLATION_SYSTEM
from memhub.testing import ScriptedOpenAIServer


def ops(*operations: dict[str, Any]) -> str:
    return json.dumps({"operations": list(operations)})


async def memories(memory: AsyncMemory, user: str = "ada") -> list[tuple[str, str | None]]:
    rows = (await memory.get_all(user_id=user))["results"]
    return sorted((r["memory"], r["kind"]) for r in rows)


async def refusals(db_url: str, user: str = "ada") -> dict[str, int]:
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute(
            "SELECT operations FROM memory_llm_usage WHERE user_id = %s", (user,)
        )
        total: dict[str, int] = {}
        for (operations,) in await cur.fetchall():
            for key, count in operations.items():
                total[key] = total.get(key, 0) + count
    return total


async def test_the_prompts_own_example_is_refused_and_the_turn_kept(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    # What Qwen2.5-Coder-0.5B did: repeat the prompt's example instead of the user's fact.
    llm.enqueue(
        ops(
            {"op": "ADD", "text": "The user's sister Mira repairs bicycles.", "turns": [1]},
            {"op": "UPDATE", "id": "1", "text": "Ada likes green tea.", "turns": [1]},
        )
    )
    await memory.add("I started learning the violin.", user_id="ada", wait=True)
    assert await memories(memory) == [("I started learning the violin.", "episode")]
    assert await refusals(db_url) == {"REFUSED_INVALID": 1, "REFUSED_COPY_OF_INSTRUCTIONS": 1}


@pytest.mark.parametrize(
    ("copied", "kept", "user_turn", "assistant_turn"),
    [
        (
            "Ada pays $20 a month for the premium plan.",
            "Ada is a teacher.",
            "How much is premium? I'm a teacher, is there a discount?",
            "The premium plan costs $20 a month, billed yearly.",
        ),
        # What the 1.5B wrote on bench/llm_set/heldout3.json's m05: an app the assistant
        # named, as the user's own, one borrowed word (under the one-word allowance)
        (
            "The user's budgeting app is YNAB.",
            "The user wants a free budgeting app.",
            "I need a budgeting app, free ones only please",
            "YNAB and Monarch are popular; Goodbudget is free.",
        ),
    ],
    ids=["the assistant's sentence", "a name only the assistant said"],
)
async def test_the_assistants_words_are_not_the_users_facts(
    memory: AsyncMemory,
    llm: ScriptedOpenAIServer,
    db_url: str,
    copied: str,
    kept: str,
    user_turn: str,
    assistant_turn: str,
) -> None:
    llm.enqueue(
        ops(
            {"op": "ADD", "text": copied, "turns": [1, 2]},
            {"op": "ADD", "text": kept, "turns": [1]},
        )
    )
    await memory.add(
        [{"role": "user", "content": user_turn}, {"role": "assistant", "content": assistant_turn}],
        user_id="ada",
        wait=True,
    )
    stored = [text for text, kind in await memories(memory) if kind != "episode"]
    assert stored == [kept]
    assert await refusals(db_url) == {"ADD": 1, "REFUSED_COPY_OF_ASSISTANT": 1}


SWAHILI = "Habari! Mimi ni muuguzi, nafanya zamu za usiku wiki hii."
NURSE = "The user is a nurse working night shifts."


@pytest.mark.parametrize("english", ["Hi! I am a nurse, I'm doing night shifts this week.", None])
async def test_a_fact_said_in_a_language_the_rules_do_not_read_stands_on_its_english_reading(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str, english: str | None
) -> None:
    """What the 1.5B did on heldout14 (read after its blind run): right facts from Swahili,
    Polish or Turkish turns refused as ungrounded, since the English fact shares no word with
    the turn as said. A user turn in a language the rules do not read is already put into
    English once (forgetting.read_in_english); the prompt shows that reading beside what was
    said, and the fact may stand on it. With no usable English the turn is shown as said and
    the fact refused as before. (The scripted server plays the model: a real one does not
    answer deterministically.)"""

    def answer(request: dict[str, Any]) -> str:
        if request["messages"][0]["content"].startswith(TURN_TRANSLATION_SYSTEM[:60]):
            return json.dumps({"english": english} if english else {})
        return ops({"op": "ADD", "text": NURSE, "turns": [1]})

    llm.default = answer
    await memory.add(SWAHILI, user_id="ada", wait=True)
    stored = [text for text, kind in await memories(memory) if kind != "episode"]
    if english:
        assert stored == [NURSE]
        assert await refusals(db_url) == {"ADD": 1}
    else:
        assert stored == []
        assert await refusals(db_url) == {"REFUSED_UNGROUNDED": 1}
    # the consolidation prompt shows what was said, and its English beside it
    (asked,) = [
        r.json["messages"][-1]["content"]
        for r in llm.chat_requests
        if r.json["messages"][0]["content"].startswith(CONSOLIDATION_SYSTEM[:60])
    ]
    line = f'"user": {json.dumps(SWAHILI)}'
    assert line + (f" [in English: {json.dumps(english)}]" if english else "\n") in asked


FLAT_HUNT = (
    "Mimi natafuta nyumba ya kupanga huko Utrecht, treni kutoka Amersfoort inanichosha sana."
)


@pytest.mark.parametrize(
    "english",
    ["I'm looking for a flat to rent in Utrecht, the train from Amersfoort wears me out.", None],
)
async def test_the_prompts_made_up_person_is_read_as_the_user_in_the_turns_english(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str, english: str | None
) -> None:
    """What the 1.5B did on heldout14 (read after its runs): a user's own statement in a
    language the rules do not read written as the prompt's template person ("The user's
    friend Ravi ..."), and refused as a copy of the instructions: nothing in the turn as said
    says "I". Its English reading does, so the fact is read as the user's, as it is for a turn
    said in English; without one it stays refused. (The scripted server plays the model.)"""
    made_up = "The user's friend Ravi is looking for a flat to rent in Utrecht."

    def answer(request: dict[str, Any]) -> str:
        if request["messages"][0]["content"].startswith(TURN_TRANSLATION_SYSTEM[:60]):
            return json.dumps({"english": english} if english else {})
        return ops({"op": "ADD", "text": made_up, "turns": [1]})

    llm.default = answer
    await memory.add(FLAT_HUNT, user_id="ada", wait=True)
    stored = [text for text, kind in await memories(memory) if kind != "episode"]
    if english:
        assert stored == ["The user is looking for a flat to rent in Utrecht."]
    else:
        assert stored == []
        assert await refusals(db_url) == {"REFUSED_COPY_OF_INSTRUCTIONS": 1}


async def test_a_users_fact_tied_to_the_assistants_words_is_kept_without_them(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """What the 1.5B wrote on heldout3's m03: the user's commute with the assistant's
    comment on it in a second clause. The first clause alone is the user's fact; a fact whose
    first clause copies the assistant too stays refused."""
    llm.enqueue(
        ops(
            {
                "op": "ADD",
                "text": "The user commutes 40 minutes each way to the warehouse, which is a "
                "long drive when the windscreen ices over.",
                "turns": [2],
            },
            {
                "op": "ADD",
                "text": "The user sprays rubbing alcohol on the windscreen, then scrapes it.",
                "turns": [2],
            },
        )
    )
    await memory.add(
        [
            {"role": "user", "content": "whats the fastest way to de-ice a windscreen?"},
            {
                "role": "assistant",
                "content": "Spray rubbing alcohol and water on the windscreen, then scrape it; "
                "a long drive when the windscreen ices over is no fun.",
            },
            {"role": "user", "content": "I commute 40 min each way to the warehouse so yes"},
        ],
        user_id="ada",
        wait=True,
    )
    stored = [text for text, kind in await memories(memory) if kind != "episode"]
    assert stored == ["The user commutes 40 minutes each way to the warehouse."]
    assert await refusals(db_url) == {"ADD": 1, "REFUSED_COPY_OF_ASSISTANT": 1}


async def test_a_fact_citing_the_wrong_turn_cites_the_turn_that_says_it(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    llm.enqueue(ops({"op": "ADD", "text": "Ada is allergic to peanuts.", "turns": [2]}))
    await memory.add(
        [
            {"role": "user", "content": "I'm allergic to peanuts."},
            {"role": "assistant", "content": "Noted, thanks for telling me."},
        ],
        user_id="ada",
        wait=True,
    )
    (fact,) = (await memory.get_all(user_id="ada", filters={"kind": "fact"}))["results"]
    assert fact["memory"] == "Ada is allergic to peanuts."
    turns = fact["metadata"]["source_turn_ids"]
    assert len(turns) == 1  # the user's turn, not the assistant's it cited


async def test_a_fact_no_turn_says_is_refused(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    llm.enqueue(ops({"op": "ADD", "text": "Ada owns a red canoe.", "turns": [1]}))
    await memory.add("I moved from Paris to Berlin.", user_id="ada", wait=True)
    assert await memories(memory) == [("I moved from Paris to Berlin.", "episode")]
    assert await refusals(db_url) == {"REFUSED_UNGROUNDED": 1}


async def test_valid_json_in_another_shape_is_read_not_parked(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    # synonyms small models use: "memories", "action", lower case, "fact", turn as a string
    llm.enqueue(json.dumps({"memories": [{"action": "add", "fact": "Ada runs.", "turn": "1"}]}))
    await memory.add("I run every morning.", user_id="ada", wait=True)
    assert await memories(memory) == [("Ada runs.", "fact"), ("I run every morning.", "episode")]


async def test_an_update_naming_no_fact_is_an_add(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    # Qwen2.5-Coder-0.5B labels most new facts UPDATE, with no fact number (issue 25 bench)
    llm.enqueue(ops({"op": "UPDATE", "id": None, "text": "Ada runs every morning.", "turns": [1]}))
    await memory.add("I run every morning.", user_id="ada", wait=True)
    assert await memories(memory) == [
        ("Ada runs every morning.", "fact"),
        ("I run every morning.", "episode"),
    ]


async def test_valid_json_that_means_nothing_is_refused_not_parked(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    llm.default = json.dumps({"answer": "I cannot help with that."})
    await memory.add("I run every morning.", user_id="ada", wait=True)
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT count(*) FROM memory_jobs")
        (jobs,) = await cur.fetchone()  # type: ignore[misc]
    assert jobs == 0
    assert len(llm.chat_requests) == 2  # the answer and one repair, then refused
    assert await refusals(db_url) == {"REFUSED_UNPARSABLE": 1}
    assert await memories(memory) == [("I run every morning.", "episode")]


async def test_turns_that_do_not_fit_the_window_are_split_never_cut(
    llm_settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    small = llm_settings.model_copy(update={"llm_context_tokens": 2048})
    long_turn = " ".join(f"On day {n} I walked along river number {n}." for n in range(300))
    llm.default = ops()
    async with AsyncMemory(settings=small) as memory:
        await memory.add(
            ["I live in Lyon.", long_turn, "I have a cat named Miso."], user_id="ada", wait=True
        )
    prompts = [r.json for r in llm.chat_requests]
    assert len(prompts) > 2
    for request in prompts:
        sent = sum(len(m["content"]) for m in request["messages"])
        # a cautious three characters a token: prompt and the reply cap fit in 2048 tokens
        assert sent / 3 + request["max_tokens"] <= 2048
    lines = [
        json.loads(match)
        for r in prompts
        for match in re.findall(
            r'^\[\d+\] [^"]* "user": (".*")$', r["messages"][-1]["content"], re.M
        )
    ]
    assert lines[0] == "I live in Lyon." and lines[-1] == "I have a cat named Miso."
    assert " ".join(lines[1:-1]) == long_turn  # every piece, in order, nothing cut off


async def test_turns_shown_with_their_english_leave_room_for_it(
    llm_settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    """A turn shown with its English reading beside it takes about twice its room: the
    windows count it so, and a reading that comes out longer than its room is left out (the
    turn shown as said) rather than the prompt overflowing the model's context."""
    small = llm_settings.model_copy(update={"llm_context_tokens": 2048})
    swahili = [
        f"Siku {n} nilitembea kando ya mto mrefu pamoja na mbwa wangu mdogo, halafu tukanywa chai."
        for n in range(40)
    ]
    wordy = {swahili[7]: "I walked the river with my dog. " * 30}  # under the reply's cap

    def answer(request: dict[str, Any]) -> str:
        if request["messages"][0]["content"].startswith(TURN_TRANSLATION_SYSTEM[:60]):
            tagged = re.search(r"<said>(.*)</said>", request["messages"][-1]["content"])
            said = json.loads(tagged[1]) if tagged else ""
            return json.dumps({"english": wordy.get(said, f"In English: {said}")})
        return ops()

    llm.default = answer
    async with AsyncMemory(settings=small) as memory:
        await memory.add(swahili, user_id="ada", wait=True)
    asked = [
        r.json
        for r in llm.chat_requests
        if r.json["messages"][0]["content"].startswith(CONSOLIDATION_SYSTEM[:60])
    ]
    assert len(asked) > 1
    for request in asked:
        sent = sum(len(m["content"]) for m in request["messages"])
        assert sent / 3 + request["max_tokens"] <= 2048
    shown = "\n".join(r["messages"][-1]["content"] for r in asked)
    assert shown.count("[in English:") >= len(swahili) - 10  # all but the one window
    assert all(turn in shown for turn in swahili)
    # the reading too long for its room is left out: its turn is shown as said alone
    assert wordy[swahili[7]].strip() not in shown


async def test_a_fact_that_restates_the_turn_is_refused_and_counted(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """What Qwen2.5-Coder-1.5B did before issue 35: write the turn back as the fact, in the
    user's voice or behind the speaker's id. Only the third-person fact is stored."""
    llm.enqueue(
        ops(
            {"op": "ADD", "text": "ada: Aisle, please. I get up a lot.", "turns": [1]},
            {"op": "ADD", "text": "I get up a lot on long flights.", "turns": [1]},
            {"op": "ADD", "text": "Aisle please, gets up a lot on long flights", "turns": [1]},
            {"op": "ADD", "text": "The user prefers an aisle seat on long flights.", "turns": [1]},
        )
    )
    await memory.add("Aisle, please. I get up a lot on long flights.", user_id="ada", wait=True)
    stored = [text for text, kind in await memories(memory) if kind == "fact"]
    assert stored == ["The user prefers an aisle seat on long flights."]
    assert await refusals(db_url) == {"ADD": 1, "REFUSED_COPY_OF_TURN": 3}


async def test_a_relative_date_is_stored_as_the_date_the_turn_meant(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    """The prompt notes what "yesterday" meant beside the turn, shows the user as "user"
    (not the id), and a fact that kept "yesterday" is stored with the date instead."""
    llm.enqueue(ops({"op": "ADD", "text": "The user ran a half marathon yesterday.", "turns": [1]}))
    await memory.add(
        "I ran my first half marathon yesterday!",
        user_id="ada",
        timestamp="2023-05-15T10:00:00Z",
        wait=True,
    )
    prompt = llm.chat_requests[0].json["messages"][-1]["content"]
    assert (
        '[1] 2023-05-15 10:00 "user": "I ran my first half marathon yesterday!"'
        ' [dates: "yesterday" = 2023-05-14]'
    ) in prompt
    assert "ada" not in prompt
    stored = [text for text, kind in await memories(memory) if kind == "fact"]
    assert stored == ["The user ran a half marathon on 2023-05-14."]


async def test_a_fact_holding_a_secret_is_refused_and_counted(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """What the 1.5B stored in issue 35's held-out run, told not to: a card number as a fact.
    The turn stays an episode (the transcript, the user's to erase); no fact repeats it."""
    llm.enqueue(
        ops(
            {"op": "ADD", "text": "The user's card number is 4111 1111 1111 1111.", "turns": [1]},
            {"op": "ADD", "text": "The user's wifi password is tangerine42.", "turns": [1]},
            {"op": "ADD", "text": "The user is booking a flight to Lisbon.", "turns": [1]},
        )
    )
    said = (
        "Book the Lisbon flight on my card 4111 1111 1111 1111, and the wifi password is "
        "tangerine42 by the way."
    )
    await memory.add(said, user_id="ada", wait=True)
    stored = [text for text, kind in await memories(memory) if kind == "fact"]
    assert stored == ["The user is booking a flight to Lisbon."]
    assert await refusals(db_url) == {"ADD": 1, "REFUSED_SECRET": 2}


async def test_a_fact_standing_only_on_a_question_is_refused(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """What the 1.5B wrote from a question about the world (heldout2's k08): the question
    states nothing, so the "fact" is refused; the statement beside it stands."""
    llm.enqueue(
        ops(
            {"op": "ADD", "text": "The user's tofu is actually high in protein.", "turns": [2]},
            {"op": "ADD", "text": "The user is vegan.", "turns": [1]},
        )
    )
    await memory.add(
        [
            {"role": "user", "content": "I've gone fully vegan."},
            {"role": "user", "content": "is tofu actualy high in protein?"},
        ],
        user_id="ada",
        wait=True,
    )
    stored = [text for text, kind in await memories(memory) if kind == "fact"]
    assert stored == ["The user is vegan."]
    assert await refusals(db_url) == {"ADD": 1, "REFUSED_UNGROUNDED": 1}


async def test_what_a_question_asks_is_not_the_users_fact(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """What the 1.5B wrote on heldout3's m10: the question's topic as the user's fact. The
    clause about the person stands; the one asking about diabetes supports nothing."""
    llm.enqueue(
        ops(
            {"op": "ADD", "text": "The user has type 1 or type 2 diabetes.", "turns": [1]},
            {"op": "ADD", "text": "The user is a nursing student at Cardiff uni.", "turns": [1]},
        )
    )
    said = "hey, I'm a nursing student at Cardiff uni, can you explain type 1 and type 2 diabetes?"
    await memory.add([{"role": "user", "content": said}], user_id="ada", wait=True)
    stored = [text for text, kind in await memories(memory) if kind == "fact"]
    assert stored == ["The user is a nursing student at Cardiff uni."]
    # with the user's words gone, the prompt's own words are the most the fact holds
    refused = {k: v for k, v in (await refusals(db_url)).items() if k.startswith("REFUSED_")}
    assert sum(refused.values()) == 1, refused


async def test_someone_elses_relation_is_not_the_users(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """What the 1.5B wrote on heldout2's k07: "her husband" (the sister's) read as the user's.
    The fact giving the user a husband is refused; the sister's fact beside it stands."""
    llm.enqueue(
        ops(
            {"op": "ADD", "text": "The user's husband works in Valencia.", "turns": [1]},
            {"op": "ADD", "text": "The user's sister Beatriz lives in Valencia.", "turns": [1]},
        )
    )
    said = "My sister Beatriz and her husband have relocated to Valencia for his job."
    await memory.add([{"role": "user", "content": said}], user_id="ada", wait=True)
    stored = [text for text, kind in await memories(memory) if kind == "fact"]
    assert stored == ["The user's sister Beatriz lives in Valencia."]
    assert await refusals(db_url) == {"ADD": 1, "REFUSED_SOMEONE_ELSES": 1}


async def test_a_rewrite_sliding_back_into_the_turn_keeps_its_head(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """What the 1.5B wrote on heldout3's m04: a third-person start, then the turn's own
    words. The head is a fact in the system's words and is stored; the turn's tail is not."""
    llm.enqueue(
        ops(
            {
                "op": "ADD",
                "text": "The user's son Mateo is 7 and dinosaur-obsessed, we're doing the"
                " museum on Saturday.",
                "turns": [1],
            }
        )
    )
    await memory.add(
        "he's 7 and completely dinosaur-obsessed, we're doing the museum on saturday. My son"
        " Mateo, I mean.",
        user_id="ada",
        wait=True,
    )
    stored = [text for text, kind in await memories(memory) if kind == "fact"]
    assert stored == ["The user's son Mateo is 7 and dinosaur-obsessed."]
    assert await refusals(db_url) == {"ADD": 1}


async def test_the_templates_subject_on_the_users_own_statement_is_stored_as_the_users(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    # What Qwen2.5-Coder-1.5B did on bench/llm_set heldout3 and heldout4: the prompt's
    # "The user's friend Ravi" for the person's own statement; the one about "my sister" keeps
    # the template's subject, and so is refused as the prompt's copy.
    llm.enqueue(
        ops(
            {"op": "ADD", "text": "The user's friend Ravi keeps three ferrets.", "turns": [1]},
            {"op": "ADD", "text": "The user's friend Ravi is a welder.", "turns": [1]},
        ),
        json.dumps({"facts": []}),
    )
    turn = "I keep three ferrets. My sister is a welder."
    await memory.add(turn, user_id="ada", wait=True)
    assert await memories(memory) == [
        (turn, "episode"),
        ("The user keeps three ferrets.", "fact"),
    ]
    assert (await refusals(db_url))["REFUSED_COPY_OF_INSTRUCTIONS"] == 1


async def test_a_fact_running_two_facts_together_is_stored_as_two(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    """What the 1.5B wrote on heldout10's r03 (read after its runs): the user's name, age and
    job and their diet in one fact, which the diet's change later made stale whole. Each
    sentence is a fact of its own, its "she" the user."""
    llm.enqueue(
        ops(
            {
                "op": "ADD",
                "text": "The user is Stefanie and teaches physics in Leipzig. She is a vegetarian.",
                "turns": [1],
            }
        )
    )
    await memory.add(
        "Ich bin Stefanie, ich unterrichte Physics in Leipzig und bin vegetarian.",
        user_id="ada",
        wait=True,
    )
    stored = [text for text, kind in await memories(memory) if kind == "fact"]
    assert stored == [
        "The user is Stefanie and teaches physics in Leipzig.",
        "The user is a vegetarian.",
    ]


async def test_a_request_takes_back_what_an_earlier_window_of_its_job_said(
    llm_settings: MemhubSettings, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """heldout11's s01 (read after its runs): the knee said in one window and asked to be
    forgotten in the next of the same job; the first window's ADD was never shown to the
    request, so the fact stayed. A request now refuses the new facts of earlier windows too."""
    knee = "my left knee's been clicking and the physio reckons it's patellofemoral pain"
    long_turn = " ".join(f"On day {n} I walked along river number {n}." for n in range(300))
    request = "can you not remember the knee thing? I don't want it popping up"

    def answer(body: dict[str, Any]) -> str:
        if json.dumps(knee) in body["messages"][-1]["content"]:
            fact = (
                "The user's left knee is clicking and the physio reckons it's patellofemoral pain."
            )
            return ops({"op": "ADD", "text": fact, "turns": [1]})
        return ops()

    llm.default = answer
    small = llm_settings.model_copy(update={"llm_context_tokens": 2048})
    async with AsyncMemory(settings=small) as memory:
        await memory.add([knee, long_turn, request], user_id="ada", wait=True)
        assert [text for text, kind in await memories(memory) if kind == "fact"] == []
    assert (await refusals(db_url)).get("REFUSED_ASKED_TO_FORGET") == 1


async def test_a_fact_written_twice_is_taken_back_by_one_request(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, db_url: str
) -> None:
    """heldout11's s01 (read after its runs): the model wrote the knee fact twice in the
    window that asks to forget it; the two tied with each other, so the request named
    neither clearly and both were stored."""
    fact = "The user's left knee is clicking and the physio reckons it's patellofemoral pain."
    twice = {"op": "ADD", "text": fact, "turns": [1]}
    llm.enqueue(ops(twice, twice))
    await memory.add(
        [
            "my left knee's been clicking and the physio reckons it's patellofemoral pain",
            "actually, can you not remember the knee thing?",
        ],
        user_id="ada",
        wait=True,
    )
    assert [text for text, kind in await memories(memory) if kind == "fact"] == []
    assert (await refusals(db_url)).get("REFUSED_ASKED_TO_FORGET") == 2
