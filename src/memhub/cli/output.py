"""How listings print: one memory a line, its id first (what ``get`` and ``delete`` take)."""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["print_items"]


def print_items(items: Sequence[Mapping[str, Any]], empty: str) -> int:
    """Print ``items`` (``id  [score]  date  [(until date)]  text``), or ``empty`` on stderr."""
    if not items:
        print(empty, file=sys.stderr)
        return 0
    for item in items:
        print("  ".join(_columns(item)))
    return 0


def _columns(item: Mapping[str, Any]) -> list[str]:
    columns: list[Any] = [item["id"]]
    if item.get("score") is not None:
        columns.append(f"{item['score']:.3f}")
    columns.append(str(item["created_at"])[:10])
    if item.get("valid_to"):
        columns.append(f"(until {str(item['valid_to'])[:10]})")
    columns.append(str(item["memory"]).replace("\n", " "))
    return [str(c) for c in columns]
