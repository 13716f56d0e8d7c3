"""Any sentence-transformers / Hugging Face model directory, run on onnxruntime in-process.

A directory is read the way sentence-transformers lays it out: ``tokenizer.json``,
``config.json``, ``modules.json`` with its ``1_Pooling/config.json`` (pooling mode) and
``sentence_bert_config.json`` (``max_seq_length``), and the network as ONNX
(``model.onnx`` or ``onnx/model.onnx``). A directory holding only PyTorch weights
(``model.safetensors``) is exported to ``onnx/model.onnx`` once, with the ``export`` extra
(:mod:`memhub.embed.export`). Everything is checked when the embedder is built, so a
missing, incomplete or mismatched directory is one :class:`ConfigurationError` naming it,
before any database is touched.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from memhub.embed.onnx_encoder import (
    EncoderSpec,
    OnnxEncoder,
    Pooling,
    load_session,
    load_tokenizer,
)
from memhub.errors import ConfigurationError, install_hint

if TYPE_CHECKING:
    from tokenizers import Tokenizer

__all__ = ["LocalModelEmbedder", "ModelDirectory", "download_from_hub", "looks_like_path"]

logger = logging.getLogger(__name__)

#: Where an ONNX export may sit inside a model directory, in order of preference.
_ONNX_FILES = ("model.onnx", "onnx/model.onnx")
_TORCH_WEIGHTS = ("model.safetensors", "pytorch_model.bin")
#: sentence-transformers modules that leave the transformer's vectors as memhub computes them.
_ST_MODULES = {
    "sentence_transformers.models.Transformer",
    "sentence_transformers.models.Pooling",
    "sentence_transformers.models.Normalize",
}
_POOLING_KEYS: dict[str, Pooling] = {
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_lasttoken": "lasttoken",
}
_UNSUPPORTED_POOLING = ("pooling_mode_mean_sqrt_len_tokens", "pooling_mode_weightedmean_tokens")
#: What a hub download fetches: the layout above, not every file of the repository.
_HUB_PATTERNS = [
    "*.json",
    "model.onnx",
    "onnx/model.onnx",
    "model.safetensors",
    "1_Pooling/*",
]


@dataclass(frozen=True)
class ModelDirectory:
    """What a model directory holds, read and checked."""

    root: Path
    onnx: Path | None  # None: only PyTorch weights, exported on first use
    weights: Path | None
    tokenizer: Path
    pooling: Pooling
    dimension: int
    max_length: int
    max_positions: int
    pad_id: int

    @classmethod
    def read(cls, path: Path, dimension: int | None = None) -> ModelDirectory:
        """Read ``path`` (a directory, or an ``.onnx`` file inside one).

        Raises:
            ConfigurationError: Missing, incomplete, unsupported, or not of ``dimension``.
        """
        path = path.expanduser()
        onnx_file = path if path.suffix == ".onnx" else None
        root = path.parent if onnx_file else path
        if onnx_file is not None and root.name == "onnx" and not (root / "tokenizer.json").exists():
            root = root.parent
        if not root.is_dir():
            raise ConfigurationError(f"embedding model directory {root} does not exist")
        if onnx_file is not None and not onnx_file.is_file():
            raise ConfigurationError(f"embedding model file {onnx_file} does not exist")
        tokenizer = root / "tokenizer.json"
        if not tokenizer.is_file():
            raise ConfigurationError(
                f"{root} has no tokenizer.json (a fast tokenizer file is needed; "
                "save one with transformers' tokenizer.save_pretrained)"
            )
        onnx = onnx_file or _first_file(root, _ONNX_FILES)
        weights = _first_file(root, _TORCH_WEIGHTS)
        if onnx is None and weights is None:
            raise ConfigurationError(
                f"{root} holds no model: expected one of {', '.join(_ONNX_FILES + _TORCH_WEIGHTS)}"
            )
        config = read_json(root / "config.json")
        _check_modules(root)
        pooling, pooled_dimension = _read_pooling(root)
        found = pooled_dimension or _int(config.get("hidden_size"))
        if found is None:
            raise ConfigurationError(
                f"{root}: cannot tell the vector length: neither 1_Pooling/config.json "
                "(word_embedding_dimension) nor config.json (hidden_size) gives it"
            )
        if dimension is not None and dimension != found:
            raise ConfigurationError(
                f"{root} makes vectors of {found} dimensions, not the {dimension} configured"
            )
        max_positions = _max_positions(config)
        st_config = read_json(root / "sentence_bert_config.json")
        max_length = min(_int(st_config.get("max_seq_length")) or max_positions, max_positions)
        pad_id = _int(config.get("pad_token_id")) or 0
        return cls(
            root, onnx, weights, tokenizer, pooling, found, max_length, max_positions, pad_id
        )

    @property
    def model_name(self) -> str:
        """The directory's name, plus the ONNX file's when it is not the plain export."""
        name = self.root.name
        if self.onnx is not None and self.onnx.name != "model.onnx":
            name = f"{name}:{self.onnx.stem}"
        return name


class LocalModelEmbedder(OnnxEncoder):
    """A model directory (see the module docstring) on onnxruntime.

    Args:
        model: The directory, or an ``.onnx`` file in one.
        dimension: The length the caller expects (checked now, and against the network's
            output on first use).
        threads: onnxruntime intra-op threads.
        batch_size: Texts per inference run.
        max_length: Tokens kept per text (default: the model's ``max_seq_length``).
        model_name: The name recorded in the database (default: the directory's name).

    Raises:
        ConfigurationError: The directory is missing, incomplete or of another dimension.
        UsageError: An argument is out of range.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        dimension: int | None = None,
        threads: int = 1,
        batch_size: int = 32,
        max_length: int | None = None,
        model_name: str | None = None,
    ) -> None:
        self.directory = ModelDirectory.read(Path(model), dimension)
        d = self.directory
        spec = EncoderSpec(
            model_name or d.model_name,
            d.dimension,
            d.pooling,
            d.max_positions,
            d.pad_id,
            str(d.root),
        )
        super().__init__(spec, threads, batch_size, max_length or d.max_length)

    def __repr__(self) -> str:
        return f"LocalModelEmbedder({str(self.directory.root)!r}, model_name={self.model_name!r})"

    def _open_tokenizer(self, max_length: int) -> Tokenizer:
        return load_tokenizer(self.directory.tokenizer, max_length)

    def _open_session(self, threads: int) -> Any:
        onnx = self.directory.onnx
        if onnx is None:
            from memhub.embed.export import export_onnx

            assert self.directory.weights is not None  # read() refuses a directory with neither
            onnx = export_onnx(self.directory.root, self.directory.root / "onnx")
        if _quantises_activations(onnx):
            # Dynamic int8 quantises each run's activations with one scale for the whole
            # batch, so a text's vector would depend on what it was batched with (measured:
            # up to 0.02 per dimension on all-mpnet-base-v2 int8), and ranking on how the
            # worker happened to batch. One text per run keeps every vector a function of its
            # text alone; it cost a quarter of the texts per CPU-second (docs/embedders.md).
            self._batch_size = 1
        return load_session(onnx, threads)


def looks_like_path(model: str) -> bool:
    """Whether ``model`` names a file system path rather than a hub id like ``org/name``."""
    return (
        model.startswith(("/", "./", "../", "~"))
        or model.endswith(".onnx")
        or Path(model).expanduser().exists()
    )


def download_from_hub(repo_id: str) -> Path:
    """Fetch a model's sentence-transformers files from the Hugging Face hub (cached).

    Raises:
        ConfigurationError: ``huggingface_hub`` is not installed, or the hub cannot be
            reached or has no such model.
    """
    try:
        from huggingface_hub import snapshot_download
    except ImportError as exc:
        raise ConfigurationError(
            f"{repo_id!r} is neither a local directory nor a bundled model; to fetch it from "
            f"the Hugging Face hub install huggingface_hub ({install_hint('hub')}), or "
            "download it elsewhere and set MEMHUB_EMBEDDER_MODEL to its directory"
        ) from exc
    endpoint = os.environ.get("HF_ENDPOINT") or None
    try:
        folder = snapshot_download(repo_id, allow_patterns=_HUB_PATTERNS, endpoint=endpoint)
    except Exception as exc:  # huggingface_hub raises many unrelated types (HTTP, OS, value)
        raise ConfigurationError(
            f"cannot fetch the embedding model {repo_id!r} from the Hugging Face hub "
            f"({endpoint or 'huggingface.co'}): {type(exc).__name__}: {exc}. Is the hub "
            "reachable from here? Otherwise download the model where it is and set "
            "MEMHUB_EMBEDDER_MODEL to its directory"
        ) from exc
    logger.info("fetched %s from the Hugging Face hub into %s", repo_id, folder)
    return Path(folder)


def _first_file(root: Path, names: tuple[str, ...]) -> Path | None:
    return next((root / name for name in names if (root / name).is_file()), None)


def read_json(path: Path) -> dict[str, Any]:
    """A model directory's JSON file as a dict ({} when absent; a broken one is refused)."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path} is not a JSON object")
    return cast(dict[str, Any], data)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _check_modules(root: Path) -> None:
    path = root / "modules.json"
    if not path.is_file():
        return  # a plain Hugging Face directory: the transformer, mean-pooled
    try:
        modules = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc
    kinds = (
        [m.get("type") for m in modules if isinstance(m, dict)] if isinstance(modules, list) else []
    )
    others = [kind for kind in kinds if kind not in _ST_MODULES]
    if others or not kinds:
        raise ConfigurationError(
            f"{path} lists modules memhub does not run ({', '.join(map(str, others)) or 'none'}); "
            "it runs Transformer, Pooling and Normalize"
        )


def _read_pooling(root: Path) -> tuple[Pooling, int | None]:
    path = root / "1_Pooling" / "config.json"
    config = read_json(path)
    if not config:
        return "mean", None
    unsupported = [key for key in _UNSUPPORTED_POOLING if config.get(key)]
    modes = [mode for key, mode in _POOLING_KEYS.items() if config.get(key)]
    if unsupported or len(modes) != 1:
        raise ConfigurationError(
            f"{path}: memhub runs exactly one of mean, cls, max or lasttoken pooling, "
            f"not {', '.join(unsupported) or modes or 'none'}"
        )
    return modes[0], _int(config.get("word_embedding_dimension"))


def _max_positions(config: dict[str, Any]) -> int:
    positions = _int(config.get("max_position_embeddings")) or 512
    # RoBERTa-style models (MPNet too) reserve the first positions for padding.
    if config.get("model_type") in ("roberta", "mpnet", "xlm-roberta", "camembert"):
        positions -= 2
    return max(positions, 2)


def _quantises_activations(path: Path) -> bool:
    """Whether the network quantises activations at run time (onnxruntime's dynamic int8)."""
    import onnx
    from google.protobuf.message import Error as ProtobufError

    try:
        graph = onnx.load(str(path), load_external_data=False).graph
    except (OSError, ProtobufError):
        return False  # not a readable model: loading it gives the one clear error
    return any(node.op_type in _DYNAMIC_QUANTISATION for node in graph.node)


_DYNAMIC_QUANTISATION = frozenset({"DynamicQuantizeLinear", "DynamicQuantizeMatMul"})
