"""The search configuration: one object, a call's knobs laid over it, bad values refused."""

from __future__ import annotations

import pytest

from memhub import PRESETS, AsyncMemory, FusionConfig, MemhubSettings, SearchConfig, UsageError


def test_a_call_overrides_only_the_knobs_it_gives() -> None:
    base = SearchConfig(PRESETS["compact"], rerank=False, rerank_candidates=7, max_tokens=300)
    assert base.for_call() == base
    call = base.for_call(min_score_ratio=0.2, max_tokens=50)
    assert call.fusion == PRESETS["compact"].cut_at(0.2)
    assert (call.max_tokens, call.rerank, call.rerank_candidates) == (50, False, 7)
    assert base.for_call(rerank=True).rerank is True
    assert (base.excerpt_tokens, base.for_call(excerpt_tokens=0).excerpt_tokens) == (192, 0)
    assert base.max_tokens == 300  # frozen: the object a memory holds is never changed


def test_the_settings_give_the_defaults() -> None:
    settings = MemhubSettings(
        database_url="memory://",
        search_max_tokens=120,
        search_min_score_ratio=0.4,
        rerank_candidates=9,
        search_excerpt_tokens=64,
    )
    config = SearchConfig.from_settings(settings)
    assert (config.max_tokens, config.fusion.min_score_ratio) == (120, 0.4)
    assert config.excerpt_tokens == 64
    assert (config.rerank_candidates, config.rerank) == (9, None)
    # A fusion given explicitly keeps its own cut-off.
    assert SearchConfig.from_settings(settings, PRESETS["keyword"]).fusion == PRESETS["keyword"]


@pytest.mark.parametrize(
    "bad",
    [
        {"max_tokens": 0},
        {"max_tokens": True},
        {"rerank": 1},
        {"rerank_candidates": 0},
        {"excerpt_tokens": -1},
        {"excerpt_tokens": None},
    ],
)
def test_bad_values_are_refused_before_anything_runs(bad: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        SearchConfig(**bad)  # type: ignore[arg-type]


def test_a_memory_takes_a_fusion_or_a_search_config_not_both() -> None:
    settings = MemhubSettings(database_url="memory://", search_max_tokens=80)
    memory = AsyncMemory(settings=settings, fusion=PRESETS["keyword"])
    assert memory.search_config == SearchConfig(PRESETS["keyword"], max_tokens=80)
    chosen = SearchConfig(FusionConfig(), max_tokens=10)
    assert AsyncMemory(settings=settings, search_config=chosen).search_config is chosen
    with pytest.raises(UsageError, match="not both"):
        AsyncMemory(settings=settings, fusion=FusionConfig(), search_config=chosen)
