"""A message longer than the embedder's window: found by the part that answers, returned as it.

Real parts: the suite's MiniLM embedder (a 256-token window) on each back end.
"""

from __future__ import annotations

from memhub import AsyncMemory

FILLER = " ".join(
    f"Step {n}: stir the sauce gently, taste it, and add a pinch of salt if it needs more."
    for n in range(1, 31)
)
TAIL = "By the way, your sister's wedding is on the fourteenth of June at the lake house."
LONG = f"{FILLER} {TAIL}"


async def test_the_tail_of_a_long_message_is_found_and_returned_alone(
    memory: AsyncMemory,
) -> None:
    added = await memory.add(
        [
            {"role": "user", "content": "How do I make a tomato sauce?"},
            {"role": "assistant", "content": LONG},
            {"role": "user", "content": "I also want to bake bread this weekend."},
        ],
        user_id="ada",
        infer=False,
        wait=True,
    )
    long_id = next(r["id"] for r in added["results"] if r["memory"] == LONG)
    found = (await memory.search("When is my sister's wedding?", user_id="ada", limit=3))["results"]
    best = found[0]
    assert best["id"] == long_id
    passage = best["passage"]
    assert passage["length"] == len(LONG) and passage["end"] == len(LONG)
    assert 0 < passage["start"] < LONG.index(TAIL)
    assert best["memory"] == LONG[passage["start"] : passage["end"]]
    assert TAIL in best["memory"]
    assert all("passage" not in r for r in found if r["id"] != long_id)  # short ones are whole
    whole = await memory.get(long_id)
    assert whole is not None and whole["memory"] == LONG and "passage" not in whole


async def test_the_start_of_a_long_message_is_returned_when_it_answers(
    memory: AsyncMemory,
) -> None:
    await memory.add(
        [{"role": "assistant", "content": LONG}], user_id="ada", infer=False, wait=True
    )
    (best,) = (await memory.search("stir the sauce and add salt", user_id="ada", limit=1))[
        "results"
    ]
    assert best["passage"]["start"] == 0 and best["passage"]["end"] < len(LONG)
    assert TAIL not in best["memory"]


async def test_the_token_budget_counts_the_passage_returned(memory: AsyncMemory) -> None:
    """A budget smaller than the whole message but larger than its passage keeps it."""
    await memory.add(
        [{"role": "assistant", "content": LONG}], user_id="ada", infer=False, wait=True
    )
    whole_tokens = len(LONG) // 4
    found = await memory.search(
        "When is my sister's wedding?", user_id="ada", max_tokens=whole_tokens - 100
    )
    assert [r["passage"]["end"] for r in found["results"]] == [len(LONG)]


async def test_a_memory_updated_to_a_long_text_is_found_by_its_tail(memory: AsyncMemory) -> None:
    """update() embeds a text longer than the window as its passages, as add() does (before,
    it kept only the first window's vector: the tail was lost, and returned whole)."""
    added = await memory.add(
        [{"role": "assistant", "content": "A short answer."}],
        user_id="ada",
        infer=False,
        wait=True,
    )
    memory_id = added["results"][0]["id"]
    await memory.update(memory_id, LONG)
    (best,) = (await memory.search("When is my sister's wedding?", user_id="ada", limit=1))[
        "results"
    ]
    assert best["id"] == memory_id and TAIL in best["memory"]
    assert best["passage"]["end"] == len(LONG) and best["passage"]["start"] > 0
