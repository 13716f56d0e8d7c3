"""``open()`` loads an in-process embedding model and runs it once, so a server's first search
does not wait for the model (issue 36: "the query path warmed at start")."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from memhub import AsyncMemory, MemhubSettings
from memhub.embed.onnx_minilm import MiniLMEmbedder


async def test_open_loads_the_model_before_any_search(settings: MemhubSettings) -> None:
    encoder = MiniLMEmbedder()  # the suite's real in-process model (tests/fix_env.py)
    memory = AsyncMemory(settings=settings.model_copy(update={"database_url": "memory://"}),
                         embedder=encoder)  # fmt: skip
    try:
        assert not encoder.loaded
        await memory.open()
        assert encoder.loaded
        found = await memory.search("anything", user_id="nobody", limit=3)
        assert found["results"] == []
    finally:
        await memory.aclose()


async def test_warm_does_nothing_once_the_model_is_loaded() -> None:
    encoder = MiniLMEmbedder()
    await encoder.embed(["a first text loads the model"])
    assert encoder.loaded
    await encoder.aclose()  # drops the session
    assert not encoder.loaded
    await encoder.warm()
    assert encoder.loaded
    runtime = encoder._runtime  # the one session warm() loaded
    await encoder.warm()
    assert encoder._runtime is runtime


class _Counting:
    """An embedder without ``warm`` (a served model's, a caller's own): open() embeds
    nothing with it, so a served model is not called until there is something to embed."""

    dimension = 3
    model_name = "counting"

    def __init__(self) -> None:
        self.calls = 0

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        self.calls += 1
        return np.ones((len(texts), 3), dtype=np.float32) / np.sqrt(np.float32(3))

    async def aclose(self) -> None:
        """Nothing to release."""


async def test_open_calls_no_embedder_that_cannot_warm(settings: MemhubSettings) -> None:
    counting = _Counting()
    memory = AsyncMemory(settings=settings.model_copy(update={"database_url": "memory://"}),
                         embedder=counting)  # fmt: skip
    try:
        await memory.open()
        assert counting.calls == 0
    finally:
        await memory.aclose()
