"""Plain retrieval baselines over the same turns: BM25 alone, and exact cosine over MiniLM vectors.

They show what each retrieval feature adds: a system should beat both of them, or explain why not.
Both keep everything in memory and build their index per user on :meth:`flush`.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.systems import Hit, MemorySystem, Metadata


class _InMemoryCorpus(MemorySystem):
    """Texts and metadata per user; subclasses index them on flush."""

    def __init__(self) -> None:
        self._texts: dict[str, list[str]] = defaultdict(list)
        self._metadata: dict[str, list[Metadata]] = defaultdict(list)
        self._dirty: set[str] = set()

    def add(
        self, text: str, *, user_id: str, metadata: Metadata, timestamp: datetime | None = None
    ) -> None:
        self._texts[user_id].append(text)
        self._metadata[user_id].append(metadata)
        self._dirty.add(user_id)

    def flush(self) -> None:
        for user_id in sorted(self._dirty):
            self._index(user_id)
        self._dirty.clear()

    def _index(self, user_id: str) -> None:
        raise NotImplementedError

    def _hits(self, user_id: str, order: list[int], scores: list[float]) -> list[Hit]:
        texts, metadata = self._texts[user_id], self._metadata[user_id]
        return [
            Hit(id=f"{user_id}/{i}", text=texts[i], score=s, metadata=metadata[i])
            for i, s in zip(order, scores, strict=True)
        ]


class BM25System(_InMemoryCorpus):
    """Okapi BM25 (``bm25s``, its defaults: k1=1.5, b=0.75) with English stopwords, no stemming."""

    name = "bm25"

    def __init__(self) -> None:
        super().__init__()
        self._indexes: dict[str, Any] = {}

    def _index(self, user_id: str) -> None:
        import bm25s

        index = bm25s.BM25()
        tokens = bm25s.tokenize(self._texts[user_id], stopwords="en", show_progress=False)
        index.index(tokens, show_progress=False)
        self._indexes[user_id] = index

    def search(self, query: str, *, user_id: str, k: int) -> list[Hit]:
        import bm25s

        index = self._indexes.get(user_id)
        if index is None:
            return []
        k = min(k, len(self._texts[user_id]))
        # As strings, not ids: ids from a second tokenize() call would not match the index's vocab.
        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)
        if not tokens[0]:  # a query made only of stopwords
            return []
        order, scores = index.retrieve(tokens, k=k, show_progress=False)
        return self._hits(user_id, order[0].tolist(), scores[0].tolist())


class VectorSystem(_InMemoryCorpus):
    """Exact cosine similarity over all-MiniLM-L6-v2 vectors (sentence-transformers), in numpy."""

    name = "vector"

    def __init__(self) -> None:
        super().__init__()
        self._matrices: dict[str, npt.NDArray[np.float32]] = {}

    def _index(self, user_id: str) -> None:
        from bench.embedding import embed

        self._matrices[user_id] = embed(self._texts[user_id])

    def embed_query(self, query: str) -> bool:
        from bench.embedding import embed

        embed([query])
        return True

    def search(self, query: str, *, user_id: str, k: int) -> list[Hit]:
        from bench.embedding import embed

        matrix = self._matrices.get(user_id)
        if matrix is None:
            return []
        similarities = matrix @ embed([query])[0]
        k = min(k, len(similarities))
        top = np.argpartition(-similarities, k - 1)[:k]
        order = top[np.argsort(-similarities[top])].tolist()
        return self._hits(user_id, order, [float(similarities[i]) for i in order])
