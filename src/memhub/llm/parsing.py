"""Tolerant extraction of a JSON answer from an LLM's text, validated by a pydantic model.

Pure functions, no I/O: reasoning blocks, code fences and surrounding prose are tolerated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from memhub.errors import ProviderOutputError

__all__ = [
    "describe_validation_error",
    "extract_json",
    "iter_json_values",
    "parse_structured",
    "strip_reasoning",
]

T = TypeVar("T", bound=BaseModel)

# Reasoning models (DeepSeek-R1, Qwen3, QwQ, gpt-oss via some servers) wrap their chain of
# thought in one of these tags before the answer.
_REASONING_TAGS = ("think", "thinking", "reasoning")
_TAGS = "|".join(_REASONING_TAGS)
_CLOSED_BLOCK = re.compile(rf"<({_TAGS})>.*?</\1>", flags=re.DOTALL | re.IGNORECASE)
_CLOSING_TAG = re.compile(rf"</(?:{_TAGS})>", flags=re.IGNORECASE)
_ANY_TAG = re.compile(rf"</?(?:{_TAGS})>", flags=re.IGNORECASE)
_UP_TO_CLOSING_TAG = re.compile(rf"^.*?</(?:{_TAGS})>", flags=re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*(?:json\w*)?[ \t]*\r?\n?(.*?)```", flags=re.DOTALL | re.IGNORECASE)

# strict=False accepts raw newlines and tabs inside strings, which small models emit often.
_DECODER = json.JSONDecoder(strict=False)
# Bounds the quadratic worst case of scanning long garbage full of braces.
_MAX_START_POSITIONS = 2000
_RAW_EXCERPT = 200


def strip_reasoning(text: str) -> str:
    """Remove reasoning blocks such as ``<think>...</think>`` from a model's output.

    A closing tag without an opening one (chat templates that put ``<think>`` in the prompt)
    drops everything before it; an opening tag that is never closed (a truncated or sloppy
    answer) only loses the tag itself, so the answer after it can still be found.

    Args:
        text: The raw completion text.

    Returns:
        The text without reasoning, stripped of surrounding whitespace.
    """
    text = _CLOSED_BLOCK.sub("", text)
    if _CLOSING_TAG.search(text):
        text = _UP_TO_CLOSING_TAG.sub("", text, count=1)
    return _ANY_TAG.sub("", text).strip()


def iter_json_values(text: str) -> Iterator[Any]:
    """Yield every top-level JSON object or array found in ``text``, fenced blocks first.

    Reasoning is stripped first. Contents of code fences come before a scan of the whole
    text, so a fenced answer wins over braces in the prose around it.

    Args:
        text: The raw completion text.

    Yields:
        Decoded JSON values (dicts or lists), in order of preference.
    """
    cleaned = strip_reasoning(text)
    for fence in _FENCE.finditer(cleaned):
        # Values that start inside the fence are decoded against the whole text: a string in
        # the JSON may itself hold ``` (which is where the fence pattern thinks it ends).
        yield from _scan(cleaned, fence.start(1), fence.end(1))
    yield from _scan(cleaned)


def _scan(text: str, position: int = 0, stop: int | None = None) -> Iterator[Any]:
    """Decoded values starting at or after ``position`` (and before ``stop``)."""
    starts = 0
    while starts < _MAX_START_POSITIONS:
        start = _next_opening(text, position)
        if start < 0 or (stop is not None and start >= stop):
            return
        starts += 1
        try:
            value, end = _DECODER.raw_decode(text, start)
        except (json.JSONDecodeError, RecursionError):  # RecursionError: absurd nesting
            position = start + 1
            continue
        yield value
        position = end


def _next_opening(text: str, position: int) -> int:
    candidates = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
    return min(candidates, default=-1)


def extract_json(text: str) -> Any:
    """Return the first JSON object or array in ``text``.

    Args:
        text: The raw completion text.

    Returns:
        The decoded value.

    Raises:
        ProviderOutputError: No balanced, decodable JSON object or array was found.
    """
    for value in iter_json_values(text):
        return value
    raise ProviderOutputError(
        f"the LLM output contains no JSON object or array: {_excerpt(text)!r}", raw=text
    )


def parse_structured(text: str, response_model: type[T]) -> T:
    """Extract JSON from ``text`` and validate it as ``response_model``.

    Candidates are tried in order and the first that validates wins, so a stray ``{...}``
    in prose does not hide the real answer. A bare array is accepted for a model with a
    single field (``["a", "b"]`` for ``{"facts": ["a", "b"]}``), a common slip of small models.

    Args:
        text: The raw completion text.
        response_model: The pydantic model the answer must satisfy.

    Returns:
        The validated model instance.

    Raises:
        ProviderOutputError: No JSON was found, or none of it validates; the message says
            why (suitable to show the model in a repair prompt) and ``raw`` holds ``text``.
    """
    first_error: ValidationError | None = None
    for value in iter_json_values(text):
        for candidate in _shapes(value, response_model):
            try:
                return response_model.model_validate(candidate)
            except ValidationError as exc:
                first_error = first_error or exc
    if first_error is None:
        raise ProviderOutputError(
            f"the LLM output contains no JSON object: {_excerpt(text)!r}", raw=text
        )
    reason = describe_validation_error(first_error)
    raise ProviderOutputError(
        f"the LLM output does not match {response_model.__name__}: {reason}", raw=text
    ) from first_error


def _shapes(value: Any, response_model: type[BaseModel]) -> Iterator[Any]:
    yield value
    fields = list(response_model.model_fields)
    if isinstance(value, list) and len(fields) == 1:
        yield {fields[0]: value}


def describe_validation_error(error: ValidationError, *, limit: int = 5) -> str:
    """Summarise a pydantic error compactly, one ``location: message`` per problem.

    Args:
        error: The validation error.
        limit: How many problems to list before summarising the rest.

    Returns:
        A one-line description without pydantic's documentation links.
    """
    problems = [
        f"{'.'.join(str(part) for part in item['loc']) or '(root)'}: {item['msg']}"
        for item in error.errors(include_url=False)
    ]
    shown = "; ".join(problems[:limit])
    if len(problems) > limit:
        shown += f"; and {len(problems) - limit} more"
    return shown


def _excerpt(text: str) -> str:
    return text if len(text) <= _RAW_EXCERPT else text[:_RAW_EXCERPT] + "..."
