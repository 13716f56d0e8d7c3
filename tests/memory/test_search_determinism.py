"""Search is a function of the stored conversations: same store and query, or the same turns
written in another order, give the same ranking (real embedder, PostgreSQL and in-process store)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from memhub import AsyncMemory
from memhub._portal import run_sync
from memhub.engine.fusion import FusionConfig
from memhub.engine.search_config import SearchConfig
from memhub.store.records import TextRanking

SPEAKERS = ("Caroline", "Melanie")
THINGS = ("the park", "a pottery class", "the beach", "a concert", "the library", "her garden")
VERBS = ("went to", "talked about", "loved", "painted", "visited", "remembered")
QUERIES = (
    "What did Caroline paint?",
    "When did Melanie go to the beach?",
    "Who visited the library?",
    "What did Caroline and Melanie talk about at the concert?",
    "Which class did Melanie love?",
    "garden",
)


def _turns() -> list[tuple[str, str, datetime]]:
    """180 short turns in 9 sessions: every turn starts with a speaker name that matches more
    rows than the text side's per-word cap (100), many texts tie on their words, and the turns
    of a session share one timestamp (as LoCoMo's do)."""
    start = datetime(2023, 5, 1, tzinfo=UTC)
    turns = []
    for n in range(180):
        speaker = SPEAKERS[n % 2]
        verb = VERBS[(n // 2) % len(VERBS)]
        thing = THINGS[(n // 12) % len(THINGS)]
        text = f"{speaker}: I {verb} {thing} with friend {n % 7}"
        turns.append((text, f"session-{n // 20}", start + timedelta(n // 20)))
    return turns


def _interleaved(turns: list[tuple[str, str, datetime]]) -> list[tuple[str, str, datetime]]:
    """The sessions' turns interleaved at random, each session's own turns still in order."""
    sessions: dict[str, list[tuple[str, str, datetime]]] = {}
    for turn in turns:
        sessions.setdefault(turn[1], []).append(turn)
    queues = [list(reversed(q)) for q in sessions.values()]
    rng, mixed = random.Random(3), []
    while any(queues):
        mixed.append(rng.choice([q for q in queues if q]).pop())
    return mixed


async def _ingest(
    memory: AsyncMemory, user_id: str, turns: list[tuple[str, str, datetime]]
) -> None:
    for text, session, when in turns:
        await memory.add(text, user_id=user_id, run_id=session, infer=False, timestamp=when)
    await memory.wait_idle()


async def _top(memory: AsyncMemory, user_id: str, query: str) -> list[tuple[str, float]]:
    found = await memory.search(query, user_id=user_id, limit=10)
    return [(r["memory"], round(r["score"], 9)) for r in found["results"]]


def test_same_turns_in_another_order_and_repeated_queries_rank_the_same(
    shared_memory: AsyncMemory,
) -> None:
    turns = _turns()
    interleaved = _interleaved(turns)
    assert interleaved != turns
    shuffled = turns[:]
    random.Random(7).shuffle(shuffled)

    async def run() -> None:
        await _ingest(shared_memory, "in-order", turns)
        await _ingest(shared_memory, "interleaved", interleaved)
        await _ingest(shared_memory, "shuffled", shuffled)
        # Three rounds: psycopg prepares a statement after five runs on a connection, which
        # may change PostgreSQL's plan (and its row order) between rounds.
        for _ in range(3):
            for query in QUERIES:
                first = await _top(shared_memory, "in-order", query)
                assert len(first) == 10
                assert await _top(shared_memory, "in-order", query) == first, query
                assert await _top(shared_memory, "interleaved", query) == first, query
        # Without the neighbour signal and the previous memory's words (both follow each
        # session's order of turns), any order of writes gives the same ranking.
        shared_memory.search_config = SearchConfig(
            FusionConfig(
                previous_turn_weight=0.0,
                next_turn_weight=0.0,
                text=TextRanking(neighbour_words_weight=0.0),
            )
        )
        for query in QUERIES:
            first = await _top(shared_memory, "in-order", query)
            assert await _top(shared_memory, "shuffled", query) == first, query

    run_sync(run(), timeout=300)


def test_an_answer_is_found_through_the_question_said_just_before_it(
    shared_memory: AsyncMemory,
) -> None:
    question = "Melanie: Have you painted anything lately, Caroline?"
    answer = "Caroline: Yes! A sunset over the lake, last week."
    filler = [f"Melanie: the bus was late again on day {n}" for n in range(30)]

    async def run() -> tuple[list[str], float, float]:
        for text in [*filler[:15], question, answer, *filler[15:]]:
            await shared_memory.add(text, user_id="u", run_id="chat", infer=False)
        await shared_memory.wait_idle()
        found = (await shared_memory.search("What did Caroline paint?", user_id="u"))["results"]
        with_neighbours = next(r["score"] for r in found if r["memory"] == answer)
        shared_memory.search_config = SearchConfig(
            FusionConfig(previous_turn_weight=0.0, next_turn_weight=0.0)
        )
        alone = (await shared_memory.search("What did Caroline paint?", user_id="u"))["results"]
        without = next(r["score"] for r in alone if r["memory"] == answer)
        return [r["memory"] for r in found], with_neighbours, without

    ranked, with_neighbours, without = run_sync(run(), timeout=120)
    assert ranked[:2] == [question, answer]
    default = FusionConfig()
    assert with_neighbours > without
    assert with_neighbours <= without + default.previous_turn_weight + default.next_turn_weight
