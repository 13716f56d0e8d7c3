"""Compile a parsed filter into a SQL condition over the ``memories`` table.

Every condition compiles to a two-valued expression (never NULL), so ``NOT`` flips it exactly
as :func:`memhub.store.inmemory.filters.matches` does. Every value (and every metadata key,
inside a bound jsonpath) travels as a parameter: the statement text depends on the filter's
shape only.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Final
from uuid import UUID

from psycopg import sql
from psycopg.types.json import Jsonb

from memhub.filters import (
    COLUMN_FIELDS,
    COMPARISONS,
    EXISTS,
    KIND,
    TIMESTAMP_FIELDS,
    And,
    Condition,
    Filter,
    Or,
    metadata_path,
)
from memhub.store.postgres.bind import Params

__all__ = ["compile_filter"]

_TRUE: Final = sql.SQL("TRUE")
_FALSE: Final = sql.SQL("FALSE")
_SQL_ORDER: Final = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
_NEGATED: Final = {"ne": "eq", "nin": "in"}
_ROOT: Final = sql.SQL("'{}'::text[]")  # the empty path: #>> of it is the value as text


def compile_filter(f: Filter, params: Params, table_alias: str = "m") -> sql.Composable:
    """A boolean SQL expression selecting the rows of ``memories`` that ``f`` matches.

    Args:
        f: a tree from :func:`memhub.filters.parse_filters`.
        params: the statement's parameters; the filter's values are added to them.
        table_alias: the alias ``memories`` has in the surrounding query.

    Returns:
        A composable to embed in a ``WHERE`` clause; execute it with ``params.values``.
    """
    if isinstance(f, Condition):
        return _condition(f, params, table_alias)
    if isinstance(f, And):
        return _join(f.parts, "AND", _TRUE, params, table_alias)
    if isinstance(f, Or):
        return _join(f.parts, "OR", _FALSE, params, table_alias)
    return sql.SQL("(NOT {})").format(compile_filter(f.part, params, table_alias))


def _join(
    parts: tuple[Filter, ...], word: str, empty: sql.SQL, params: Params, alias: str
) -> sql.Composable:
    if not parts:
        return empty
    joined = sql.SQL(" AND " if word == "AND" else " OR ").join(
        compile_filter(p, params, alias) for p in parts
    )
    return sql.SQL("({})").format(joined)


def _condition(c: Condition, params: Params, alias: str) -> sql.Composable:
    op = _NEGATED.get(c.op, c.op)
    if c.field == KIND:
        # derived from the role column (memory_kind): episodes have a speaker, facts none
        kind = sql.SQL("(CASE WHEN {} IS NULL THEN 'fact' ELSE 'episode' END)").format(
            sql.Identifier(alias, "role")
        )
        expr = _column(kind, c.field, op, c.value, params)
    elif c.field in COLUMN_FIELDS or c.field in TIMESTAMP_FIELDS:
        expr = _column(sql.Identifier(alias, c.field), c.field, op, c.value, params)
    else:
        doc = sql.Identifier(alias, "metadata")
        expr = _metadata(doc, metadata_path(c.field), op, c.value, params)
    return sql.SQL("(NOT {})").format(expr) if op != c.op else expr


# -- columns -------------------------------------------------------------------------------
def _column(col: sql.Composable, field: str, op: str, value: Any, params: Params) -> sql.Composable:
    if op == EXISTS:
        return sql.SQL("({} IS NOT NULL)").format(col)
    if op in ("eq", "in"):
        return _column_in(col, field, (value,) if op == "eq" else value, params)
    if not _fits_column(field, value):
        return _FALSE  # a value of another type compares false, as in Python
    # "C" collation: code-point order and ASCII-only case folding on every server locale.
    target = sql.SQL('{} COLLATE "C"').format(col) if _is_text(field) else col
    bound = params.bind(value, _sql_type(field))
    if op in COMPARISONS:
        test = sql.SQL("{} {} {}").format(target, sql.SQL(_SQL_ORDER[op]), bound)
    elif op == "contains":
        test = sql.SQL("strpos({}, {}) > 0").format(target, bound)
    else:  # icontains
        test = sql.SQL('strpos(lower({}), lower({} COLLATE "C")) > 0').format(target, bound)
    return sql.SQL("({} IS NOT NULL AND {})").format(col, test)


def _column_in(
    col: sql.Composable, field: str, values: tuple[Any, ...], params: Params
) -> sql.Composable:
    tests: list[sql.Composable] = []
    if any(v is None for v in values):
        tests.append(sql.SQL("{} IS NULL").format(col))
    typed = [v for v in values if v is not None and _fits_column(field, v)]
    if typed:
        # One array parameter: the text stays the same however many values are listed.
        bound = params.bind(typed, _sql_type(field) + "[]")
        tests.append(sql.SQL("({} IS NOT NULL AND {} = ANY ({}))").format(col, col, bound))
    if not tests:
        return _FALSE
    return sql.SQL("({})").format(sql.SQL(" OR ").join(tests))


def _is_text(field: str) -> bool:
    return field in COLUMN_FIELDS and field != "id"


def _sql_type(field: str) -> str:
    if field in TIMESTAMP_FIELDS:
        return "timestamptz"
    return "uuid" if field == "id" else "text"


def _fits_column(field: str, value: Any) -> bool:
    if field in TIMESTAMP_FIELDS:
        return isinstance(value, datetime)
    if field == "id":
        return isinstance(value, UUID)
    return isinstance(value, str)


# -- metadata ------------------------------------------------------------------------------
def _metadata(
    doc: sql.Identifier, path: tuple[str, ...], op: str, value: Any, params: Params
) -> sql.Composable:
    at = _extract(doc, path, params)
    if op == EXISTS:
        return sql.SQL("({} IS NOT NULL)").format(at)
    if op in ("eq", "in"):
        return _metadata_in(doc, at, path, (value,) if op == "eq" else value, params)
    if op in COMPARISONS:
        return _metadata_compare(doc, path, op, value, params)
    if op == "contains":
        return _metadata_contains(doc, at, path, value, params)
    return sql.SQL(
        "coalesce(jsonb_typeof({at}) = 'string' AND strpos("
        'lower(({at} #>> {root}) COLLATE "C"), lower({needle} COLLATE "C")) > 0, false)'
    ).format(at=at, root=_ROOT, needle=params.bind(value, "text"))


def _jsonpath(path: tuple[str, ...], params: Params, predicate: str = "") -> sql.Composable:
    # Strict mode: lax mode would look through arrays ({"a": [{"b": 1}]} has no "a.b" for
    # Python) and compare each element of an array value instead of the array itself.
    keys = "".join("." + json.dumps(key, ensure_ascii=False) for key in path)
    return params.bind(f"strict ${keys}{predicate}", "jsonpath")


def _extract(doc: sql.Identifier, path: tuple[str, ...], params: Params) -> sql.Composable:
    """The jsonb value at ``path``, or SQL NULL when any key on the way is missing.

    Unlike ``#>``, it never reads an array element by a key that looks like an index.
    """
    return sql.SQL("jsonb_path_query_first({}, {}, '{{}}', true)").format(
        doc, _jsonpath(path, params)
    )


def _nest(path: tuple[str, ...], value: Any) -> Jsonb:
    for key in reversed(path):
        value = {key: value}
    return Jsonb(value)


def _metadata_in(
    doc: sql.Identifier,
    at: sql.Composable,
    path: tuple[str, ...],
    values: tuple[Any, ...],
    params: Params,
) -> sql.Composable:
    if not values:
        return _FALSE
    # Containment narrows through the GIN index; the exact jsonb equality decides, since
    # containment alone would let [1, 2] match [1] and {"a": 1, "b": 2} match {"a": 1}.
    if len(values) == 1:
        return sql.SQL("({} @> {} AND coalesce({} = {}, false))").format(
            doc,
            params.bind(_nest(path, values[0]), "jsonb"),
            at,
            params.bind(Jsonb(values[0]), "jsonb"),
        )
    nested = params.bind([_nest(path, v) for v in values], "jsonb[]")
    exact = params.bind([Jsonb(v) for v in values], "jsonb[]")
    return sql.SQL("({} @> ANY ({}) AND coalesce({} = ANY ({}), false))").format(
        doc, nested, at, exact
    )


def _metadata_compare(
    doc: sql.Identifier, path: tuple[str, ...], op: str, value: Any, params: Params
) -> sql.Composable:
    # jsonpath calls comparisons of different types "unknown" (false) instead of raising;
    # silent=true turns a missing key into NULL, which coalesce makes false.
    predicate = f" ? (@ {_SQL_ORDER[op]} $v)"
    return sql.SQL("coalesce(jsonb_path_exists({}, {}, {}, true), false)").format(
        doc, _jsonpath(path, params, predicate), params.bind(Jsonb({"v": value}), "jsonb")
    )


def _metadata_contains(
    doc: sql.Identifier, at: sql.Composable, path: tuple[str, ...], needle: Any, params: Params
) -> sql.Composable:
    member = sql.SQL(
        "({doc} @> {nested} AND EXISTS (SELECT 1 FROM jsonb_array_elements("
        "CASE WHEN jsonb_typeof({at}) = 'array' THEN {at} END) AS memhub_element(item)"
        " WHERE memhub_element.item = {needle}))"
    ).format(
        doc=doc,
        nested=params.bind(_nest(path, [needle]), "jsonb"),
        at=at,
        needle=params.bind(Jsonb(needle), "jsonb"),
    )
    if not isinstance(needle, str):
        return member
    substring = sql.SQL(
        "coalesce(jsonb_typeof({at}) = 'string'"
        ' AND strpos(({at} #>> {root}) COLLATE "C", {needle}) > 0, false)'
    ).format(at=at, root=_ROOT, needle=params.bind(needle, "text"))
    return sql.SQL("({} OR {})").format(substring, member)
