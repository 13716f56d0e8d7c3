"""What was said stays: every user and assistant turn is an episode, facts come on top.

The LLM is the scripted OpenAI-compatible server (memhub.testing.ScriptedOpenAIServer): a
real model does not answer deterministically, and these tests need an exact ADD or NONE.
Real PostgreSQL, real embedder; everything through ``AsyncMemory.add`` and ``search``.
"""

from __future__ import annotations

import json
from typing import Any

from memhub import AsyncMemory
from memhub.testing import ScriptedOpenAIServer

ALLERGY = "I am severely allergic to shellfish."


def ops(*operations: dict[str, Any]) -> str:
    return json.dumps({"operations": list(operations)})


async def test_a_model_answering_none_leaves_the_episode_searchable(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    llm.enqueue(ops({"op": "NONE"}))
    await memory.add(ALLERGY, user_id="ada", wait=True)
    assert len(llm.chat_requests) == 1  # consolidation ran and answered NONE
    found = (await memory.search("Does Ada have any food allergies?", user_id="ada"))["results"]
    assert [(r["memory"], r["kind"], r["role"]) for r in found] == [(ALLERGY, "episode", "user")]
    assert "memory_type" not in found[0]  # the caller gave none; no "turn" label any more


async def test_facts_come_on_top_of_the_episodes_and_one_search_tells_each_turn_once(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    llm.enqueue(ops({"op": "ADD", "text": "Ada is allergic to shellfish.", "turns": [1]}))
    added = await memory.add(
        [
            {"role": "system", "content": "You are a helpful travel assistant."},
            {"role": "user", "content": ALLERGY},
            {"role": "assistant", "content": "Noted, I will avoid seafood restaurants."},
        ],
        user_id="ada",
        wait=True,
    )
    made = {(r["memory"], r["kind"], r["event"]) for r in added["results"]}
    assert made == {
        ("Ada is allergic to shellfish.", "fact", "ADD"),
        (ALLERGY, "episode", "ADD"),
        ("Noted, I will avoid seafood restaurants.", "episode", "ADD"),
    }  # the system message is a conversation turn only, not shown to the model either
    assert "travel assistant" not in json.dumps(llm.chat_requests[0].json["messages"])
    assert ALLERGY in json.dumps(llm.chat_requests[0].json["messages"])
    listed = (await memory.get_all(user_id="ada"))["results"]
    by_text = {r["memory"]: r for r in listed}
    assert len(listed) == 3
    fact, said = by_text["Ada is allergic to shellfish."], by_text[ALLERGY]
    assert fact["metadata"]["episode_ids"] == [said["id"]]
    assert len(fact["metadata"]["source_turn_ids"]) == 1
    assert "role" not in fact and said["role"] == "user"

    found = (await memory.search("What is Ada allergic to?", user_id="ada"))["results"]
    ids = [r["id"] for r in found]
    # the fact and its own episode never both: whichever ranks first tells the turn
    assert len({fact["id"], said["id"]} & set(ids)) == 1
    assert by_text["Noted, I will avoid seafood restaurants."]["id"] in ids

    facts = await memory.search("allergic", user_id="ada", filters={"kind": "fact"})
    assert [r["memory"] for r in facts["results"]] == ["Ada is allergic to shellfish."]
    episodes = await memory.search("allergic", user_id="ada", filters={"kind": "episode"})
    assert {r["kind"] for r in episodes["results"]} == {"episode"}
    assert ALLERGY in {r["memory"] for r in episodes["results"]}


async def test_consolidation_is_shown_stored_facts_never_episodes(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    llm.enqueue(ops({"op": "ADD", "text": "Ada lives in Oslo.", "turns": [1]}))
    await memory.add("I live in Oslo.", user_id="ada", wait=True)
    llm.enqueue(ops({"op": "NONE"}))
    await memory.add("I moved to Oslo's old town last year.", user_id="ada", wait=True)
    second = json.dumps(llm.chat_requests[-1].json["messages"])
    assert "Ada lives in Oslo." in second  # the stored fact is shown ...
    assert "I live in Oslo." not in second  # ... the earlier episode is not


TRIP = [
    "My sister Jo and I flew to Lisbon in May.",
    "The hotel near the river was lovely.",
    "We ate grilled sardines every single night.",
    "Jo bought a blue ceramic tile for her kitchen.",
    "I came home with a bad sunburn.",
]


async def test_facts_change_how_a_found_turn_is_told_never_which_turns_are_found(
    memory: AsyncMemory, llm: ScriptedOpenAIServer
) -> None:
    # Facts that repeat the query's words outrank the episodes they were drawn from; under
    # a ranking of both kinds together they would take the top places twice over (two facts
    # of one turn) and push the other turns out.
    llm.enqueue(
        ops(
            {"op": "ADD", "text": "Ada travelled to Lisbon with her sister Jo.", "turns": [1]},
            {"op": "ADD", "text": "Ada's trip to Lisbon with Jo was in May.", "turns": [1]},
            {"op": "ADD", "text": "On the Lisbon trip Ada ate sardines nightly.", "turns": [3]},
            {"op": "ADD", "text": "Ada got sunburnt on the Lisbon trip.", "turns": [5]},
        )
    )
    added = await memory.add(TRIP, user_id="ada", wait=True)
    assert sorted(r["kind"] for r in added["results"]).count("fact") == 4

    def places(results: list[dict[str, Any]]) -> list[str]:
        """The episode each result tells: its own, or the one a fact stands for."""
        return [
            r["id"] if r["kind"] == "episode" else r["metadata"]["episode_ids"][0] for r in results
        ]

    told_by_facts = 0
    for query in ("Lisbon trip", "What did Ada eat in Lisbon?", "Who went to Lisbon with Jo?"):
        for limit in (2, 3, 5):
            mixed = (await memory.search(query, user_id="ada", limit=limit))["results"]
            alone = (
                await memory.search(query, user_id="ada", limit=limit, filters={"kind": "episode"})
            )["results"]
            # the transcript's places, in its order, with its scores
            assert places(mixed) == [r["id"] for r in alone]
            assert [r["score"] for r in mixed] == [r["score"] for r in alone]
            told_by_facts += sum(r["kind"] == "fact" for r in mixed)
    assert told_by_facts > 0  # the facts do tell turns


async def test_the_store_is_read_again_only_when_both_kinds_are_found(
    memory: AsyncMemory, llm: ScriptedOpenAIServer, monkeypatch: Any
) -> None:
    # The real store, its reads counted: a transcript without facts costs one read, as before.
    services = await memory._services()
    reads: list[object] = []
    real = services.store.vector_candidates

    async def counted(*args: Any, **kwargs: Any) -> Any:
        reads.append(args[3])  # the filters
        return await real(*args, **kwargs)

    monkeypatch.setattr(services.store, "vector_candidates", counted)
    llm.enqueue(ops({"op": "NONE"}))
    await memory.add(TRIP[1], user_id="ada", wait=True)
    reads.clear()  # consolidation reads the stored facts too
    await memory.search("Lisbon", user_id="ada")
    assert reads == [None]
    llm.enqueue(ops({"op": "ADD", "text": "Ada travelled to Lisbon with Jo.", "turns": [1]}))
    await memory.add(TRIP[0], user_id="ada", wait=True)
    assert len((await memory.get_all(user_id="ada", filters={"kind": "fact"}))["results"]) == 1
    reads.clear()
    await memory.search("Lisbon", user_id="ada")
    assert len(reads) == 2 and reads[0] is None  # then the episodes alone
    reads.clear()
    await memory.search("Lisbon", user_id="ada", filters={"kind": "fact"})
    assert len(reads) == 1
