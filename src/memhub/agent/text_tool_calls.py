"""Tool calls a model wrote as text in its answer, recognised so they are never the answer.

Small local models (Qwen2.5-Coder-1.5B through llama-cpp-python, issue 25) often answer with
``{"name": "search_memory", "arguments": {...}}`` or ``<tool_call>{...}</tool_call>`` as plain
content instead of the API's ``tool_calls``. Such an answer is read as the tool calls it
spells: the agent runs those it offers and tells the model the others do not exist, and the
text never reaches the user as an answer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from memhub.agent.model import ToolCall
from memhub.llm.parsing import iter_json_values, strip_reasoning

__all__ = ["looks_like_tool_call_start", "tool_calls_in_text"]

_TAGGED = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL | re.IGNORECASE)
_STARTS = ("{", "[", "<tool_call", "```")


def looks_like_tool_call_start(text: str) -> bool:
    """Could ``text`` (an answer so far) be the start of a tool call written as text?"""
    head = strip_reasoning(text).lstrip()
    return not head or any(head.startswith(p) or p.startswith(head) for p in _STARTS)


def tool_calls_in_text(text: str) -> tuple[ToolCall, ...]:
    """The tool calls ``text`` consists of, or ``()`` when it is an ordinary answer.

    Only an answer that is nothing but calls counts (tagged ``<tool_call>`` blocks, or one
    JSON object or list of objects with a ``name`` and ``arguments``/``parameters``, fenced
    or not): prose that quotes JSON stays prose.
    """
    cleaned = strip_reasoning(text).strip()
    if not cleaned:
        return ()
    tagged = _TAGGED.findall(cleaned)
    if tagged and not _TAGGED.sub("", cleaned).strip():
        calls = [_call(value) for block in tagged for value in _first(block)]
    else:
        unfenced = re.sub(r"^```\w*\s*|\s*```$", "", cleaned)
        if unfenced.startswith("{{") and unfenced.endswith("}}"):
            unfenced = unfenced[1:-1]  # a template's braces doubled: {{"name": ...}}}
        if not unfenced.startswith(("{", "[")):
            return ()
        values = list(_first(unfenced))
        if not values or _decoded_length(unfenced) < len(unfenced.rstrip()):
            return ()  # JSON followed by prose: an answer
        value = values[0]
        calls = [_call(v) for v in (value if isinstance(value, list) else [value])]
    if not calls or any(c is None for c in calls):
        return ()
    return tuple(
        ToolCall(f"text-call-{n}", c[0], c[1]) for n, c in enumerate(calls) if c is not None
    )


def _first(text: str) -> list[Any]:
    for value in iter_json_values(text):
        return [value]
    return []


def _decoded_length(text: str) -> int:
    try:
        _, end = json.JSONDecoder(strict=False).raw_decode(text)
    except json.JSONDecodeError:
        return 0
    return end


def _call(value: Any) -> tuple[str, str] | None:
    if not isinstance(value, dict):
        return None
    inner = value.get("function")
    function: dict[str, Any] = inner if isinstance(inner, dict) else value
    name = function.get("name")
    arguments = function.get("arguments", function.get("parameters", {}))
    if (
        not isinstance(name, str)
        or not name
        or set(value) - {"name", "arguments", "parameters", "function", "type", "id"}
    ):
        return None
    if isinstance(arguments, str):
        return name, arguments
    return name, json.dumps(arguments if arguments is not None else {})
