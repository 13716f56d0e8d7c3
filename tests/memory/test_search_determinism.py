"""Search is a function of the stored texts: same store and query, or same turns added in another
order, give the same ranking (real embedder, real PostgreSQL and the in-process store)."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from memhub import AsyncMemory
from memhub._portal import run_sync

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


def _turns() -> list[tuple[str, datetime]]:
    """180 short turns in 9 sessions: every turn starts with a speaker name that matches more
    rows than the text side's per-word cap (100), many texts tie on their words, and the turns
    of a session share one timestamp (as LoCoMo's do)."""
    start = datetime(2023, 5, 1, tzinfo=UTC)
    turns = []
    for n in range(180):
        speaker = SPEAKERS[n % 2]
        verb = VERBS[(n // 2) % len(VERBS)]
        thing = THINGS[(n // 12) % len(THINGS)]
        turns.append(
            (f"{speaker}: I {verb} {thing} with friend {n % 7}", start + timedelta(n // 20))
        )
    return turns


async def _ingest(memory: AsyncMemory, user_id: str, turns: list[tuple[str, datetime]]) -> None:
    for text, when in turns:
        await memory.add(text, user_id=user_id, infer=False, timestamp=when)
    await memory.wait_idle()


async def _top(memory: AsyncMemory, user_id: str, query: str) -> list[tuple[str, float]]:
    found = await memory.search(query, user_id=user_id, limit=10)
    return [(r["memory"], round(r["score"], 9)) for r in found["results"]]


def test_same_turns_in_another_order_and_repeated_queries_rank_the_same(
    shared_memory: AsyncMemory,
) -> None:
    turns = _turns()
    shuffled = turns[:]
    random.Random(7).shuffle(shuffled)

    async def run() -> None:
        await _ingest(shared_memory, "in-order", turns)
        await _ingest(shared_memory, "shuffled", shuffled)
        # Three rounds: psycopg prepares a statement after five runs on a connection, which
        # may change PostgreSQL's plan (and its row order) between rounds.
        for _ in range(3):
            for query in QUERIES:
                first = await _top(shared_memory, "in-order", query)
                assert len(first) == 10
                assert await _top(shared_memory, "in-order", query) == first, query
                assert await _top(shared_memory, "shuffled", query) == first, query

    run_sync(run(), timeout=300)
