"""The contract every embedder meets, and the array helpers its implementations share.

I/O-free: nothing here imports a model runtime or an SDK.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from memhub.errors import UsageError

__all__ = ["Embedder", "check_texts", "embed_one", "empty_matrix", "normalise_rows"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of a fixed dimension.

    The dimension and the model name are recorded in the database when it is created;
    an embedder that disagrees with them cannot be used with that database.
    """

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    @property
    def model_name(self) -> str:
        """Stable id of the model, recorded in the database (e.g. ``"all-MiniLM-L6-v2"``)."""
        ...

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts.

        Args:
            texts: The texts, in order. Empty input is allowed.

        Returns:
            A float32 array of shape ``(len(texts), dimension)`` whose rows have unit L2 norm.
        """
        ...

    async def aclose(self) -> None:
        """Release the embedder's resources (sessions, connections)."""
        ...


async def embed_one(embedder: Embedder, text: str) -> npt.NDArray[np.float32]:
    """The vector of one text (a coroutine, so a search can start before it is done)."""
    vectors = await embedder.embed([text])
    first: npt.NDArray[np.float32] = vectors[0]
    return first


def check_texts(texts: Sequence[str]) -> list[str]:
    """Return ``texts`` as a list, refusing a bare string or non-string items.

    Raises:
        UsageError: ``texts`` is a ``str`` (it would be embedded one character at a time)
            or holds something other than strings.
    """
    if isinstance(texts, str):
        raise UsageError("embed() takes a sequence of texts, not a single str; wrap it: [text]")
    items = list(texts)
    for position, item in enumerate(items):
        if not isinstance(item, str):
            raise UsageError(f"texts[{position}] is {type(item).__name__}, expected str")
    return items


def empty_matrix(dimension: int) -> npt.NDArray[np.float32]:
    """The result of embedding no texts: shape ``(0, dimension)``."""
    return np.zeros((0, dimension), dtype=np.float32)


def normalise_rows(matrix: npt.NDArray[np.floating]) -> npt.NDArray[np.float32]:
    """Scale every row to unit L2 norm, as float32; an all-zero row stays zero."""
    values = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(values, axis=1, keepdims=True)
    # sentence-transformers' Normalize clamps the norm the same way, so zero rows do not
    # turn into NaN.
    normalised: npt.NDArray[np.float32] = values / np.maximum(norms, np.float32(1e-12))
    return normalised
