"""A local cross-encoder on onnxruntime, in-process: ``[CLS] query [SEP] passage [SEP]`` -> logit.

A directory holding ``tokenizer.json`` and an ONNX export, e.g. of
``cross-encoder/ms-marco-MiniLM-L-6-v2`` or ``BAAI/bge-reranker-base``. It runs on the
embedders' ONNX helpers (:mod:`memhub.embed.onnx_encoder`: tokenizer, session, batches), so
its CPU work takes the same per-core turns (:func:`memhub._cpu.run_cpu`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memhub._cpu import run_cpu
from memhub.embed.onnx_encoder import (
    batches,
    load_session,
    load_tokenizer,
    model_inputs,
    onnxruntime_errors,
)
from memhub.errors import ConfigurationError, ProviderError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["CrossEncoderReranker"]


@dataclass(frozen=True)
class _Loaded:
    tokenizer: Tokenizer
    session: Any
    inputs: frozenset[str]
    output: str
    errors: tuple[type[Exception], ...]


class CrossEncoderReranker:
    """A cross-encoder directory on onnxruntime: ``[CLS] query [SEP] passage [SEP]`` -> logit.

    The directory holds ``tokenizer.json`` (its pair template decides the special tokens
    and token types) and ``model.onnx`` or ``onnx/model.onnx`` with inputs ``input_ids``,
    ``attention_mask`` (and ``token_type_ids`` if the model takes them) and one output of
    shape ``(batch, 1)`` (or ``(batch,)``); a two-label output uses its last column.
    Loaded on first use, thread-safely.

    Raises:
        ConfigurationError: The directory or one of its files is missing.
    """

    def __init__(
        self,
        model: str | Path,
        *,
        threads: int = 1,
        batch_size: int = 32,
        max_length: int = 512,
    ) -> None:
        root = Path(model).expanduser()
        if not root.is_dir():
            raise ConfigurationError(f"cross-encoder directory {root} does not exist")
        self._tokenizer_path = root / "tokenizer.json"
        if not self._tokenizer_path.is_file():
            raise ConfigurationError(f"{root} has no tokenizer.json")
        found = [root / name for name in ("model.onnx", "onnx/model.onnx")]
        onnx = next((path for path in found if path.is_file()), None)
        if onnx is None:
            raise ConfigurationError(f"{root} has no model.onnx (nor onnx/model.onnx)")
        self._onnx = onnx
        self._root = root
        self._threads = threads
        self._batch_size = batch_size
        self._max_length = max_length
        self._loaded: _Loaded | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CrossEncoderReranker({str(self._root)!r})"

    async def score(self, query: str, passages: Sequence[str]) -> list[float]:
        """One logit per passage (CPU work, in a worker thread)."""
        if not passages:
            return []
        return await run_cpu(self.score_sync, query, list(passages))

    def score_sync(self, query: str, passages: Sequence[str]) -> list[float]:
        """The same, in the calling thread."""
        loaded = self._load()
        encodings = loaded.tokenizer.encode_batch([(query, passage) for passage in passages])
        order = sorted(range(len(passages)), key=lambda i: len(encodings[i].ids))
        result = [0.0] * len(passages)
        lengths = [len(encodings[i].ids) for i in order]
        for start, stop in batches(lengths, self._batch_size):
            rows = order[start:stop]
            feeds = model_inputs([encodings[i] for i in rows], 0, loaded.inputs)
            try:
                (logits,) = loaded.session.run([loaded.output], feeds)
            except loaded.errors as exc:
                raise ProviderError(f"onnxruntime failed to run {self._root}: {exc}") from exc
            values = np.asarray(logits, dtype=np.float32).reshape(len(rows), -1)[:, -1]
            for row, index in enumerate(rows):
                result[index] = float(values[row])
        return result

    async def aclose(self) -> None:
        """Drop the loaded session; a later call loads it again."""
        self._loaded = None

    def _load(self) -> _Loaded:
        loaded = self._loaded
        if loaded is not None:
            return loaded
        with self._lock:
            if self._loaded is None:
                tokenizer = load_tokenizer(self._tokenizer_path, self._max_length)
                session = load_session(self._onnx, self._threads)
                inputs = frozenset(i.name for i in session.get_inputs())
                output = session.get_outputs()[0].name
                self._loaded = _Loaded(tokenizer, session, inputs, output, onnxruntime_errors())
            return self._loaded
