"""bench.search_timeline: the parts of one search() timed in place, and the wrappers undone."""

from bench.profile_search import USER

from bench import search_timeline
from memhub import AsyncMemory, MemhubSettings
from memhub.engine import retrieve
from memhub.store.postgres import search as pg_search


def test_the_text_statement_counts_only_when_it_ends_after_the_embedding() -> None:
    marks = {
        "embed start": 0.1,
        "embed end": 7.0,
        "text start": 0.3,
        "text end": 9.0,
        "vector start": 9.1,
        "vector end": 12.0,
    }
    steps = dict(zip(search_timeline.STEPS, search_timeline._steps(marks, 12.5), strict=True))
    assert steps["text statement ends after the embedding by"] == 2.0
    assert steps["after the vector statement (fusion, results)"] == 0.5
    early = {**marks, "text end": 6.0}
    steps = dict(zip(search_timeline.STEPS, search_timeline._steps(early, 12.5), strict=True))
    assert steps["text statement ends after the embedding by"] == 0.0


async def test_a_real_search_is_timed_in_place_and_the_wrappers_are_undone(
    settings: MemhubSettings,
) -> None:
    originals = (pg_search.text_hits, pg_search.vector_candidates, retrieve.embed_one)  # type: ignore[attr-defined]
    async with AsyncMemory(settings=settings) as memory:
        for text in ("tea with lemon", "a walk in the park", "lemon cake recipe"):
            await memory.add(text, user_id=USER, infer=False, wait=True)
        result = await search_timeline.measure(memory, ["lemon", "park walk", "cake"])
        assert (await memory.search("lemon", user_id=USER))["results"]
    steps = result["steps"]
    assert list(steps) == list(search_timeline.STEPS)
    # Every part happened (a missing mark would have raised) and fits inside its search.
    assert 0 < steps["vector statement"]["p50"] < steps["search"]["p95"]
    assert 0 < steps["embedding, beside the text statement"]["p50"] < steps["search"]["p95"]
    assert 0.0 <= result["text_last_share"] <= 1.0
    assert (pg_search.text_hits, pg_search.vector_candidates, retrieve.embed_one) == originals  # type: ignore[attr-defined]
    assert "| vector statement |" in "\n".join(search_timeline.markdown(result))
