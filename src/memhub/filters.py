"""Mem0-style filters: parsed once into a small tree, then evaluated or compiled to SQL.

:mod:`memhub.store.inmemory.filters` (the in-process store) and :mod:`memhub.store.postgres.filters`
(PostgreSQL) give the same answer on every record; a shared table of cases tests both.

Fields
    ``created_at updated_at valid_from valid_to``   timestamp columns; values are datetimes or
                                                    ISO 8601 strings, naive meaning UTC
    ``id user_id agent_id run_id memory_type role`` columns (``id`` values must be UUIDs;
                                                    ``role`` is set on episodes)
    ``kind``                                        ``"episode"`` (a stored turn, as said: it
                                                    has a role) or ``"fact"`` (what an LLM
                                                    extracted: no role); only ``eq``, ``ne``,
                                                    ``in``, ``nin`` with those two values
    anything else                                   a metadata key; ``"a.b"`` is key ``b`` of
                                                    the object at key ``a`` (dots always split)

Semantics
    ``{"f": v}``, ``eq``     exact JSON equality: ``1 == 1.0``, ``True != 1``, a list equals
                             only an equal list (use ``contains`` for membership); ``None``
                             matches an explicit JSON null, or a NULL column
    ``ne``, ``nin``          exactly ``NOT eq`` / ``NOT in``: true when the key is missing
    ``gt gte lt lte``        numbers with numbers, strings with strings (code-point order),
                             booleans with booleans, timestamps with timestamps
    ``in``                   ``eq`` to any of the listed values; ``in []`` matches nothing
    ``contains``             substring of a string, or an element (by ``eq``) of a list
    ``icontains``            substring of a string, ignoring ASCII case only (the same on
                             every database locale)
    ``{"f": "*"}``           the key is present (even as JSON null) / the column is not NULL
    missing key, mixed types the condition is false (never an error); ``NOT`` negates
    several keys / operators AND; ``{"AND"|"OR"|"NOT": [..]}`` (also ``and``, ``$and``...);
                             ``NOT [a, b]`` means neither: ``NOT (a OR b)``
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any, Final
from uuid import UUID

from memhub.errors import UsageError

__all__ = [
    "COLUMN_FIELDS",
    "COMPARISONS",
    "EPISODE",
    "EXISTS",
    "FACT",
    "KIND",
    "KINDS",
    "MAX_CONDITIONS",
    "MAX_DEPTH",
    "MAX_IN_VALUES",
    "OPERATORS",
    "TIMESTAMP_FIELDS",
    "And",
    "Condition",
    "Filter",
    "FilterLimits",
    "Not",
    "Or",
    "memory_kind",
    "metadata_path",
    "parse_filters",
]

COLUMN_FIELDS: Final = frozenset({"id", "user_id", "agent_id", "run_id", "memory_type", "role"})
TIMESTAMP_FIELDS: Final = frozenset({"created_at", "updated_at", "valid_from", "valid_to"})
#: The field naming what a memory is, derived from its ``role`` column (no column of its own).
KIND: Final = "kind"
EPISODE: Final = "episode"
FACT: Final = "fact"
KINDS: Final = (EPISODE, FACT)
_KIND_OPERATORS: Final = ("eq", "ne", "in", "nin")
OPERATORS: Final = ("eq", "ne", "gt", "gte", "lt", "lte", "in", "nin", "contains", "icontains")
COMPARISONS: Final = ("gt", "gte", "lt", "lte")
EXISTS: Final = "exists"  # what {"field": "*"} parses to; not accepted as a written operator
MAX_DEPTH: Final = 10
MAX_CONDITIONS: Final = 100
MAX_IN_VALUES: Final = 1000  # values of all in / nin lists together: each one is a comparison


@dataclass(frozen=True)
class FilterLimits:
    """How large a filter may be (``MEMHUB_MAX_FILTER_*``; the defaults are the ``MAX_*``)."""

    max_depth: int = MAX_DEPTH
    max_conditions: int = MAX_CONDITIONS
    max_in_values: int = MAX_IN_VALUES


_DEFAULT_LIMITS: Final = FilterLimits()

_LOGICAL: Final = {
    name: kind
    for kind in ("and", "or", "not")
    for name in (kind, kind.upper(), "$" + kind, "$" + kind.upper())
}
_MAX_VALUE_DEPTH: Final = 32  # keeps hostile input from ending in a RecursionError


@dataclass(frozen=True)
class Condition:
    """One test of one field: ``op`` is one of :data:`OPERATORS` or ``"exists"``.

    ``value`` is normalised by :func:`parse_filters`: an aware UTC datetime for timestamp
    fields, a UUID for ``id``, a tuple for ``in``/``nin``, a fresh JSON value otherwise.
    """

    field: str
    op: str
    value: Any


@dataclass(frozen=True)
class And:
    """All parts hold (true when there are none)."""

    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Or:
    """At least one part holds (false when there are none)."""

    parts: tuple[Filter, ...]


@dataclass(frozen=True)
class Not:
    """The part does not hold."""

    part: Filter


Filter = Condition | And | Or | Not


# -- parsing -------------------------------------------------------------------------------
def parse_filters(
    raw: Mapping[str, Any] | None, limits: FilterLimits = _DEFAULT_LIMITS
) -> Filter | None:
    """Parse Mem0's filter language into a :data:`Filter` tree.

    Args:
        raw: e.g. ``{"category": "work", "score": {"gte": 3}, "OR": [{..}, {..}]}``;
            ``None`` or ``{}`` for no filter.
        limits: The size bounds (nesting, conditions, listed values) checked while parsing.

    Returns:
        The tree, or ``None`` when there is nothing to filter on.

    Raises:
        UsageError: the filter is malformed: an unknown operator, a value of the wrong kind,
            or larger than ``limits`` (the message names the setting).
    """
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise UsageError(f"filters must be a dict, got {type(raw).__name__}")
    if not raw:
        return None
    return _Parser(limits).group(raw, depth=1)


class _Parser:
    """One parse: the limits, and what the filter has spent of them so far."""

    def __init__(self, limits: FilterLimits) -> None:
        self.limits = limits
        self.conditions = 0
        self.listed = 0

    def group(self, raw: Mapping[Any, Any], depth: int) -> Filter:
        if depth > self.limits.max_depth:
            raise UsageError(
                f"filters are nested deeper than {self.limits.max_depth} levels"
                " (MEMHUB_MAX_FILTER_DEPTH)"
            )
        return _parse_group(raw, depth, self)

    def spend(self, conditions: list[Condition]) -> None:
        self.conditions += len(conditions)
        if self.conditions > self.limits.max_conditions:
            raise UsageError(
                f"filters have more than {self.limits.max_conditions} conditions"
                " (MEMHUB_MAX_FILTER_CONDITIONS)"
            )
        self.listed += sum(len(c.value) for c in conditions if c.op in ("in", "nin"))
        if self.listed > self.limits.max_in_values:
            raise UsageError(
                f"filters list more than {self.limits.max_in_values} values in 'in' / 'nin'"
                " (MEMHUB_MAX_FILTER_IN_VALUES)"
            )


def _parse_group(raw: Mapping[Any, Any], depth: int, budget: _Parser) -> Filter:
    parts: list[Filter] = []
    for key, value in raw.items():
        if not isinstance(key, str):
            raise UsageError(f"filter keys must be strings, got {key!r}")
        if key in _LOGICAL:
            parts.append(_parse_logical(_LOGICAL[key], key, value, depth, budget))
        else:
            parts.extend(_parse_field(key, value, budget))
    return parts[0] if len(parts) == 1 else And(tuple(parts))


def _parse_logical(kind: str, key: str, value: Any, depth: int, budget: _Parser) -> Filter:
    if not isinstance(value, list | tuple):
        raise UsageError(f"{key!r} needs a list of filter dicts, got {type(value).__name__}")
    parts: list[Filter] = []
    for item in value:
        if not isinstance(item, Mapping):
            raise UsageError(f"{key!r} needs a list of filter dicts, got an item {item!r}")
        parts.append(budget.group(item, depth + 1))
    if kind == "and":
        return And(tuple(parts))
    if kind == "or":
        return Or(tuple(parts))
    return Not(parts[0] if len(parts) == 1 else Or(tuple(parts)))


def _parse_field(field: str, value: Any, budget: _Parser) -> list[Condition]:
    metadata_path(field)  # validates the name
    if isinstance(value, Mapping):
        if not value:
            raise UsageError(f"the filter on {field!r} has no operator; {_allowed()}")
        conditions = [
            _condition(field, _operator(field, op), v, budget.limits) for op, v in value.items()
        ]
    elif isinstance(value, str) and value == "*":
        conditions = [Condition(field, EXISTS, True)]
    else:
        conditions = [_condition(field, "eq", value, budget.limits)]
    budget.spend(conditions)
    return conditions


def _allowed() -> str:
    return f"allowed operators: {', '.join(OPERATORS)} (a '$' prefix is accepted)"


def _operator(field: str, op: Any) -> str:
    name = op.removeprefix("$") if isinstance(op, str) else op
    if name not in OPERATORS:
        raise UsageError(
            f"unknown operator {op!r} on {field!r}; {_allowed()}. To match a nested metadata "
            f"key use a dotted field such as '{field}.{op}'; to match a whole object use "
            "{'eq': {...}}"
        )
    return str(name)


def metadata_path(field: str) -> tuple[str, ...]:
    """The metadata keys a field name walks through: ``"a.b"`` -> ``("a", "b")``.

    Raises:
        UsageError: the name is empty, has an empty segment or contains a NUL character.
    """
    if not isinstance(field, str) or not field.strip():
        raise UsageError(f"filter field names must be non-empty strings, got {field!r}")
    path = tuple(field.split("."))
    if "" in path or "\x00" in field or not _encodable(field):
        raise UsageError(f"invalid filter field {field!r}: empty key, NUL or lone surrogate")
    return path


def _encodable(text: str) -> bool:
    # Lone surrogates (a bad decode upstream) cannot be sent to PostgreSQL.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def memory_kind(role: str | None) -> str:
    """What a memory is: an episode (a turn as said, which has a speaker) or a fact."""
    return FACT if role is None else EPISODE


def _condition(field: str, op: str, value: Any, limits: FilterLimits) -> Condition:
    if field == KIND:
        _check_kind(op, value)
    if op in ("in", "nin"):
        if not isinstance(value, list | tuple):
            raise UsageError(f"{op!r} on {field!r} needs a list, got {type(value).__name__}")
        if len(value) > limits.max_in_values:  # before converting a huge list
            raise UsageError(
                f"{op!r} on {field!r} lists more than {limits.max_in_values} values"
                " (MEMHUB_MAX_FILTER_IN_VALUES)"
            )
        return Condition(field, op, tuple(_value(field, v) for v in value))
    if op in COMPARISONS and (value is None or isinstance(value, Mapping | list | tuple)):
        raise UsageError(
            f"{op!r} on {field!r} needs a single number, string, boolean or timestamp, "
            f"got {value!r}"
        )
    if op in ("contains", "icontains") and (field in TIMESTAMP_FIELDS or field == "id"):
        raise UsageError(f"{op!r} is not supported on {field!r}")
    if op == "icontains" and not isinstance(value, str):
        raise UsageError(f"'icontains' on {field!r} needs a string, got {value!r}")
    return Condition(field, op, _value(field, value))


def _check_kind(op: str, value: Any) -> None:
    """``kind`` takes one of :data:`KINDS`: a misspelt kind would silently match nothing."""
    if op not in _KIND_OPERATORS:
        raise UsageError(f"{op!r} is not supported on 'kind'; use eq, ne, in or nin")
    values = value if op in ("in", "nin") and isinstance(value, list | tuple) else [value]
    for v in values:
        if v not in KINDS:
            raise UsageError(f"'kind' is 'episode' or 'fact', got {v!r}")


def _value(field: str, value: Any) -> Any:
    if value is None:
        return None
    if field in TIMESTAMP_FIELDS:
        return _timestamp(field, value)
    if field == "id":
        return _uuid(value)
    return _json(field, value, 0)


def _timestamp(field: str, value: Any) -> datetime:
    try:
        if isinstance(value, str):
            value = datetime.fromisoformat(value)
        elif isinstance(value, date) and not isinstance(value, datetime):
            value = datetime(value.year, value.month, value.day)
        if isinstance(value, datetime):
            return _as_utc(value)
    except (ValueError, OverflowError) as exc:
        raise UsageError(f"{field!r} needs an ISO 8601 timestamp, got {value!r}") from exc
    raise UsageError(f"{field!r} needs a datetime or an ISO 8601 string, got {value!r}")


def _as_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _uuid(value: Any) -> UUID:
    if isinstance(value, UUID):
        return value
    try:
        return UUID(value)
    except (TypeError, ValueError, AttributeError) as exc:
        raise UsageError(f"'id' needs a UUID, got {value!r}") from exc


def _json(field: str, value: Any, depth: int) -> Any:
    """A fresh copy of ``value``, refused unless PostgreSQL's jsonb can hold it."""
    if depth > _MAX_VALUE_DEPTH:
        raise UsageError(f"the filter value on {field!r} is nested too deeply")
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError(f"the filter value on {field!r} must be finite, got {value!r}")
        return value
    if isinstance(value, str):
        if "\x00" in value or not _encodable(value):  # jsonb cannot store NUL
            raise UsageError(
                f"the filter value on {field!r} contains a NUL character or a lone surrogate"
            )
        return value
    if isinstance(value, list | tuple):
        return [_json(field, v, depth + 1) for v in value]
    if isinstance(value, Mapping):
        return {_json_key(field, k): _json(field, v, depth + 1) for k, v in value.items()}
    raise UsageError(
        f"the filter value on {field!r} must be JSON (str, number, bool, None, list, dict), "
        f"got {type(value).__name__}"
    )


def _json_key(field: str, key: Any) -> str:
    if not isinstance(key, str) or "\x00" in key or not _encodable(key):
        raise UsageError(f"the filter value on {field!r} has an invalid object key {key!r}")
    return key
