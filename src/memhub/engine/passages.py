"""Texts to vectors, a long text as its passages (:mod:`memhub.embed.passages`).

A text that fits the embedder's window gets its one vector, exactly as before passages
existed. A longer one gets a vector per passage, its memory's own vector being the first
passage's (what the model would have read of the whole text anyway), so one embedding call
covers both and no text is read twice.
"""

from __future__ import annotations

from collections.abc import Sequence

from memhub.embed.base import Embedder
from memhub.embed.passages import PassageSplitter, Span
from memhub.store.records import EmbeddedText, Passage

__all__ = ["embed_texts"]


async def embed_texts(embedder: Embedder, texts: Sequence[str]) -> list[EmbeddedText]:
    """Every text embedded in one call to ``embedder``, long ones as passages."""
    if not texts:
        return []
    cuts: list[list[Span]] = (
        await embedder.passage_spans(texts)
        if isinstance(embedder, PassageSplitter)
        else [[] for _ in texts]
    )
    pieces = [
        [text[span.start : span.end] for span in cut] if cut else [text]
        for text, cut in zip(texts, cuts, strict=True)
    ]
    vectors = await embedder.embed([piece for parts in pieces for piece in parts])
    embedded: list[EmbeddedText] = []
    row = 0
    for cut, parts in zip(cuts, pieces, strict=True):
        passages = tuple(
            Passage(ordinal, span.start, span.end, vectors[row + ordinal])
            for ordinal, span in enumerate(cut)
        )
        embedded.append(EmbeddedText(vectors[row], passages))
        row += len(parts)
    return embedded
