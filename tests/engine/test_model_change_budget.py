"""The budget of model changes per user over time (``MEMHUB_MODEL_CHANGES_PER_DAY``): however
many calls, turns or paths a model uses, it changes at most the budget of one user's memories
in 24 hours; what exceeds it is refused, logged and counted. The consolidation decisions come
from memhub.testing's scripted OpenAI-compatible server: a real model would not ask to forget
on cue, and the budget is about how many changes stand, not which ones a model proposes."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from memhub import AsyncMemory, MemhubSettings, ModelBudgetSpent
from memhub.testing import ScriptedOpenAIServer
from tests.engine.conftest import scripted, store_facts
from tests.engine.test_model_safety import _facts, _settle, fact_number, obeying, ops
from tests.test_telemetry import otel, points  # noqa: F401 (the fixture, shared)

FRUITS = [
    "olives", "figs", "dates", "plums", "pears", "limes", "kiwis", "mangos", "melons", "grapes",
    "apples", "cherries", "lemons", "papayas", "guavas", "apricots", "peaches", "lychees",
    "quinces", "berries",
]  # fmt: skip
BUDGET = 5


def _over_budget(found: dict[str, list[Any]]) -> int:
    return int(
        sum(
            p.value
            for p in found.get("memhub.guard.refused", [])
            if p.attributes.get("memhub.outcome") == "over_budget"
        )
    )


async def test_twenty_turns_cannot_close_more_than_the_budget(
    settings: MemhubSettings,
    llm: ScriptedOpenAIServer,
    otel: Any,  # noqa: F811 (the fixture imported above)
    caplog: pytest.LogCaptureFixture,
) -> None:
    """20 turns, each its own consolidation call asking (supported) to forget one fact: the
    per-call cap never bites, the budget does. Then an agent's and MCP's path (``retire`` by
    a model actor) is refused too, while the user's own retire still works."""
    _, reader = otel
    before = _over_budget(points(reader))
    facts = [f"Ada likes {fruit}." for fruit in FRUITS]
    turns = [f"Please forget that I like {fruit}." for fruit in FRUITS]

    def forget(fact: str) -> Any:
        return lambda req: ops({"op": "DELETE", "id": fact_number(req, fact), "turns": [1]})

    llm.default = obeying({turn: forget(fact) for turn, fact in zip(turns, facts, strict=True)})
    budgeted = scripted(
        settings, llm, job_max_attempts=2, model_changes_per_day=BUDGET, model_changes_per_run=99
    )
    async with AsyncMemory(settings=budgeted) as memory:
        ids = await store_facts(memory, "ada", *facts)
        with caplog.at_level(logging.WARNING, logger="memhub.consolidation"):
            for turn in turns:
                await memory.add(turn, user_id="ada")
                await _settle(memory, "ada")
        assert len(llm.chat_requests) >= len(turns)  # the model was asked every time, and obeyed
        assert len(await _facts(memory, "ada")) == len(facts) - BUDGET
        listed = (await memory.model_changes(user_id="ada"))["results"]
        # each granted forget also retired the request's own episode, listed, not counted
        changes = [c for c in listed if c["memory_id"] in ids]
        assert len(changes) == BUDGET
        spent = [r for r in caplog.records if "budget of model changes" in r.getMessage()]
        assert len(spent) == len(turns) - BUDGET
        assert _over_budget(points(reader)) - before == len(turns) - BUDGET

        kept = [
            r["id"]
            for r in (await memory.get_all(user_id="ada", filters={"kind": "fact"}))["results"]
        ]
        # undoing does not give the budget back: the count is of changes made
        await memory.undo_change(changes[0]["id"], user_id="ada")
        with pytest.raises(ModelBudgetSpent, match="MEMHUB_MODEL_CHANGES_PER_DAY"):
            await memory.retire(kept[0], user_id="ada", actor="agent:helper", reason="forget")
        assert _over_budget(points(reader)) - before == len(turns) - BUDGET + 1
        await memory.retire(kept[0], user_id="ada")  # the person is never budgeted

    # another object (another process, as far as the count goes) reads the same history
    async with AsyncMemory(settings=budgeted) as other:
        with pytest.raises(ModelBudgetSpent):
            await other.retire(kept[1], actor="mcp", reason="delete_memory")
        again = (await other.model_changes(user_id="ada"))["results"]
        assert len([c for c in again if c["memory_id"] in ids]) == BUDGET


async def test_one_conversation_cannot_spend_more_than_its_own_budget(
    settings: MemhubSettings, llm: ScriptedOpenAIServer
) -> None:
    """MEMHUB_MODEL_CHANGES_PER_RUN=2: five granted forgets in one conversation retire two;
    another conversation of the same user still has its own two (the day's budget is 99)."""
    facts = [f"Ada likes {fruit}." for fruit in FRUITS[:7]]
    turns = [f"Please forget that I like {fruit}." for fruit in FRUITS[:7]]

    def forget(fact: str) -> Any:
        return lambda req: ops({"op": "DELETE", "id": fact_number(req, fact), "turns": [1]})

    llm.default = obeying({turn: forget(fact) for turn, fact in zip(turns, facts, strict=True)})
    budgeted = scripted(
        settings, llm, job_max_attempts=2, model_changes_per_day=99, model_changes_per_run=2
    )
    async with AsyncMemory(settings=budgeted) as memory:
        await store_facts(memory, "ada", *facts)
        for turn in turns[:5]:  # a conversation is a run (its turns' session)
            await memory.add(turn, user_id="ada", run_id="morning")
            await _settle(memory, "ada")
        assert await _facts(memory, "ada") == sorted(facts[2:])
        for turn in turns[5:]:
            await memory.add(turn, user_id="ada", run_id="evening")
            await _settle(memory, "ada")
        assert await _facts(memory, "ada") == sorted(facts[2:5])
