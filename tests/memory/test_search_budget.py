"""``search(max_tokens=...)`` keeps the results within the budget; ``compact`` cuts weak results."""

from __future__ import annotations

from typing import Any

import pytest

from memhub import PRESETS, AsyncMemory, SearchConfig, UsageError
from memhub._portal import run_sync
from memhub.config import MemhubSettings
from memhub.engine.text import estimate_tokens

TEXTS = [
    "I keep bees on the roof.",
    "My bees made forty kilos of honey last summer, more than the year before, and I sold "
    "most of it at the Saturday market next to the old bakery in town.",
    "The bees swarmed in May.",
    "Honey from my bees is dark.",
]


def test_max_tokens_keeps_the_best_results_that_fit(shared_memory: AsyncMemory) -> None:
    async def run() -> tuple[list[str], list[str]]:
        for text in TEXTS:
            await shared_memory.add(text, user_id="u", infer=False)
        await shared_memory.wait_idle()
        everything = await shared_memory.search("bees honey", user_id="u")
        budget = await shared_memory.search("bees honey", user_id="u", max_tokens=20)
        return [r["memory"] for r in everything["results"]], [
            r["memory"] for r in budget["results"]
        ]

    everything, budgeted = run_sync(run(), timeout=120)
    assert sorted(everything) == sorted(TEXTS)
    assert sum(estimate_tokens(t) for t in budgeted) <= 20
    # Best first, as without a budget; the long memory is skipped, shorter ones after it fit.
    assert budgeted == [t for t in everything if t in budgeted]
    assert TEXTS[1] not in budgeted and len(budgeted) == 3


@pytest.mark.parametrize("bad", [0, -5, True])
def test_max_tokens_must_be_a_positive_integer(shared_memory: AsyncMemory, bad: int) -> None:
    with pytest.raises(UsageError, match="max_tokens"):
        run_sync(shared_memory.search("bees", user_id="u", max_tokens=bad))


def test_results_far_weaker_than_the_best_are_left_out(shared_memory: AsyncMemory) -> None:
    unrelated = "My car needs new tyres before the winter."

    async def run() -> tuple[list[dict[str, Any]], ...]:
        for text in [unrelated, *TEXTS]:  # first: no words said before it
            await shared_memory.add(text, user_id="u", infer=False)
        await shared_memory.wait_idle()
        shared_memory.search_config = SearchConfig(PRESETS["compact"])
        cut = (await shared_memory.search("bees honey", user_id="u"))["results"]
        # Mem0's explicit threshold replaces the relative cut-off.
        explicit = await shared_memory.search("bees honey", user_id="u", threshold=0.0)
        shared_memory.search_config = SearchConfig()  # the default: no cut-off
        everything = (await shared_memory.search("bees honey", user_id="u"))["results"]
        return cut, explicit["results"], everything

    cut, explicit, everything = run_sync(run(), timeout=120)
    assert explicit == everything
    assert [r["memory"] for r in everything][-1] == unrelated
    ratio = PRESETS["compact"].min_score_ratio
    assert everything[-1]["score"] < ratio * everything[0]["score"]
    assert unrelated not in [r["memory"] for r in cut]
    # The cut-off only shortens the list: what is left is the same, in the same order.
    assert cut == everything[: len(cut)]
    assert all(r["score"] >= ratio * cut[0]["score"] for r in cut)


def test_the_cut_off_per_call_and_the_settings_defaults(settings: MemhubSettings) -> None:
    """``min_score_ratio`` cuts one call; MEMHUB_SEARCH_MIN_SCORE_RATIO and
    MEMHUB_SEARCH_MAX_TOKENS set what a call that says nothing gets (docs/retrieval.md)."""
    unrelated = "My car needs new tyres before the winter."
    defaults = settings.model_copy(update={"search_min_score_ratio": 0.5, "search_max_tokens": 20})

    async def run() -> tuple[list[str], ...]:
        async with AsyncMemory(settings=settings) as plain:
            for text in [unrelated, *TEXTS]:  # first: no words said before it
                await plain.add(text, user_id="u", infer=False)
            await plain.wait_idle()
            everything = await plain.search("bees honey", user_id="u")
            cut = await plain.search("bees honey", user_id="u", min_score_ratio=0.5)
        async with AsyncMemory(settings=defaults) as configured:
            by_default = await configured.search("bees honey", user_id="u")
            overridden = await configured.search(
                "bees honey", user_id="u", min_score_ratio=0.0, max_tokens=10_000
            )
        return tuple(
            [r["memory"] for r in f["results"]] for f in (everything, cut, by_default, overridden)
        )

    everything, cut, by_default, overridden = run_sync(run(), timeout=180)
    assert everything[-1] == unrelated and unrelated not in cut
    assert cut == everything[: len(cut)]
    # the settings' defaults: the same cut-off, then the token budget (the long one skipped)
    assert by_default == [t for t in cut if t != TEXTS[1]]
    assert sum(estimate_tokens(t) for t in by_default) <= 20
    assert overridden == everything  # a call's own values replace the settings'


@pytest.mark.parametrize("bad", [-0.1, 1.5, True, "0.5"])
def test_min_score_ratio_must_be_a_share(shared_memory: AsyncMemory, bad: Any) -> None:
    with pytest.raises(UsageError, match="min_score_ratio"):
        run_sync(shared_memory.search("bees", user_id="u", min_score_ratio=bad))
