"""Filters: parsing Mem0's language, the Python evaluation, and the case table SQL shares."""

from __future__ import annotations

import ast
import inspect
from datetime import UTC, date, datetime, timedelta, timezone
from typing import Any
from uuid import UUID

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memhub.filters
from memhub.errors import UsageError
from memhub.filters import (
    COLUMN_FIELDS,
    MAX_CONDITIONS,
    OPERATORS,
    TIMESTAMP_FIELDS,
    And,
    Condition,
    Filter,
    Not,
    Or,
    parse_filters,
)
from memhub.store.inmemory.filters import matches

# -- the shared table: rows and cases (tests/store/test_pg_filters.py runs it on PostgreSQL) --
BASE = datetime(2024, 1, 1, tzinfo=UTC)


def day(n: int) -> datetime:
    return BASE + timedelta(days=n)


def _row(n: int, metadata: dict[str, Any], user: str | None, **columns: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": UUID(int=n),
        "user_id": user,
        "agent_id": None,
        "run_id": None,
        "memory_type": None,
        "created_at": day(n),
        "valid_from": day(n),
        "updated_at": None,
        "valid_to": None,
        "metadata": metadata,
    }
    return row | columns


ROWS: list[dict[str, Any]] = [
    _row(1, {"score": 5, "category": "work", "tags": ["a", "b"]}, "alice", memory_type="fact"),
    _row(
        2,
        {"score": 7.5, "category": "Work", "tags": ["b"]},
        "alice",
        memory_type="fact",
        updated_at=day(20),
    ),
    _row(3, {"score": "5", "category": "home"}, "alice", memory_type="preference"),
    _row(4, {"score": True, "tags": "a"}, "bob", role="user"),  # an episode
    _row(5, {"score": None, "tags": []}, "bob", valid_to=day(10)),
    _row(6, {"score": [5], "tags": ["a", 1, True]}, "bob"),
    _row(7, {}, "bob", role="user"),
    _row(
        8,
        {"score": 10, "nested": {"level": 2, "deep": {"x": "y"}}},
        None,
        agent_id="planner",
        memory_type="procedure",
    ),
    _row(
        9, {"score": -1, "nested": {"level": 3}}, None, agent_id="planner", memory_type="procedure"
    ),
    _row(10, {"nested": 3}, None, agent_id="planner", run_id="r1", role="assistant"),
    _row(11, {"nested": [{"level": 2}]}, "carol"),
    _row(12, {"nested": {"level": "2"}}, "carol"),
    _row(13, {"arr": [10, 20]}, "carol"),
    _row(14, {"arr": {"0": 10}}, "carol"),
    _row(15, {"name": "Alice Smith"}, "carol", updated_at=day(25)),
    _row(16, {"name": "ALICE"}, "dave"),
    _row(17, {"name": "élan"}, "dave"),
    _row(18, {"name": "Élan"}, "dave"),
    _row(19, {'we"ird': 1, "back\\slash": 2, "ünï": "x"}, "dave"),
    _row(20, {"flag": False}, "dave"),
    _row(21, {"flag": True}, "erin"),
    _row(22, {"flag": 1}, "erin"),
    _row(23, {"score": 0}, "erin"),
    _row(24, {"score": 5.0}, "erin"),
    _row(25, {"obj": {"a": 1}}, "erin", agent_id="helper", run_id="r1"),
    _row(26, {"obj": {"a": 1, "b": 2}}, None, run_id="r2"),
    _row(27, {"obj": {}}, None, run_id="r2", valid_to=day(40)),
    _row(28, {"tags": [["a"], "c"]}, "frank"),
    _row(29, {"score": 1e20}, "frank"),
    _row(30, {"category": "work", "score": 6, "tags": ["A"]}, "frank", memory_type="fact"),
]
ALL = frozenset(range(1, len(ROWS) + 1))


def but(*excluded: int) -> frozenset[int]:
    return ALL - set(excluded)


# (filter as a caller writes it, the row numbers it selects)
CASES: list[tuple[dict[str, Any], frozenset[int] | set[int]]] = [
    # metadata equality: exact JSON, booleans are not numbers, lists equal only lists
    ({"category": "work"}, {1, 30}),
    ({"category": "Work"}, {2}),
    ({"score": 5}, {1, 24}),
    ({"score": "5"}, {3}),
    ({"score": True}, {4}),
    ({"score": None}, {5}),
    ({"score": [5]}, {6}),
    ({"tags": "a"}, {4}),
    ({"tags": ["b"]}, {2}),
    ({"tags": []}, {5}),
    ({"nested.level": 2}, {8}),
    ({"nested.deep.x": "y"}, {8}),
    ({"arr.0": 10}, {14}),
    ({"obj": {"eq": {"a": 1}}}, {25}),
    ({'we"ird': 1, "back\\slash": 2}, {19}),
    ({"ünï": "x"}, {19}),
    # kind: derived from the role column (episodes have one, facts none)
    ({"kind": "episode"}, {4, 7, 10}),
    ({"kind": "fact"}, but(4, 7, 10)),
    ({"kind": {"ne": "fact"}}, {4, 7, 10}),
    ({"kind": {"in": ["fact", "episode"]}}, ALL),
    ({"kind": {"nin": ["episode"]}}, but(4, 7, 10)),
    ({"kind": "*"}, ALL),
    ({"kind": "fact", "user_id": "bob"}, {5, 6}),
    ({"NOT": [{"kind": "fact"}]}, {4, 7, 10}),
    ({"role": "user"}, {4, 7}),
    # ne / nin hold where the key is missing
    ({"category": {"ne": "work"}}, but(1, 30)),
    ({"score": {"nin": [5, "5", None]}}, but(1, 3, 5, 24)),
    ({"flag": {"ne": False}}, but(20)),
    # comparisons only within a type
    ({"score": {"gt": 5}}, {2, 8, 29, 30}),
    ({"score": {"gte": 5, "lt": 10}}, {1, 2, 24, 30}),
    ({"score": {"lte": 0}}, {9, 23}),
    ({"score": {"gte": "5"}}, {3}),
    ({"name": {"lt": "B"}}, {15, 16}),
    ({"flag": {"gt": False}}, {21}),
    ({"nested": {"gt": 1}}, {10}),
    ({"score": {"gt": 1e19}}, {29}),
    # in
    ({"category": {"in": ["home", "Work"]}}, {2, 3}),
    ({"score": {"in": [True, 0]}}, {4, 23}),
    ({"tags": {"in": [["a", "b"], "a"]}}, {1, 4}),
    ({"score": {"in": []}}, set()),
    # contains / icontains
    ({"tags": {"contains": "a"}}, {1, 4, 6}),
    ({"tags": {"contains": 1}}, {6}),
    ({"tags": {"contains": True}}, {6}),
    ({"tags": {"contains": ["a"]}}, {28}),
    ({"name": {"contains": "lan"}}, {17, 18}),
    ({"name": {"icontains": "alice"}}, {15, 16}),
    ({"name": {"icontains": "ÉLAN"}}, {18}),  # ASCII case only
    ({"category": {"icontains": "WORK"}}, {1, 2, 30}),
    # presence
    ({"score": "*"}, {1, 2, 3, 4, 5, 6, 8, 9, 23, 24, 29, 30}),
    ({"nested.level": "*"}, {8, 9, 12}),
    ({"NOT": [{"tags": "*"}]}, but(1, 2, 4, 5, 6, 28, 30)),
    # columns
    ({"user_id": "alice"}, {1, 2, 3}),
    ({"user_id": None}, {8, 9, 10, 26, 27}),
    ({"user_id": {"ne": "alice"}}, but(1, 2, 3)),
    ({"agent_id": "*"}, {8, 9, 10, 25}),
    ({"user_id": {"in": ["bob", None]}}, {4, 5, 6, 7, 8, 9, 10, 26, 27}),
    ({"user_id": {"gt": "dave"}}, {21, 22, 23, 24, 25, 28, 29, 30}),
    ({"user_id": {"icontains": "AR"}}, {11, 12, 13, 14, 15}),
    ({"memory_type": {"nin": ["fact"]}}, but(1, 2, 30)),
    ({"run_id": {"contains": "r"}}, {10, 25, 26, 27}),
    ({"user_id": 5}, set()),
    ({"id": str(UUID(int=7))}, {7}),
    ({"id": {"in": [UUID(int=1), UUID(int=2)]}}, {1, 2}),
    # timestamps
    ({"created_at": {"gte": "2024-01-29"}}, {28, 29, 30}),
    ({"created_at": {"lt": datetime(2024, 1, 3, tzinfo=UTC)}}, {1}),
    ({"created_at": {"gt": "2024-01-04T01:00:00+02:00"}}, but(1, 2)),
    ({"valid_to": None}, but(5, 27)),
    ({"valid_to": "*"}, {5, 27}),
    ({"updated_at": {"gt": "2024-01-21"}}, {15}),
    ({"valid_to": {"ne": "2024-01-11"}}, but(5)),
    # logic
    ({"OR": [{"user_id": "alice"}, {"score": {"gt": 9}}]}, {1, 2, 3, 8, 29}),
    ({"AND": [{"category": "work"}, {"score": {"lt": 6}}]}, {1}),
    ({"NOT": [{"user_id": "alice"}, {"user_id": "bob"}]}, but(1, 2, 3, 4, 5, 6, 7)),
    (
        {"$or": [{"$and": [{"user_id": "erin"}, {"score": "*"}]}, {"$not": [{"obj": "*"}]}]},
        but(25, 26, 27),
    ),
    ({"and": []}, ALL),
    ({"or": []}, set()),
    ({"user_id": "erin", "OR": [{"flag": True}, {"obj.a": 1}]}, {21, 25}),
    ({"NOT": [{"nested": {"gt": 1}}]}, but(10)),
    ({"score": {"$gte": 5, "$ne": 5}}, {2, 8, 29, 30}),
]


def case_id(case: tuple[dict[str, Any], Any]) -> str:
    return repr(case[0])


def python_selection(f: Filter | None, rows: list[dict[str, Any]]) -> set[int]:
    return {r["id"].int for r in rows if f is None or matches(f, r)}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_case_table_in_python(case: tuple[dict[str, Any], set[int]]) -> None:
    raw, expected = case
    assert python_selection(parse_filters(raw), ROWS) == set(expected)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_not_selects_the_complement(case: tuple[dict[str, Any], set[int]]) -> None:
    raw, expected = case
    f = parse_filters(raw)
    assert f is not None
    assert python_selection(Not(f), ROWS) == ALL - set(expected)


# -- parsing -------------------------------------------------------------------------------
def test_nothing_to_filter_is_none() -> None:
    assert parse_filters(None) is None
    assert parse_filters({}) is None


@pytest.mark.parametrize("op", OPERATORS)
def test_every_operator_parses(op: str) -> None:
    value: Any = ["x"] if op in ("in", "nin") else "x"
    expected = ("x",) if op in ("in", "nin") else "x"
    assert parse_filters({"k": {op: value}}) == Condition("k", op, expected)
    assert parse_filters({"k": {"$" + op: value}}) == Condition("k", op, expected)


def test_shorthands() -> None:
    assert parse_filters({"k": 3}) == Condition("k", "eq", 3)
    assert parse_filters({"k": [1, 2]}) == Condition("k", "eq", [1, 2])
    assert parse_filters({"k": "*"}) == Condition("k", "exists", True)
    assert parse_filters({"k": {"eq": "*"}}) == Condition("k", "eq", "*")
    assert parse_filters({"a": 1, "b": 2}) == And(
        (Condition("a", "eq", 1), Condition("b", "eq", 2))
    )
    assert parse_filters({"age": {"gte": 18, "lt": 65}}) == And(
        (Condition("age", "gte", 18), Condition("age", "lt", 65))
    )


@pytest.mark.parametrize("word", ["AND", "and", "$and", "$AND"])
def test_and_spellings(word: str) -> None:
    assert parse_filters({word: [{"a": 1}, {"b": 2}]}) == And(
        (Condition("a", "eq", 1), Condition("b", "eq", 2))
    )


@pytest.mark.parametrize("word", ["OR", "or", "$or"])
def test_or_spellings(word: str) -> None:
    assert parse_filters({word: [{"a": 1}, {"b": 2, "c": 3}]}) == Or(
        (Condition("a", "eq", 1), And((Condition("b", "eq", 2), Condition("c", "eq", 3))))
    )


@pytest.mark.parametrize("word", ["NOT", "not", "$not"])
def test_not_of_several_means_none_of_them(word: str) -> None:
    a, b = Condition("a", "eq", 1), Condition("b", "eq", 2)
    assert parse_filters({word: [{"a": 1}]}) == Not(a)
    assert parse_filters({word: [{"a": 1}, {"b": 2}]}) == Not(Or((a, b)))


def test_nesting_and_mixing() -> None:
    f = parse_filters({"user_id": "u", "OR": [{"NOT": [{"AND": [{"x": {"in": [1]}}]}]}]})
    assert f == And(
        (Condition("user_id", "eq", "u"), Or((Not(And((Condition("x", "in", (1,)),))),)))
    )


def test_timestamps_become_aware_utc() -> None:
    plus2 = timezone(timedelta(hours=2))
    cases: list[tuple[Any, datetime]] = [
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        ("2024-05-01T10:00:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("2024-05-01T10:00:00+02:00", datetime(2024, 5, 1, 8, tzinfo=UTC)),
        (datetime(2024, 5, 1, 10), datetime(2024, 5, 1, 10, tzinfo=UTC)),
        (datetime(2024, 5, 1, 10, tzinfo=plus2), datetime(2024, 5, 1, 8, tzinfo=UTC)),
        (date(2024, 5, 1), datetime(2024, 5, 1, tzinfo=UTC)),
    ]
    for raw, expected in cases:
        f = parse_filters({"created_at": {"gt": raw}})
        assert isinstance(f, Condition)
        assert f.value == expected and f.value.tzinfo is UTC
    f = parse_filters({"valid_to": {"in": ["2024-05-01", None]}})
    assert f == Condition("valid_to", "in", (datetime(2024, 5, 1, tzinfo=UTC), None))


def test_ids_become_uuids() -> None:
    u = UUID(int=42)
    assert parse_filters({"id": str(u)}) == Condition("id", "eq", u)
    assert parse_filters({"id": {"nin": [u]}}) == Condition("id", "nin", (u,))


def test_values_are_copied() -> None:
    value = {"a": [1, 2]}
    f = parse_filters({"k": {"eq": value}})
    value["a"].append(3)
    assert f == Condition("k", "eq", {"a": [1, 2]})


@pytest.mark.parametrize(
    "raw",
    [
        {"kind": "facts"},
        {"kind": None},
        {"kind": {"in": ["fact", "turn"]}},
        {"kind": {"gt": "episode"}},
        {"kind": {"contains": "fact"}},
    ],
)
def test_kind_takes_only_episode_or_fact(raw: dict[str, Any]) -> None:
    """A misspelt kind would match nothing and look like an empty memory: it is refused."""
    with pytest.raises(UsageError, match="kind"):
        parse_filters(raw)


def test_field_sets() -> None:
    assert {"id", "user_id", "agent_id", "run_id", "memory_type", "role"} == COLUMN_FIELDS
    assert {"created_at", "updated_at", "valid_from", "valid_to"} == TIMESTAMP_FIELDS


def _nested(depth: int) -> dict[str, Any]:
    raw: dict[str, Any] = {"k": 1}
    for _ in range(depth - 1):
        raw = {"AND": [raw]}
    return raw


def test_ten_levels_are_allowed() -> None:
    assert parse_filters(_nested(10)) is not None
    assert parse_filters({f"k{i}": i for i in range(MAX_CONDITIONS)}) is not None


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"k": {"like": "x"}},
            r"unknown operator 'like' on 'k'; allowed operators: eq, ne, gt, gte, lt, lte, in, nin, contains, icontains",
        ),
        ({"address": {"city": "Paris"}}, r"dotted field such as 'address\.city'"),
        ({"k": {}}, r"filter on 'k' has no operator; allowed operators: eq"),
        ({"AND": {"a": 1}}, r"'AND' needs a list of filter dicts, got dict"),
        ({"or": "x"}, r"'or' needs a list of filter dicts, got str"),
        ({"NOT": {"a": 1}}, r"'NOT' needs a list of filter dicts, got dict"),
        ({"OR": [1]}, r"'OR' needs a list of filter dicts, got an item 1"),
        ({"": 1}, r"filter field names must be non-empty strings, got ''"),
        ({"a..b": 1}, r"invalid filter field 'a\.\.b'"),
        ({"a.": 1}, r"invalid filter field 'a\.'"),
        ({"k": {"in": "abc"}}, r"'in' on 'k' needs a list, got str"),
        ({"k": {"nin": 5}}, r"'nin' on 'k' needs a list, got int"),
        (
            {"k": {"gt": None}},
            r"'gt' on 'k' needs a single number, string, boolean or timestamp, got None",
        ),
        ({"k": {"lte": [1]}}, r"'lte' on 'k' needs a single number"),
        ({"k": {"gte": {"a": 1}}}, r"'gte' on 'k' needs a single number"),
        ({"k": {"icontains": 3}}, r"'icontains' on 'k' needs a string, got 3"),
        ({"created_at": {"contains": "2024"}}, r"'contains' is not supported on 'created_at'"),
        ({"id": {"icontains": "ab"}}, r"'icontains' is not supported on 'id'"),
        (
            {"created_at": {"gt": "yesterday"}},
            r"'created_at' needs an ISO 8601 timestamp, got 'yesterday'",
        ),
        ({"valid_to": 5}, r"'valid_to' needs a datetime or an ISO 8601 string, got 5"),
        ({"id": "nope"}, r"'id' needs a UUID, got 'nope'"),
        ({"k": float("nan")}, r"must be finite"),
        ({"k": "a\x00b"}, r"contains a NUL character"),
        ({"k": {"eq": {1: 2}}}, r"has an invalid object key 1"),
        ({"k": object()}, r"must be JSON \(str, number, bool, None, list, dict\), got object"),
        ({"k": datetime(2024, 1, 1)}, r"must be JSON .* got datetime"),
        ({1: 2}, r"filter keys must be strings, got 1"),
        (_nested(11), r"nested deeper than 10 levels"),
        ({f"k{i}": i for i in range(MAX_CONDITIONS + 1)}, r"more than 100 conditions"),
        ({"OR": [{"k": {"gt": 1, "lt": 9}}] * 51}, r"more than 100 conditions"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_bad_filters_raise_usage_error(raw: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_filters(raw)


def test_not_a_dict() -> None:
    with pytest.raises(UsageError, match="filters must be a dict, got list"):
        parse_filters([{"a": 1}])  # type: ignore[arg-type]


def test_the_vocabulary_layer_imports_nothing_above_it() -> None:
    tree = ast.parse(inspect.getsource(memhub.filters))
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    } | {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    assert {m for m in imported if m.startswith("memhub")} == {"memhub.errors"}


# -- properties ----------------------------------------------------------------------------
# Small pools so random filters often hit random data; shared with the PostgreSQL property test.
TEXT = st.text(alphabet="aAbé*", max_size=3)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2, 2),
    st.sampled_from([0.0, 0.5, 1.0, -1.5, 1e20]),
    TEXT,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xy"), inner, max_size=2)
    ),
    max_leaves=5,
)
METADATA = st.dictionaries(st.sampled_from(["a", "b", "n"]), JSON, max_size=3)
USERS = st.sampled_from([None, "a", "ab", "B"])
FIELDS = st.sampled_from(["a", "b", "n", "n.x", "n.y", "user_id", "memory_type"])


@st.composite
def records(draw: st.DrawFn, n: int = 0) -> dict[str, Any]:
    return {
        "id": UUID(int=n),
        "user_id": draw(USERS),
        "memory_type": draw(USERS),
        "metadata": draw(METADATA),
    }


@st.composite
def raw_conditions(draw: st.DrawFn) -> dict[str, Any]:
    field = draw(FIELDS)
    op = draw(st.sampled_from([*OPERATORS, "shorthand", "*"]))
    if op == "*":
        return {field: "*"}
    if op == "shorthand":
        return {field: draw(JSON.filter(lambda v: not isinstance(v, dict) and v != "*"))}
    if op in ("in", "nin"):
        value: Any = draw(st.lists(JSON, max_size=3))
    elif op in ("gt", "gte", "lt", "lte"):
        value = draw(SCALARS.filter(lambda v: v is not None))
    elif op == "icontains":
        value = draw(TEXT)
    else:
        value = draw(JSON)
    return {field: {op: value}}


def _combine(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    lists = st.lists(children, max_size=3)
    return st.one_of(
        lists.map(lambda parts: {"AND": parts}),
        lists.map(lambda parts: {"OR": parts}),
        lists.map(lambda parts: {"NOT": parts}),
        st.tuples(children, children).map(lambda pair: {"AND": list(pair), **pair[0]}),
    )


RAW_FILTERS = st.recursive(raw_conditions(), _combine, max_leaves=6)


def parsed(raw: dict[str, Any]) -> Filter:
    f = parse_filters(raw)
    return And(()) if f is None else f


@given(raw=RAW_FILTERS, record=records())
def test_not_negates(raw: dict[str, Any], record: dict[str, Any]) -> None:
    f = parsed(raw)
    assert matches(Not(f), record) is (not matches(f, record))


@given(a=RAW_FILTERS, b=RAW_FILTERS, record=records())
def test_and_or_laws(a: dict[str, Any], b: dict[str, Any], record: dict[str, Any]) -> None:
    fa, fb = parsed(a), parsed(b)
    ma, mb = matches(fa, record), matches(fb, record)
    assert matches(And((fa, fb)), record) is (ma and mb)
    assert matches(Or((fa, fb)), record) is (ma or mb)
    assert matches(Not(And((fa, fb))), record) is matches(Or((Not(fa), Not(fb))), record)
    assert matches(And(()), record) and not matches(Or(()), record)


@given(field=FIELDS, values=st.lists(JSON, max_size=4), record=records())
def test_in_is_an_or_of_eq(field: str, values: list[Any], record: dict[str, Any]) -> None:
    as_in = matches(parsed({field: {"in": values}}), record)
    as_or = matches(parsed({"OR": [{field: {"eq": v}} for v in values]}), record)
    assert as_in is as_or
    assert matches(parsed({field: {"nin": values}}), record) is (not as_in)


@given(field=FIELDS, value=JSON, record=records())
def test_ne_is_not_eq(field: str, value: Any, record: dict[str, Any]) -> None:
    eq = matches(parsed({field: {"eq": value}}), record)
    assert matches(parsed({field: {"ne": value}}), record) is (not eq)


@given(field=FIELDS, value=SCALARS.filter(lambda v: v is not None), record=records())
def test_comparisons_partition_comparable_values(
    field: str, value: Any, record: dict[str, Any]
) -> None:
    lt, eq, gt = (matches(parsed({field: {op: value}}), record) for op in ("lt", "eq", "gt"))
    gte, lte = (matches(parsed({field: {op: value}}), record) for op in ("gte", "lte"))
    assert sum((lt, eq, gt)) <= 1
    assert gte is (gt or eq) and lte is (lt or eq)


_ANY_JSON_KEY = st.one_of(st.text(max_size=4), st.sampled_from(["AND", "or", "$not", "*"]))
_ANYTHING = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_ANY_JSON_KEY, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300)
@given(raw=st.dictionaries(_ANY_JSON_KEY, _ANYTHING, max_size=3), record=records())
def test_any_input_parses_or_raises_usage_error(
    raw: dict[str, Any], record: dict[str, Any]
) -> None:
    try:
        f = parse_filters(raw)
    except UsageError:
        return
    if f is not None:
        matches(f, record)  # and whatever parses evaluates without raising
