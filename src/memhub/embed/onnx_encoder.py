"""A transformer sentence encoder on onnxruntime: tokenise, run, pool, normalise.

One pipeline for every in-process model: the packaged all-MiniLM-L6-v2
(:mod:`memhub.embed.onnx_minilm`) and any model directory (:mod:`memhub.embed.local_model`).
Subclasses say where the tokenizer and the network come from; this module does the rest.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from memhub._cpu import run_cpu
from memhub.embed.base import check_texts, empty_matrix, normalise_rows
from memhub.embed.passages import Span, split_windows
from memhub.errors import ConfigurationError, ProviderError, UsageError

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

__all__ = [
    "TURN_TEXTS",
    "EncoderSpec",
    "OnnxEncoder",
    "Pooling",
    "batches",
    "load_session",
    "load_tokenizer",
]

logger = logging.getLogger(__name__)

#: sentence-transformers' pooling modes that memhub runs.
Pooling = Literal["mean", "cls", "max", "lasttoken"]

#: A batch holds texts at most this many times longer than its shortest (see batches).
_MAX_SPREAD = 1.25

TURN_TEXTS = 16
"""Texts embedded in one turn at a CPU slot: longer calls take several turns."""

_ONNXRUNTIME_ERRORS = (
    "EPFail",
    "EngineError",
    "Fail",
    "InvalidArgument",
    "InvalidGraph",
    "InvalidProtobuf",
    "ModelLoaded",
    "NoModel",
    "NoSuchFile",
    "NotImplemented",
    "RuntimeException",
)
#: Network outputs holding one vector per token (pooled here) or one per text.
_TOKEN_OUTPUTS = ("last_hidden_state", "token_embeddings")
_TEXT_OUTPUTS = ("sentence_embedding", "sentence_embeddings", "pooler_output")
_KNOWN_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


@dataclass(frozen=True)
class EncoderSpec:
    """The pipeline around one network.

    Attributes:
        model_name: Recorded in the database.
        dimension: Length of every vector; a network answering otherwise is refused.
        pooling: How token vectors become one (ignored when the network pools itself).
        max_positions: The longest input the network takes, special tokens included.
        pad_id: The tokenizer's padding id (masked out, but some networks derive positions
            from it).
        source: What to name in errors (a path or a package).
    """

    model_name: str
    dimension: int
    pooling: Pooling = "mean"
    max_positions: int = 512
    pad_id: int = 0
    source: str = ""


@dataclass(frozen=True)
class _Runtime:
    """What the first call loads: the tokenizer and the onnxruntime session."""

    tokenizer: Tokenizer
    session: Any  # onnxruntime.InferenceSession; onnxruntime ships no type stubs
    input_names: frozenset[str]
    output: str
    pooled: bool  # the network returns one vector per text
    errors: tuple[type[Exception], ...]  # what onnxruntime raises, to translate


class OnnxEncoder:
    """A sentence encoder on onnxruntime, loaded lazily and thread-safely.

    Tokens are truncated to ``max_length``, texts are run in batches of similar length,
    token vectors are pooled over the attention mask as the spec says, and rows are scaled
    to unit length. Subclasses implement :meth:`_open_tokenizer` and :meth:`_open_session`.

    Raises:
        UsageError: An argument is out of range.
    """

    def __init__(
        self, spec: EncoderSpec, threads: int = 1, batch_size: int = 64, max_length: int = 256
    ) -> None:
        if threads < 1:
            raise UsageError(f"threads must be at least 1, got {threads}")
        if batch_size < 1:
            raise UsageError(f"batch_size must be at least 1, got {batch_size}")
        if not 2 <= max_length <= spec.max_positions:
            raise UsageError(
                f"max_length must be between 2 and {spec.max_positions}, got {max_length}"
            )
        self._spec = spec
        self._threads = threads
        self._batch_size = batch_size
        self._max_length = max_length
        self._runtime: _Runtime | None = None
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        """Length of every vector."""
        return self._spec.dimension

    @property
    def model_name(self) -> str:
        """The name recorded in the database."""
        return self._spec.model_name

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory (loaded by :meth:`warm` or the first embedding)."""
        return self._runtime is not None

    async def warm(self) -> None:
        """Load the model and run it once, off the event loop, so the first query waits for
        neither: a process's first search took 0.8-0.9 s with the default model, the next
        under 25 ms (docs/embedders.md, "Warm at start"). Servers call it at start, through
        ``AsyncMemory.open()``; once the model is loaded it does nothing."""
        if self._runtime is None:
            await run_cpu(self.embed_sync, ["warm"])

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts without blocking the event loop.

        Returns:
            float32 array of shape ``(len(texts), dimension)`` with unit-length rows.

        Raises:
            UsageError: ``texts`` is a bare string or holds non-strings.
            ConfigurationError: The model or tokenizer is missing, broken or of another
                dimension.
            ProviderError: onnxruntime failed during inference.
        """
        items = check_texts(texts)
        if not items:
            return empty_matrix(self.dimension)
        # This is CPU work, not I/O: onnxruntime and tokenizers release the GIL, so a worker
        # thread keeps the event loop responsive and lets other threads run meanwhile.
        if len(items) <= TURN_TEXTS:
            return await run_cpu(self.embed_sync, items)
        # A long call goes in turns of TURN_TEXTS texts of similar length, so a query waits
        # for at most one turn of it at a CPU slot (memhub._cpu), not for the whole call.
        order = sorted(range(len(items)), key=lambda i: len(items[i]))
        result = np.empty((len(items), self.dimension), dtype=np.float32)
        for start in range(0, len(order), TURN_TEXTS):
            rows = order[start : start + TURN_TEXTS]
            result[rows] = await run_cpu(self.embed_sync, [items[i] for i in rows])
        return result

    def embed_sync(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed texts in the calling thread; same contract as :meth:`embed`."""
        items = check_texts(texts)
        if not items:
            return empty_matrix(self.dimension)
        runtime = self._load()
        encodings = runtime.tokenizer.encode_batch(items)
        order = sorted(range(len(items)), key=lambda i: len(encodings[i].ids))
        lengths = [len(encodings[i].ids) for i in order]
        result = np.empty((len(items), self.dimension), dtype=np.float32)
        for start, stop in batches(lengths, self._batch_size):
            rows = order[start:stop]
            result[rows] = self._run(runtime, [encodings[i] for i in rows])
        return result

    async def passage_spans(self, texts: Sequence[str]) -> list[list[Span]]:
        """Each text's passages (:mod:`memhub.embed.passages`): windows of the tokens this
        encoder reads, ``max_length`` less the special tokens; [] for a text that fits."""
        items = check_texts(texts)
        return await run_cpu(self._passage_spans, items) if items else []

    def _passage_spans(self, texts: list[str]) -> list[list[Span]]:
        tokenizer = self._load().tokenizer
        window = self._max_length - tokenizer.num_special_tokens_to_add(False)
        found: list[list[Span]] = []
        for encoding in tokenizer.encode_batch(texts):
            if not encoding.overflowing:  # the common case: the text fits
                found.append([])
                continue
            # Truncation keeps the rest of a long text in its overflowing parts, in order.
            offsets = [
                offset
                for part in (encoding, *encoding.overflowing)
                for offset, special in zip(part.offsets, part.special_tokens_mask, strict=True)
                if not special
            ]
            found.append(split_windows(texts[len(found)], offsets, window))
        return found

    async def aclose(self) -> None:
        """Drop the loaded session; a later call loads it again."""
        # No lock: taking it could block the event loop behind a load in another thread, and
        # a load that finishes after this merely leaves a usable session behind.
        self._runtime = None

    def _open_tokenizer(self, max_length: int) -> Tokenizer:
        raise NotImplementedError

    def _open_session(self, threads: int) -> Any:
        raise NotImplementedError

    def _run(self, runtime: _Runtime, batch: list[Encoding]) -> npt.NDArray[np.float32]:
        feeds = model_inputs(batch, self._spec.pad_id, runtime.input_names)
        mask = feeds["attention_mask"]
        try:
            (output,) = runtime.session.run([runtime.output], feeds)
        except runtime.errors as exc:
            raise ProviderError(f"onnxruntime failed to run {self.model_name}: {exc}") from exc
        if output.shape[-1] != self.dimension:
            raise ConfigurationError(
                f"{self._spec.source or self.model_name} returns vectors of "
                f"{output.shape[-1]} dimensions, not the {self.dimension} its configuration "
                "declares"
            )
        pooled = output if runtime.pooled else pool(output, mask, self._spec.pooling)
        return normalise_rows(pooled)

    def _load(self) -> _Runtime:
        runtime = self._runtime
        if runtime is not None:
            return runtime
        with self._lock:
            if self._runtime is None:
                tokenizer = self._open_tokenizer(self._max_length)
                session = self._open_session(self._threads)
                names = frozenset(i.name for i in session.get_inputs())
                output, pooled = _choose_output(session, names, self._spec.source)
                self._runtime = _Runtime(
                    tokenizer, session, names, output, pooled, onnxruntime_errors()
                )
                logger.debug("loaded %s with %s thread(s)", self.model_name, self._threads)
            return self._runtime


def _choose_output(session: Any, inputs: frozenset[str], source: str) -> tuple[str, bool]:
    """The network's output to read, and whether it is already one vector per text."""
    missing = {"input_ids", "attention_mask"} - inputs
    unknown = inputs - _KNOWN_INPUTS
    if missing or unknown:
        raise ConfigurationError(
            f"{source}: the ONNX model takes inputs {sorted(inputs)}; memhub feeds input_ids, "
            "attention_mask and (if asked) token_type_ids"
        )
    outputs = {o.name: o for o in session.get_outputs()}
    for name in _TOKEN_OUTPUTS:
        if name in outputs:
            return name, False
    for name in _TEXT_OUTPUTS:
        if name in outputs:
            return name, True
    first = next(iter(outputs.values()))
    return first.name, len(first.shape) == 2


def batches(lengths: Sequence[int], batch_size: int) -> list[tuple[int, int]]:
    """Split token lengths sorted ascending into ``(start, stop)`` runs of similar length.

    A run ends at ``batch_size`` texts or when the next text is much longer than the run's
    first. Measured on 64 chat turns of 8 to 30 tokens: one padded batch of 64 ran at 225
    texts/s on one core, runs of similar length at about 380, since padding is wasted work.
    """
    runs: list[tuple[int, int]] = []
    start = 0
    for position in range(1, len(lengths) + 1):
        full = position - start == batch_size
        if full or position == len(lengths) or lengths[position] > _MAX_SPREAD * lengths[start]:
            runs.append((start, position))
            start = position
    return runs


def model_inputs(
    batch: Sequence[Encoding], pad_id: int, input_names: frozenset[str]
) -> dict[str, npt.NDArray[np.int64]]:
    """A batch right-padded to its longest member: input ids, attention mask and, where the
    model takes them, token type ids (all 0 for one text; 1 for a pair's second)."""
    width = max(len(encoding.ids) for encoding in batch)
    ids = np.full((len(batch), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    types = np.zeros((len(batch), width), dtype=np.int64)
    for row, encoding in enumerate(batch):
        ids[row, : len(encoding.ids)] = encoding.ids
        mask[row, : len(encoding.ids)] = 1
        types[row, : len(encoding.ids)] = encoding.type_ids
    feeds = {"input_ids": ids, "attention_mask": mask}
    if "token_type_ids" in input_names:
        feeds["token_type_ids"] = types
    return feeds


def pool(
    hidden: npt.NDArray[np.float32], mask: npt.NDArray[np.int64], mode: Pooling
) -> npt.NDArray[np.float32]:
    """One vector per text from its token vectors, as sentence-transformers' Pooling does."""
    if mode == "cls":
        return np.asarray(hidden[:, 0], dtype=np.float32)
    if mode == "lasttoken":
        last = mask.sum(axis=1) - 1
        return np.asarray(hidden[np.arange(hidden.shape[0]), last], dtype=np.float32)
    weights = mask[:, :, None].astype(np.float32)
    if mode == "max":
        masked = np.where(weights > 0, hidden, np.float32(-1e9))
        return np.asarray(masked.max(axis=1), dtype=np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.maximum(weights.sum(axis=1), np.float32(1e-9))
    return np.asarray(summed / counts, dtype=np.float32)


def load_tokenizer(path: Path, max_length: int) -> Tokenizer:
    """A ``tokenizer.json``, truncating to ``max_length`` and padding nothing (we pad)."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for a bad file
        raise ConfigurationError(f"cannot read the tokenizer {path}: {exc}") from exc
    tokenizer.enable_truncation(max_length=max_length)
    tokenizer.no_padding()
    return tokenizer


def onnxruntime_errors() -> tuple[type[Exception], ...]:
    """onnxruntime's exception classes: they derive from Exception, not from one base."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    found = (getattr(state, name, None) for name in _ONNXRUNTIME_ERRORS)
    return (RuntimeError, *(cls for cls in found if isinstance(cls, type)))


def load_session(path: Path, threads: int) -> Any:
    """An onnxruntime CPU session on ``path`` with ``threads`` intra-op threads."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3  # onnxruntime warns about unused initializers otherwise
    try:
        return ort.InferenceSession(
            str(path), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except onnxruntime_errors() as exc:
        raise ConfigurationError(f"onnxruntime cannot load {path}: {exc}") from exc
