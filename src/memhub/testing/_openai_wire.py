"""I/O-free builders of OpenAI wire-format bodies for ``ScriptedOpenAIServer``.

Completions, stream chunks, embeddings and crude word-count usage; no sockets here.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import re
import struct
import time
from collections.abc import Iterator, Mapping
from typing import Any

JSONDict = dict[str, Any]
_ARGUMENT_PIECE = 8  # characters of tool arguments per streamed chunk


def tool_call(
    name: str, arguments: Mapping[str, Any] | str, *, content: str | None = None
) -> JSONDict:
    """Build a chat reply in which the assistant calls one tool.

    Args:
        name: The function name.
        arguments: The arguments, as a mapping (encoded to JSON) or a JSON string.
        content: Text sent along with the call, if any.
    """
    return {"content": content, "tool_calls": [{"name": name, "arguments": arguments}]}


def deterministic_embedding(text: str, dimension: int) -> list[float]:
    """Return a unit vector seeded by a hash of ``text``: equal texts get equal vectors.

    The hash is SHA-256, not ``hash()``, so vectors are the same in every process.
    """
    rng = random.Random(hashlib.sha256(text.encode()).digest())
    vector = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


def assistant_message(reply: str | Mapping[str, Any] | None, number: int) -> JSONDict:
    """Turn a scripted text or message dict into a full assistant message."""
    if reply is None or isinstance(reply, str):
        return {"role": "assistant", "content": reply or ""}
    message = {"role": "assistant", "content": None, **reply}
    if message.get("tool_calls"):
        message["tool_calls"] = [
            _tool_call(call, f"call_{number}_{i}") for i, call in enumerate(message["tool_calls"])
        ]
    return message


def _tool_call(call: Mapping[str, Any], default_id: str) -> JSONDict:
    function = call.get("function", call)  # OpenAI's shape or a flat {name, arguments}
    arguments = function.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": call.get("id", default_id),
        "type": "function",
        "function": {"name": function["name"], "arguments": arguments},
    }


def chat_bodies(
    request: JSONDict, message: JSONDict, completion_id: str, model: str
) -> Iterator[JSONDict]:
    """Yield the response body, or each stream chunk if the request asked to stream."""
    message = dict(message)
    finish = message.pop("finish_reason", None)
    finish = finish or ("tool_calls" if message.get("tool_calls") else "stop")
    usage = chat_usage(request, message)
    head = {"id": completion_id, "created": int(time.time()), "model": model}
    if not request.get("stream"):
        choice = {"index": 0, "message": message, "finish_reason": finish, "logprobs": None}
        yield {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
        return
    yield from _stream_chunks(head, message, finish)
    if (request.get("stream_options") or {}).get("include_usage"):
        yield {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}


def _stream_chunks(head: JSONDict, message: JSONDict, finish: str) -> Iterator[JSONDict]:
    def chunk(delta: JSONDict, finish_reason: str | None = None) -> JSONDict:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
        return {**head, "object": "chat.completion.chunk", "choices": [choice]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in re.findall(r"\s*\S+\s*", message.get("content") or ""):
        yield chunk({"content": piece})
    for index, call in enumerate(message.get("tool_calls") or []):
        function = call["function"]
        opening = {"index": index, "id": call["id"], "type": "function"}
        named = {"name": function["name"], "arguments": ""}
        yield chunk({"tool_calls": [{**opening, "function": named}]})
        arguments = function["arguments"]
        for start in range(0, len(arguments), _ARGUMENT_PIECE):
            piece = {"arguments": arguments[start : start + _ARGUMENT_PIECE]}
            yield chunk({"tool_calls": [{"index": index, "function": piece}]})
    yield chunk({}, finish)


def chat_usage(request: JSONDict, message: JSONDict) -> dict[str, int]:
    """Count words as tokens: crude, but deterministic and easy to predict in a test."""
    messages = request.get("messages") or []
    prompt = sum(words(m.get("content")) for m in messages if isinstance(m, dict))
    calls = message.get("tool_calls") or []
    completion = words(message.get("content"))
    completion += sum(words(call["function"]["arguments"]) for call in calls)
    total = prompt + completion
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": total}


def words(value: Any) -> int:
    """Whitespace-separated words in a string or in the text parts of a content list."""
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return sum(words(part.get("text", "")) for part in value if isinstance(part, dict))
    return 0


def embeddings_body(request: JSONDict, default_dimension: int) -> JSONDict:
    """Answer an embeddings request with deterministic vectors, as floats or base64."""
    texts = _embedding_inputs(request.get("input"))
    dimension = int(request.get("dimensions") or default_dimension)
    data: list[JSONDict] = []
    for index, text in enumerate(texts):
        vector: Any = deterministic_embedding(text, dimension)
        if request.get("encoding_format") == "base64":  # the openai SDK's default
            vector = base64.b64encode(struct.pack(f"<{dimension}f", *vector)).decode()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    count = sum(words(text) for text in texts)
    return {
        "object": "list",
        "data": data,
        "model": request.get("model") or "scripted-embedding",
        "usage": {"prompt_tokens": count, "total_tokens": count},
    }


def _embedding_inputs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, int) for v in value):
        return [json.dumps(value)]  # one pre-tokenised input
    if isinstance(value, list):
        return [v if isinstance(v, str) else json.dumps(v) for v in value]
    return []


def error_body(message: str, status: int) -> JSONDict:
    """OpenAI's error shape, so SDKs surface ``message``."""
    return {"error": {"message": message, "type": "scripted_error", "param": None, "code": status}}
