"""``memhub.testing.FakeEmbedder`` does what its docstring says."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import memhub.testing.fake_embedder
from memhub.embed import Embedder
from memhub.errors import ProviderError, UsageError
from memhub.testing import FakeEmbedder


def test_docstring_example_runs() -> None:
    result = doctest.testmod(memhub.testing.fake_embedder, raise_on_error=True)
    assert result.attempted > 0


async def test_vectors_are_unit_length_deterministic_and_word_based() -> None:
    fake = FakeEmbedder(dimension=64)
    assert isinstance(fake, Embedder)
    tea, tea_again, tea_time, boat = await fake.embed(
        ["I like tea", "i LIKE tea!", "tea time", "sailing boats"]
    )
    assert np.linalg.norm(tea) == pytest.approx(1.0, abs=1e-6)
    assert np.array_equal(tea, tea_again)  # case and punctuation do not matter
    assert float(tea @ tea_time) > float(tea @ boat)
    again = await FakeEmbedder(dimension=64).embed(["I like tea"])
    assert np.array_equal(again[0], tea)  # a new instance (or process) gives the same vector
    empty = await fake.embed([])
    assert empty.shape == (0, 64) and empty.dtype == np.float32


async def test_error_counts_calls_and_keeps_texts() -> None:
    fake = FakeEmbedder(dimension=4)
    fake.error = ProviderError("down")
    with pytest.raises(ProviderError, match="down"):
        await fake.embed(["a"])
    fake.error = None
    await fake.embed(["b", "c"])
    assert fake.calls == 2 and fake.texts == ["b", "c"]
    with pytest.raises(UsageError):
        await fake.embed("bare string")  # type: ignore[arg-type]
