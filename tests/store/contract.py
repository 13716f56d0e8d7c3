"""What the store contract suites share: scopes, vectors and row builders.

The ``store`` fixture (tests/store/conftest.py) is both back ends; every suite named ``test_*_contract.py`` runs unchanged on PostgreSQL and on the in-process
``memory://`` store, one concern each (turns, memories, queue, consolidation writes).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID, uuid4

import numpy as np

from memhub.store.protocol import Store
from memhub.store.records import Lane, Lease, NewJob, NewMemory, NewTurn, Scope

U = Scope(user_id="u")
V = Scope(user_id="v")
X, Y, Z = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]
INGEST = Lane(("ingest",))
LEASE = Lease("w", 60.0, 3)


def mem(
    text: str,
    scope: Scope = U,
    vector: Sequence[float] | None = X,
    hash_: str | None = None,
    **kw: object,
) -> NewMemory:
    return NewMemory(
        id=uuid4(),
        scope=scope,
        memory=text,
        hash=hash_ or text,
        embedding=None if vector is None else np.asarray(vector, dtype=np.float32),
        metadata=kw.pop("metadata", {}),  # type: ignore[arg-type]
        **kw,  # type: ignore[arg-type]
    )


async def insert(store: Store, *memories: NewMemory, actor: str = "w") -> list[UUID | None]:
    async with store.apply_jobs([], "t", {}) as batch:
        return await batch.insert_memories(memories, actor)


async def queue(store: Store, scope: Scope, n: int = 1) -> list[int]:
    """Queue ``n`` jobs of ``scope``; returns their ids."""
    before = {j.id for j in await store.list_jobs("queued", 10_000)}
    for _ in range(n):
        turn = NewTurn(user_id=scope.user_id or "x", session_id="s", role="user", message="m")
        await store.append_turns([turn], NewJob("ingest", scope))
    return sorted({j.id for j in await store.list_jobs("queued", 10_000)} - before)


async def turns_and_their_memories(
    store: Store, vector: Sequence[float] = X
) -> tuple[list[int], list[int], list[int]]:
    """Two sessions of one user, interleaved, and one memory per source turn list."""
    first = await store.append_turns(
        [NewTurn("u", "s1", "user", "a"), NewTurn("u", "s1", "ai", "b")], None
    )
    other = await store.append_turns([NewTurn("u", "s2", "user", "c")], None)
    later = await store.append_turns([NewTurn("u", "s1", "user", "d")], None)
    sources = {
        "tea first": (first[0],),
        "tea second": (first[1],),
        "tea elsewhere": (other[0],),
        "tea later": (later[0], first[0]),
        "tea without turns": (),
    }
    await insert(
        store, *(mem(text, vector=vector, source_turn_ids=ids) for text, ids in sources.items())
    )
    return first, other, later
