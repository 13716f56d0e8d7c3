"""Mem0's filters decided in Python exactly as PostgreSQL decides them: the in-process WHERE.

:mod:`memhub.store.postgres.filters` compiles the same trees to SQL; the tests hold both to one
answer.
"""

from __future__ import annotations

import operator
import string
from collections.abc import Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Final
from uuid import UUID

from memhub.filters import (
    COLUMN_FIELDS,
    EXISTS,
    KIND,
    TIMESTAMP_FIELDS,
    And,
    Condition,
    Filter,
    Or,
    memory_kind,
    metadata_path,
)
from memhub.store.inmemory.rows import as_utc

__all__ = ["matches"]

_ASCII_LOWER: Final = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_MISSING: Final = object()
_NEGATED: Final = {"ne": "eq", "nin": "in"}
_ORDER: Final = {"gt": operator.gt, "gte": operator.ge, "lt": operator.lt, "lte": operator.le}


def matches(f: Filter, record: Mapping[str, Any]) -> bool:
    """Whether a memory satisfies a filter, exactly as PostgreSQL would decide.

    Args:
        f: a tree from :func:`parse_filters`.
        record: the memory's columns by name (missing ones count as NULL) and ``"metadata"``.

    Returns:
        True when the record is selected.
    """
    if isinstance(f, Condition):
        return _matches_condition(f, record)
    if isinstance(f, And):
        return all(matches(p, record) for p in f.parts)
    if isinstance(f, Or):
        return any(matches(p, record) for p in f.parts)
    return not matches(f.part, record)


def _matches_condition(c: Condition, record: Mapping[str, Any]) -> bool:
    actual = _lookup(c.field, record)
    if c.op == EXISTS:
        return actual is not (None if _is_column(c.field) else _MISSING)
    negated = c.op in _NEGATED
    op = _NEGATED.get(c.op, c.op)
    held = actual is not _MISSING and _test(op, actual, c.value)
    return not held if negated else held


def _test(op: str, actual: Any, value: Any) -> bool:
    if op == "eq":
        return _equal(actual, value)
    if op == "in":
        return any(_equal(actual, v) for v in value)
    if op == "contains":
        if isinstance(actual, str):
            return isinstance(value, str) and value in actual
        return isinstance(actual, list | tuple) and any(_equal(e, value) for e in actual)
    if op == "icontains":
        return isinstance(actual, str) and _fold(value) in _fold(actual)
    order = _compare(actual, value)
    return order is not None and _ORDER[op](order, 0)


def _is_column(field: str) -> bool:
    return field in COLUMN_FIELDS or field in TIMESTAMP_FIELDS


def _lookup(field: str, record: Mapping[str, Any]) -> Any:
    """A column's value (None when NULL), or the metadata value (``_MISSING`` when absent)."""
    if field == KIND:
        return memory_kind(record.get("role"))
    if _is_column(field):
        value = record.get(field)
        if isinstance(value, datetime):
            return as_utc(value, value)
        if field == "id" and isinstance(value, str):
            return UUID(value)
        return value
    current: Any = record.get("metadata") or {}
    for key in metadata_path(field):
        if not isinstance(current, Mapping) or key not in current:
            return _MISSING
        current = current[key]
    return current


def _fold(text: str) -> str:
    return text.translate(_ASCII_LOWER)


def _number(value: Any) -> Decimal | None:
    """The decimal PostgreSQL sees: floats travel as their shortest repr in JSON."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return Decimal(repr(value)) if isinstance(value, float) else Decimal(value)


def _equal(a: Any, b: Any) -> bool:
    """jsonb equality: booleans are not numbers, numbers compare by value."""
    na, nb = _number(a), _number(b)
    if na is not None or nb is not None:
        return na is not None and nb is not None and na == nb
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _compare(a: Any, b: Any) -> int | None:
    """-1, 0 or 1, or None when jsonpath would call the comparison unknown."""
    na, nb = _number(a), _number(b)
    if na is not None and nb is not None:
        return (na > nb) - (na < nb)
    if type(a) is type(b) and isinstance(a, bool | str | datetime | UUID):
        return int(a > b) - int(a < b)
    return None
