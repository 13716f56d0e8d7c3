"""bench.previous_turn: stored and looked-up previous turns rank every query the same."""

from bench.profile_search import USER

from bench import previous_turn
from memhub import AsyncMemory, MemhubSettings
from memhub.store.postgres import search as pg_search


async def test_stored_and_looked_up_previous_turns_give_the_same_results(
    settings: MemhubSettings,
) -> None:
    stored = pg_search._PREVIOUS_TURN
    turns = [
        "Have you painted anything lately?",
        "Yes! A sunset over the lake.",
        "Which lake was it?",
        "The one near my parents' cabin.",
    ]
    async with AsyncMemory(settings=settings) as memory:
        for text in turns:
            await memory.add(text, user_id=USER, run_id="s1", infer=False, wait=True)
        result = await previous_turn.compare(memory, ["What did she paint?", "lake cabin"])
        # The neighbour signal is at work: the sunset follows the question it answers.
        found = await memory.search("What did she paint?", user_id=USER, limit=4)
    assert result["differed"] == 0
    assert set(result["search"]) == {"stored", "looked up"}
    assert pg_search._PREVIOUS_TURN is stored
    assert "Yes! A sunset over the lake." in [r["memory"] for r in found["results"]]
