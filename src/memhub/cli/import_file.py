"""Reading an import file: JSONL, a JSON list (Mem0's export) or ``{"results": [...]}``."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from memhub.errors import UsageError
from memhub.memory.importer import ImportRecord

__all__ = ["Unreadable", "parse_record", "read_items"]

_SOURCES = ("messages", "content", "text", "memory")


@dataclass(frozen=True)
class Unreadable:
    """An item that is not JSON at all; ``reason`` says where it broke."""

    reason: str


def parse_record(
    item: object, default_user_id: str | None = None, force_user_id: str | None = None
) -> ImportRecord:
    """Check one item of an import file.

    Accepted keys: ``user_id``/``agent_id``/``run_id`` (else ``default_user_id``), exactly one
    of ``messages`` (Mem0's forms), ``content`` or ``text`` (with ``role``), or ``memory`` (a
    Mem0 / ``memhub export`` item: stored without inference, its ``created_at`` as timestamp);
    ``metadata``, ``timestamp``. Other keys (``id``, ``hash``, ``score``...) are ignored.
    ``force_user_id`` replaces every item's user id (agent and run ids are kept).

    Raises:
        UsageError: The item cannot be imported; the message says why.
    """
    if isinstance(item, Unreadable):
        raise UsageError(item.reason)
    if not isinstance(item, dict):
        raise UsageError(f"expected a JSON object, got {type(item).__name__}")
    sources = [key for key in _SOURCES if item.get(key) is not None]
    if len(sources) != 1:
        found = f" (found {', '.join(sources)})" if sources else ""
        raise UsageError(f"needs exactly one of {', '.join(_SOURCES)}{found}")
    key = sources[0]
    messages: Any = item[key]
    if key != "messages":
        messages = {"role": item.get("role") or "user", "content": item[key]}
    scope = {name: item.get(name) for name in ("user_id", "agent_id", "run_id")}
    if force_user_id is not None:
        scope["user_id"] = force_user_id
    if all(value is None for value in scope.values()):
        if default_user_id is None:
            raise UsageError("names no user_id, agent_id or run_id (pass --user-id)")
        scope["user_id"] = default_user_id
    is_memory = key == "memory"
    timestamp = item.get("timestamp")
    if timestamp is None and is_memory:
        timestamp = item.get("created_at")
    return ImportRecord(
        messages=messages,
        user_id=scope["user_id"],
        agent_id=scope["agent_id"],
        run_id=scope["run_id"],
        metadata=item.get("metadata"),
        timestamp=timestamp,
        infer=False if is_memory else None,
        superseded=is_memory and item.get("valid_to") is not None,
    )


def read_items(path: str | Path) -> tuple[int | None, Iterator[tuple[str, object]]]:
    """How many items ``path`` holds (None for stdin) and the items, each with its place
    (``line N`` or ``item N``)."""
    if str(path) == "-":
        return None, _jsonl_items(sys.stdin)
    with open(path, encoding="utf-8") as probe:
        first = next((line for line in probe if line.strip()), "")
    whole: object = None
    if first.lstrip().startswith(("[", "{")) and not _is_json(first):
        # A pretty-printed document (Mem0's get_all / export dump), not one item per line.
        try:
            whole = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            whole = None
    elif first.lstrip().startswith("["):
        whole = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(whole, dict) and isinstance(whole.get("results"), list):
        whole = whole["results"]
    if isinstance(whole, list):
        items = whole
        return len(items), ((f"item {n}", item) for n, item in enumerate(items, start=1))
    with open(path, encoding="utf-8") as counting:
        total = sum(1 for line in counting if line.strip())
    return total, _file_items(path)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _file_items(path: str | Path) -> Iterator[tuple[str, object]]:
    with open(path, encoding="utf-8") as stream:
        yield from _jsonl_items(stream)


def _jsonl_items(stream: TextIO) -> Iterator[tuple[str, object]]:
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            yield f"line {number}", Unreadable(f"not valid JSON: {exc.msg} (column {exc.colno})")
