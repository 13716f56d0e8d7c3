"""Bound SQL: every value a named parameter, and the one compiler of scope conditions.

Statement text never carries a value, so a ``%`` in an id cannot be read as a placeholder, and
the text is the same for every user, which lets psycopg prepare a scoped read once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from psycopg import sql

from memhub.store.records import Scope

__all__ = ["TURN_COLUMNS", "Params", "scope_where", "vector_type_modifier"]

# Turns carry the run id as their session id (see memhub.engine.ingest).
TURN_COLUMNS: Final = {"user_id": "user_id", "agent_id": "agent_id", "run_id": "session_id"}


class Params:
    """The values of one statement, each behind a named placeholder of its own.

    Names are handed out in order (``p0``, ``p1``...), so the same statement shape always
    renders the same text, whatever the values.
    """

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def bind(self, value: Any, cast: str | None = None) -> sql.Composable:
        """A placeholder for ``value``, optionally cast to a SQL type (such as ``text[]``)."""
        name = f"p{len(self.values)}"
        self.values[name] = value
        placeholder = sql.Placeholder(name)
        if cast is None:
            return placeholder
        return sql.SQL("{}::{}").format(placeholder, sql.SQL(cast))


def scope_where(
    scope: Scope | None,
    params: Params,
    alias: str | None = "m",
    columns: Mapping[str, str] | None = None,
) -> sql.Composable:
    """``AND``-ed equality on each id the scope sets (``TRUE`` for no scope), values bound.

    Args:
        scope: the ids to match; ``None`` or an empty scope matches every row.
        params: where the id values go.
        alias: the table alias to qualify columns with (``None``: unqualified).
        columns: the column holding each id, when the table names them differently
            (``TURN_COLUMNS`` for ``conversation_context``).
    """
    ids = scope.as_dict() if scope is not None else {}
    parts = []
    for key, value in ids.items():
        column = (columns or {}).get(key, key)
        ident = sql.Identifier(column) if alias is None else sql.Identifier(alias, column)
        parts.append(sql.SQL("{} = {}").format(ident, params.bind(value)))
    return sql.SQL(" AND ").join(parts) if parts else sql.SQL("TRUE")


def vector_type_modifier(dimension: int) -> sql.Composable:
    """The ``384`` of ``vector(384)``: DDL cannot bind a type modifier, so only an int passes."""
    if isinstance(dimension, bool) or not isinstance(dimension, int) or dimension < 1:
        raise ValueError(f"an embedding dimension must be a positive int, got {dimension!r}")
    return sql.SQL(str(int(dimension)))
