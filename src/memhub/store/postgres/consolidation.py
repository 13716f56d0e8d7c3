"""SQL for consolidation: the operations an LLM decided, applied inside the job's transaction.

Each write records its ``memory_history`` event with the turns it came from, so every fact
can be traced back to what was said; a superseded fact is closed and a forgotten one retired
(:mod:`memhub.store.postgres.retire`): no model's decision erases anything.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar
from uuid import UUID

import numpy as np
import psycopg
from psycopg import sql
from psycopg.types.json import Jsonb

from memhub.errors import StoreError
from memhub.store.postgres.bind import Params, scope_where
from memhub.store.postgres.changes import count_model_changes
from memhub.store.postgres.database import AsyncConn
from memhub.store.postgres.errors import translate_errors
from memhub.store.postgres.memories import (
    COLUMNS,
    history_event,
    insert_memories,
    lock_memory,
    record_from_row,
)
from memhub.store.postgres.retire import retire
from memhub.store.records import FORGET_REASON, NewMemory, Scope, usage_summary

__all__ = ["PgConsolidationWrites", "batch_step", "usage_stats"]

log = logging.getLogger("memhub.consolidation")

# A model's UPDATE first copies the row it rewrites: superseded by it, and closed where it
# opened (valid_to = valid_from), so no ``as_of`` moment sees the two wordings of one fact.
_KEEP_VERSION = (
    "INSERT INTO memories (id, user_id, agent_id, run_id, memory, hash, metadata, memory_type,"
    " valid_from, valid_to, superseded_by, source_turn_ids, created_at, updated_at, role,"
    " previous_turn_id, expires_at, embedding)"
    " SELECT %s, user_id, agent_id, run_id, memory, hash, metadata, memory_type, valid_from,"
    " valid_from, id, source_turn_ids, created_at, now(), role, previous_turn_id, expires_at,"
    " embedding FROM memories WHERE id = %s"
)

P = ParamSpec("P")
T = TypeVar("T")
B = TypeVar("B", bound="PgConsolidationWrites")


def batch_step(
    method: Callable[Concatenate[B, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[B, P], Coroutine[Any, Any, T]]:
    """A write of the batch: refused once the batch's transaction has ended, errors translated.

    The engine sees memhub's errors only; after a failed write PostgreSQL refuses every
    further one ("current transaction is aborted"), so the apply rolls back.
    """

    @functools.wraps(method)
    async def step(self: B, /, *args: P.args, **kwargs: P.kwargs) -> T:
        if self.closed:
            raise StoreError("this job batch is closed")
        with translate_errors("applying background jobs"):
            return await method(self, *args, **kwargs)

    return step


@dataclass
class PgConsolidationWrites:
    """The apply phase's writes to memories, in the transaction of ``conn``."""

    conn: AsyncConn
    closed: bool = field(default=False, kw_only=True)  # the apply's transaction has ended

    @batch_step
    async def insert_memories(self, memories: Sequence[NewMemory], actor: str) -> list[UUID | None]:
        """Insert memories and their ADD history; None where an equal current memory exists."""
        return await insert_memories(self.conn, memories, actor)

    @batch_step
    async def refine(
        self,
        scope: Scope,
        memory_id: UUID,
        text: str,
        hash_: str,
        vector: Any,
        turn_ids: Sequence[int],
    ) -> bool:
        """UPDATE: the same fact, said better. False if the new text already exists as a fact.

        The id stays (as Mem0's UPDATE keeps it); the earlier wording is kept as a version
        superseded by it (:data:`_KEEP_VERSION`), named in the UPDATE event, so that
        ``restore`` undoes a model's rewording like any supersession.
        """
        old = await lock_memory(self.conn, scope, memory_id)
        version = uuid.uuid4()
        try:
            async with self.conn.transaction():
                await self.conn.execute(_KEEP_VERSION, (version, memory_id))
                await self.conn.execute(
                    "UPDATE memories SET memory = %s, hash = %s, embedding = %s,"
                    " updated_at = now(), source_turn_ids = source_turn_ids || %s::bigint[]"
                    " WHERE id = %s",
                    (text, hash_, np.asarray(vector, dtype=np.float32), list(turn_ids), memory_id),
                )
        except psycopg.errors.UniqueViolation:
            log.info("UPDATE of %s skipped: the refined text is already stored", memory_id)
            return False
        await history_event(
            self.conn,
            old,
            "UPDATE",
            old.memory,
            text,
            "consolidation",
            turn_ids,
            {"previous_version": str(version)},
        )
        return True

    @batch_step
    async def supersede(
        self, scope: Scope, old_id: UUID, new: NewMemory, closed_at: datetime
    ) -> UUID:
        """SUPERSEDE: close the old fact at ``closed_at`` and add its successor."""
        old = await lock_memory(self.conn, scope, old_id)
        await self.conn.execute(
            "UPDATE memories SET valid_to = %s, updated_at = now() WHERE id = %s",
            (closed_at, old_id),
        )
        # The closing event first, so a fact's history reads in the order things happened.
        await history_event(
            self.conn,
            old,
            "SUPERSEDE",
            old.memory,
            new.memory,
            "consolidation",
            new.source_turn_ids,
            {"superseded_by": str(new.id)},
        )
        (successor,) = await insert_memories(self.conn, [new], actor="consolidation")
        if successor is None:  # the new fact was already stored: link to that one
            params = Params()
            cur = await self.conn.execute(
                sql.SQL(
                    "SELECT m.id FROM memories m WHERE {} AND m.hash = {} AND m.valid_to IS NULL"
                ).format(scope_where(new.scope, params), params.bind(new.hash)),
                params.values,
            )
            row = await cur.fetchone()
            assert row is not None
            successor = row[0]
            await self.conn.execute(
                "UPDATE memory_history SET metadata = %s"
                " WHERE memory_id = %s AND event = 'SUPERSEDE'"
                " AND id = (SELECT max(id) FROM memory_history WHERE memory_id = %s)",
                (Jsonb({"superseded_by": str(successor)}), old_id, old_id),
            )
        await self.conn.execute(
            "UPDATE memories SET superseded_by = %s WHERE id = %s", (successor, old_id)
        )
        return successor

    @batch_step
    async def forget(
        self, scope: Scope, memory_id: UUID, turn_ids: Sequence[int], reason: str = FORGET_REASON
    ) -> None:
        """DELETE on the user's request: retired (restorable), never erased by a model."""
        old = await lock_memory(self.conn, scope, memory_id)
        await retire(self.conn, old, "consolidation", reason, turn_ids)

    @batch_step
    async def retire_episodes(
        self, scope: Scope, turn_ids: Sequence[int], reason: str, along_with: UUID
    ) -> int:
        """Retire the scope's current episodes of ``turn_ids`` with the fact a forget retired."""
        params = Params()
        cur = await self.conn.execute(
            sql.SQL(
                "SELECT {cols} FROM memories m WHERE {scope} AND m.role IS NOT NULL"
                " AND m.valid_to IS NULL AND m.source_turn_ids && {turns} ORDER BY m.id"
                " FOR UPDATE"
            ).format(
                cols=COLUMNS,
                scope=scope_where(scope, params),
                turns=params.bind(list(turn_ids), "bigint[]"),
            ),
            params.values,
        )
        episodes = [record_from_row(row) for row in await cur.fetchall()]
        meta = {"along_with": str(along_with)}
        for episode in episodes:
            await retire(self.conn, episode, "consolidation", reason, turn_ids, meta)
        return len(episodes)

    @batch_step
    async def count_model_changes(
        self, user_id: str, since: datetime, session_id: str | None = None
    ) -> int:
        """How many memories of ``user_id`` models changed since ``since``, in this transaction."""
        return await count_model_changes(self.conn, user_id, since, session_id)

    @batch_step
    async def record_usage(
        self,
        scope: Scope,
        model: str,
        usage: Mapping[str, int],
        turns: int,
        jobs: int,
        operations: Mapping[str, int],
    ) -> None:
        """One row per LLM call batch: what consolidation costs, per scope."""
        await self.conn.execute(
            "INSERT INTO memory_llm_usage (user_id, agent_id, run_id, model, calls, prompt_tokens,"
            " completion_tokens, turns, jobs, operations)"
            " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
            (
                scope.user_id,
                scope.agent_id,
                scope.run_id,
                model,
                usage["calls"],
                usage["prompt_tokens"],
                usage["completion_tokens"],
                turns,
                jobs,
                Jsonb(dict(operations)),
            ),
        )


async def usage_stats(conn: AsyncConn, since: datetime | None = None) -> dict[str, float]:
    """LLM calls and tokens, in total and per processed turn."""
    cur = await conn.execute(
        "SELECT coalesce(sum(calls), 0), coalesce(sum(prompt_tokens), 0),"
        " coalesce(sum(completion_tokens), 0), coalesce(sum(turns), 0)"
        " FROM memory_llm_usage WHERE %s::timestamptz IS NULL OR created_at >= %s",
        (since, since),
    )
    row = await cur.fetchone()
    assert row is not None
    calls, prompt, completion, turns = (int(v) for v in row)
    return usage_summary(calls, prompt, completion, turns)
