"""``FakeEmbedder``: deterministic vectors without a model, for tests where no real one can run."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memhub.embed.base import check_texts, empty_matrix, normalise_rows

__all__ = ["FakeEmbedder"]

_WORD = re.compile(r"\w+")


class FakeEmbedder:
    """An :class:`~memhub.embed.Embedder` whose vectors come from hashing words.

    Every word (lower-cased) gets a fixed pseudo-random direction seeded by its SHA-256, and a
    text's vector is the unit-length sum of its words' directions. So the same text gets the
    same vector in every process, and texts sharing words are closer than texts sharing none;
    it knows nothing of meaning ("car" is no closer to "automobile" than to "tea"). Prefer the
    real default embedder, which runs offline; use this one to make embedding fail on demand,
    or where loading a model is not wanted.

    Example:
        >>> import asyncio
        >>> fake = FakeEmbedder(dimension=8)
        >>> vectors = asyncio.run(fake.embed(["I like tea", "tea time", "I like tea"]))
        >>> bool((vectors[0] == vectors[2]).all()), vectors.shape
        (True, (3, 8))

    Args:
        dimension: Length of the vectors.
        model_name: The name recorded in the database; a database made with one name refuses
            an embedder of another.

    Attributes:
        calls: How many times :meth:`embed` was called (failed calls included).
        texts: Every text embedded, in order.
        error: When set, :meth:`embed` raises it (a server outage, say) instead of answering.
    """

    def __init__(self, dimension: int = 384, model_name: str = "memhub-fake-embedder") -> None:
        if dimension < 1:
            raise ValueError(f"dimension must be positive, got {dimension}")
        self._dimension = dimension
        self._model_name = model_name
        self.calls = 0
        self.texts: list[str] = []
        self.error: Exception | None = None

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        return self._dimension

    @property
    def model_name(self) -> str:
        """The name recorded in the database."""
        return self._model_name

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit vectors of ``texts`` (a text without words gets a zero vector).

        Raises:
            UsageError: ``texts`` is a bare string or holds something else than strings.
            Exception: Whatever :attr:`error` holds, when it is set.
        """
        items = check_texts(texts)
        self.calls += 1
        if self.error is not None:
            raise self.error
        self.texts.extend(items)
        if not items:
            return empty_matrix(self._dimension)
        return normalise_rows(np.stack([self._summed(text) for text in items]))

    async def aclose(self) -> None:
        """Nothing to release."""
        return None

    def _summed(self, text: str) -> npt.NDArray[np.float64]:
        total = np.zeros(self._dimension)
        for word in _WORD.findall(text.lower()):
            seed = int.from_bytes(hashlib.sha256(word.encode()).digest()[:8], "big")
            total += np.random.default_rng(seed).standard_normal(self._dimension)
        return total
