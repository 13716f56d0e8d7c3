"""Where a text longer than an embedder's window is cut into passages (no I/O, no model).

A model reads at most its window of tokens; whatever follows is invisible to the vector. A
longer text is embedded as passages: consecutive windows of the model's length, each cut at
the last sentence end (else the last space) in its second half, and each starting a few
tokens before the previous one ended (``overlap``), at the start of a word, so that a
sentence cut in two is read whole by one of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["PassageSplitter", "Span", "overlap_for", "split_windows"]

_SENTENCE_ENDS = frozenset(".!?;:\n")


@dataclass(frozen=True)
class Span:
    """Characters ``[start, end)`` of a text: one passage."""

    start: int
    end: int


@runtime_checkable
class PassageSplitter(Protocol):
    """An embedder that knows its window and can cut a long text into passages of it.

    Embedders without it (remote ones, the fake one) embed every text whole, as before.
    """

    async def passage_spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Each text's passages; an empty list for a text that fits in one window."""
        ...


def overlap_for(window: int) -> int:
    """Tokens a passage repeats of the one before it: an eighth of the window."""
    return max(1, window // 8)


def split_windows(text: str, offsets: Sequence[tuple[int, int]], window: int) -> list[Span]:
    """The passages of ``text`` given its tokens' character ``offsets`` (in order, special
    tokens left out) and the window in tokens; [] when every token fits in one window."""
    if window < 2:
        raise ValueError(f"a window holds at least 2 tokens, got {window}")
    count = len(offsets)
    if count <= window:
        return []
    overlap = overlap_for(window)
    spans: list[Span] = []
    first = 0
    while True:
        stop = min(first + window, count)
        if stop < count:
            stop = _cut(text, offsets, first + window // 2, stop)
        spans.append(Span(offsets[first][0], offsets[stop - 1][1]))
        if stop >= count:
            return spans
        first = _word_start(offsets, max(stop - overlap, first + 1), stop)


def _cut(text: str, offsets: Sequence[tuple[int, int]], earliest: int, stop: int) -> int:
    """The token index to stop before: after the last sentence end in ``[earliest, stop)``,
    else after the last token followed by a space, else ``stop``."""
    spaced = None
    for index in range(stop - 1, earliest - 1, -1):
        end = offsets[index][1]
        gap = offsets[index + 1][0] > end
        if (gap and text[end - 1] in _SENTENCE_ENDS) or "\n" in text[end : offsets[index + 1][0]]:
            return index + 1
        if gap and spaced is None:
            spaced = index + 1
    return spaced or stop


def _word_start(offsets: Sequence[tuple[int, int]], index: int, stop: int) -> int:
    """The first token at or after ``index`` (before ``stop``) that starts a word."""
    while index < stop and offsets[index][0] <= offsets[index - 1][1]:
        index += 1
    return index
