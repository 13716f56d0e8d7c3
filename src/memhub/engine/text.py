"""The text of a stored turn, normalisation for duplicate detection, a token estimate."""

from __future__ import annotations

import hashlib
import math
import unicodedata
from collections.abc import Iterable, Iterator
from typing import TypeVar

from memhub.messages import deserialize
from memhub.store.records import Turn

__all__ = [
    "CHARS_PER_TOKEN",
    "estimate_tokens",
    "memory_hash",
    "normalize_text",
    "turn_text",
    "within_budget",
]

T = TypeVar("T")


def turn_text(turn: Turn) -> str:
    """What was said in a stored turn: its message's content (ARKOS stores the message JSON)."""
    return deserialize(turn.message, turn.role).content


def normalize_text(text: str) -> str:
    """Case-folded, NFKC-normalised text with runs of white space collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def memory_hash(text: str) -> str:
    """Hash of the normalised text: equal hashes in one scope are the same memory."""
    return hashlib.md5(normalize_text(text).encode("utf-8"), usedforsecurity=False).hexdigest()


#: About four characters per token (English text): enough for a budget, no tokenizer.
CHARS_PER_TOKEN = 4


def estimate_tokens(text: str) -> int:
    """``text``'s length in tokens, estimated at :data:`CHARS_PER_TOKEN`."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def within_budget(items: Iterable[tuple[str, T]], max_tokens: int) -> Iterator[T]:
    """The items, in order, whose texts fit together in ``max_tokens`` estimated tokens.

    An item too long for what is left is skipped, and a shorter one after it may still fit.
    """
    left = max_tokens
    for text, item in items:
        cost = estimate_tokens(text)
        if cost <= left:
            left -= cost
            yield item
