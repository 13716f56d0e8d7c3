"""Cutting a long text into passages: the pure rule, then MiniLM's real tokenizer."""

from __future__ import annotations

import itertools
import re

import pytest

from memhub.embed.onnx_minilm import MiniLMEmbedder
from memhub.embed.passages import Span, overlap_for, split_windows


def _words(text: str) -> list[tuple[int, int]]:
    """One token per word (offsets), a stand-in tokenizer for the rule's tests."""
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def test_a_text_that_fits_has_no_passages() -> None:
    text = "one two three"
    assert split_windows(text, _words(text), 3) == []


def test_windows_cover_the_text_overlap_and_end_at_sentences() -> None:
    text = " ".join(f"Sentence {n} has five words." for n in range(40))
    tokens = _words(text)
    spans = split_windows(text, tokens, 32)
    assert spans[0].start == 0 and spans[-1].end == len(text)
    for span, after in itertools.pairwise(spans):
        assert after.start < span.end  # each passage repeats the end of the one before
        assert text[span.end - 1] == "."  # cut after a sentence
        assert text[after.start - 1] == " "  # and starts at a word
    for span in spans:
        inside = [t for t in tokens if span.start <= t[0] and t[1] <= span.end]
        assert len(inside) <= 32
    assert overlap_for(32) == 4


def test_a_text_without_spaces_is_cut_at_the_window() -> None:
    """No word starts inside it, so no overlap either: the next passage starts at the cut."""
    text = "x" * 50
    tokens = [(n, n + 1) for n in range(50)]
    assert split_windows(text, tokens, 20) == [Span(0, 20), Span(20, 40), Span(40, 50)]


def test_a_window_of_one_token_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        split_windows("a b", [(0, 1), (2, 3)], 1)


async def test_minilm_cuts_only_texts_longer_than_its_window() -> None:
    embedder = MiniLMEmbedder()
    long = " ".join(f"Item {n} is a short sentence about the garden." for n in range(80))
    short, long_spans = await embedder.passage_spans(["a short turn", long])
    assert short == []
    assert len(long_spans) >= 3 and long_spans[-1].end == len(long)
    pieces = [long[span.start : span.end] for span in long_spans]
    # every passage fits the window: cut again, it has no passages of its own
    assert await embedder.passage_spans(pieces) == [[] for _ in pieces]
    assert all(p.endswith(".") for p in pieces)
    await embedder.aclose()
