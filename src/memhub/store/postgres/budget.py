"""The budget of model changes: one user's changes by models, counted where they are made.

A count and the change it allows are one decision: :func:`count_model_changes` first takes a
transaction-level advisory lock on the user's budget, so two processes changing one user's
memories at once count one after the other, and neither passes a budget the other spent.
"""

from __future__ import annotations

from datetime import datetime

from psycopg import sql

from memhub.errors import ModelBudgetSpent
from memhub.store.postgres.bind import Params
from memhub.store.postgres.database import AsyncConn
from memhub.store.records import MODEL_CHANGE_EVENTS, PERSON_ACTORS, ModelBudget

__all__ = ["by_model", "count_model_changes", "spend_model_budget"]

BY_MODEL_SQL = sql.SQL(
    "m.event = ANY({events}) AND m.actor IS NOT NULL AND m.actor <> ALL({people})"
)


def by_model(params: Params) -> sql.Composable:
    return BY_MODEL_SQL.format(
        events=params.bind(list(MODEL_CHANGE_EVENTS), "text[]"),
        people=params.bind(list(PERSON_ACTORS), "text[]"),
    )


async def _lock_budget(conn: AsyncConn, user_id: str) -> None:
    # held until the transaction ends (outside one, only for this statement)
    await conn.execute(
        "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", ["memhub.model-budget:" + user_id]
    )


async def count_model_changes(
    conn: AsyncConn, user_id: str, since: datetime, session_id: str | None = None
) -> int:
    """How many memories of ``user_id`` models changed since ``since`` (undone ones too).

    Episodes retired along with a forgotten fact (``along_with``) are not counted again.
    ``session_id``: only changes that cite a turn of that conversation.
    """
    await _lock_budget(conn, user_id)
    params = Params()  # values bound in the order the statement reads them
    user, since_, model_made = params.bind(user_id), params.bind(since), by_model(params)
    in_session: sql.Composable = sql.SQL("TRUE")
    if session_id is not None:
        in_session = sql.SQL(
            "m.turn_ids && ARRAY(SELECT c.id::bigint FROM conversation_context c"
            " WHERE c.user_id = {user} AND c.session_id = {session})"
        ).format(user=params.bind(user_id), session=params.bind(session_id))
    cur = await conn.execute(
        sql.SQL(
            "SELECT count(*) FROM memory_history m WHERE m.user_id = {user}"
            " AND m.created_at >= {since} AND {by_model} AND NOT m.metadata ? 'along_with'"
            " AND {in_session}"
        ).format(user=user, since=since_, by_model=model_made, in_session=in_session),
        params.values,
    )
    row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def spend_model_budget(conn: AsyncConn, user_id: str, budget: ModelBudget) -> None:
    """Raise :class:`ModelBudgetSpent` if models changed ``budget.limit`` memories of
    ``user_id`` since ``budget.since``; call inside the transaction of the change."""
    spent = await count_model_changes(conn, user_id, budget.since)
    if spent >= budget.limit:
        raise ModelBudgetSpent(budget.refusal(spent))
