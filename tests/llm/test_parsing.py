"""Tolerant JSON extraction from LLM output: pure functions, no server."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from memhub.errors import ProviderOutputError
from memhub.llm.parsing import extract_json, iter_json_values, parse_structured, strip_reasoning


class Facts(BaseModel):
    facts: list[str]


class Person(BaseModel):
    name: str
    age: int


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<think>hmm</think>answer", "answer"),
        ("<think>\nmulti\nline\n</think>\n\nanswer", "answer"),
        ("<THINK>upper</THINK>answer", "answer"),
        ("<thinking>a</thinking>x<reasoning>b</reasoning>y", "xy"),
        ("reasoning the template opened</think>answer", "answer"),
        ("<think>never closed, answer follows {}", "never closed, answer follows {}"),
        ("no reasoning at all", "no reasoning at all"),
    ],
)
def test_strip_reasoning(text: str, expected: str) -> None:
    assert strip_reasoning(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        '{"facts": ["a"]}',
        '```json\n{"facts": ["a"]}\n```',
        '```\n{"facts": ["a"]}\n```',
        '```JSON {"facts": ["a"]}```',
        'Sure! Here is the JSON:\n{"facts": ["a"]}\nHope this helps.',
        '<think>The user wants {facts}. Let me think.</think>\n{"facts": ["a"]}',
        'I thought about {this} and [that]</think>```json\n{"facts": ["a"]}\n```',
        '<think>unclosed thoughts with {"facts": 1}\n{"facts": ["a"]}',
        'Note {not json} first, then {"facts": ["a"]}',
    ],
)
def test_parse_structured_tolerates_wrapping(text: str) -> None:
    assert parse_structured(text, Facts) == Facts(facts=["a"])


def test_fenced_block_wins_over_braces_in_prose() -> None:
    text = 'Schema was {"facts": ["wrong"]}.\n```json\n{"facts": ["right"]}\n```'
    assert extract_json(text) == {"facts": ["right"]}


def test_strings_with_braces_and_escapes_are_not_split() -> None:
    value = {"text": 'a } tricky { "quoted" \\ string ]', "n": [1, {"x": "}"}]}
    assert extract_json("prefix " + json.dumps(value) + " suffix }") == value


def test_raw_newlines_inside_strings_are_accepted() -> None:
    assert extract_json('{"facts": ["line one\nline two"]}') == {"facts": ["line one\nline two"]}


def test_nested_values_are_yielded_once_at_top_level() -> None:
    assert list(iter_json_values('{"a": {"b": [1, 2]}} and [3]')) == [{"a": {"b": [1, 2]}}, [3]]


def test_first_validating_candidate_wins() -> None:
    text = 'Example: {"name": "Bob"}. Answer: {"name": "Ann", "age": 40}'
    assert parse_structured(text, Person) == Person(name="Ann", age=40)


def test_bare_list_is_wrapped_for_a_single_field_model() -> None:
    assert parse_structured('["a", "b"]', Facts) == Facts(facts=["a", "b"])


def test_bare_list_is_not_wrapped_for_a_multi_field_model() -> None:
    with pytest.raises(ProviderOutputError):
        parse_structured('[{"name": "Ann", "age": 1}]', Person)


def test_no_json_raises_with_raw() -> None:
    with pytest.raises(ProviderOutputError, match="no JSON") as info:
        parse_structured("I cannot help with that.", Facts)
    assert info.value.raw == "I cannot help with that."


def test_truncated_json_raises() -> None:
    with pytest.raises(ProviderOutputError) as info:
        extract_json('{"facts": ["a", "b"')
    assert info.value.raw == '{"facts": ["a", "b"'


def test_validation_error_is_compact_and_names_the_field() -> None:
    with pytest.raises(ProviderOutputError) as info:
        parse_structured('{"name": "Ann", "age": "old"}', Person)
    message = str(info.value)
    assert "does not match Person" in message
    assert "age: Input should be a valid integer" in message
    assert "https://" not in message  # no pydantic doc links in a repair prompt
    assert info.value.raw == '{"name": "Ann", "age": "old"}'


@pytest.mark.parametrize("garbage", ["{[" * 50_000, "[" * 100_000])
def test_pathological_garbage_raises_provider_output_error(garbage: str) -> None:
    with pytest.raises(ProviderOutputError):
        extract_json(garbage)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=5)
prose = st.text(alphabet=st.characters(blacklist_characters="{}[]<>`"), max_size=40)


@given(objects, prose, prose)
def test_object_is_found_in_any_prose(value: dict[str, Any], before: str, after: str) -> None:
    assert extract_json(before + json.dumps(value) + after) == value


@given(objects, prose, st.booleans())
@example({"": [], "```": None}, "", False)  # a key holding ```, where the fence pattern ends
def test_object_is_found_after_reasoning_and_in_fences(
    value: dict[str, Any], thought: str, indent: bool
) -> None:
    body = json.dumps(value, indent=2 if indent else None)
    text = f"<think>{thought}</think>\n```json\n{body}\n```"
    assert extract_json(text) == value
