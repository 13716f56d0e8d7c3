"""What a search result returns of a long memory: the sentences that answer the query.

A long assistant message found by a search costs its whole length in the caller's prompt,
though a question is answered by a few of its sentences. Its excerpt is the run of whole
sentences, at most a budget long, that holds the most of the query's content words (as
:func:`memhub.engine.grounding.content_words` reads them, so "moving" meets "moved"), grown
with its neighbours while the budget has room. Nothing is embedded: it is cheap, and the same
query on the same text always returns the same part. A text that shares no word with the query
is returned as it is: nothing says which part answers, so none is cut away.
"""

from __future__ import annotations

import re

from memhub.embed.passages import Span
from memhub.engine.grounding import content_words, fold, stem

__all__ = ["excerpt"]

# After a sentence's end (and its space), or at a line break.
_SENTENCE_BREAK = re.compile(r"(?<=[.!?:;])\s+|\n+")
_WORD = re.compile(r"[^\W_]+")


def excerpt(text: str, query: str, max_chars: int) -> Span | None:
    """The characters of ``text`` to return for ``query``, at most ``max_chars`` long; None
    when the whole fits, or when no sentence shares a content word with the query."""
    if len(text) <= max_chars:
        return None
    wanted = content_words(query)
    spans = _sentences(text)
    found = [wanted & content_words(text[s.start : s.end]) for s in spans]
    best: tuple[int, int, int, int] | None = None  # (words covered, -length, first, last)
    for first in range(len(spans)):
        covered: set[str] = set()
        for last in range(first, len(spans)):
            length = spans[last].end - spans[first].start
            if length > max_chars and last > first:
                break
            covered |= found[last]
            key = (len(covered), -length, first, last)
            if best is None or key[:2] > best[:2]:
                best = key
    if best is None or best[0] == 0:
        return None
    first, last = best[2], best[3]
    # Room left is filled with the sentences around, the next one first.
    while True:
        grown = False
        if last + 1 < len(spans) and spans[last + 1].end - spans[first].start <= max_chars:
            last, grown = last + 1, True
        if first > 0 and spans[last].end - spans[first - 1].start <= max_chars:
            first, grown = first - 1, True
        if not grown:
            break
    start, end = spans[first].start, spans[last].end
    if end - start > max_chars:  # one sentence longer than the budget
        return _around_first_match(text, Span(start, end), wanted, max_chars)
    return Span(start, end)


def _around_first_match(text: str, sentence: Span, wanted: frozenset[str], max_chars: int) -> Span:
    """``max_chars`` of ``sentence`` from a little before its first word the query shares,
    cut at spaces."""
    hit = next(
        (
            sentence.start + w.start()
            for w in _WORD.finditer(text, sentence.start, sentence.end)
            if stem(fold(w.group())) in wanted
        ),
        sentence.start,
    )
    start = max(sentence.start, hit - max_chars // 4)
    if start > sentence.start:
        space = text.find(" ", start, hit)
        start = space + 1 if space >= 0 else hit
    stop = min(sentence.end, start + max_chars)
    if stop < sentence.end:
        space = text.rfind(" ", start, stop + 1)
        stop = space if space > start else stop
    return Span(start, stop)


def _sentences(text: str) -> list[Span]:
    spans: list[Span] = []
    start = 0
    for brk in _SENTENCE_BREAK.finditer(text):
        if brk.start() > start:
            spans.append(Span(start, brk.start()))
        start = brk.end()
    if start < len(text):
        spans.append(Span(start, len(text)))
    return spans
