"""The model cache: a packaged model is built once per machine, and only a finished build is used.

The model is tiny and random (tests/embed/test_graph.py's BERT weights, tests/tiny_models.py's
tokenizer), zipped and split into two "packages" whose dist-info the test writes, so the
build runs the real recipe end to end (join, unpack, graph, int8 quantisation) in a second
or two instead of the default's minute. Builds are counted, never timed.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import memhub.embed.packaged as packaged
from memhub.embed.local_model import LocalModelEmbedder
from memhub.embed.model_cache import MARKER, active_builds
from memhub.embed.packaged import PackagedModel, prepare
from memhub.errors import ConfigurationError
from tests.embed.test_graph import _model_dir
from tests.tiny_models import as_packages

WAIT = 60.0  # seconds a test waits for another thread before it fails (never reached)


def tiny_packaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PackagedModel:
    """A tiny BERT (weights only) split over two installed "packages", as the default is."""
    _model_dir(tmp_path / "src" / "tiny", "bert")
    model: PackagedModel = as_packages(
        tmp_path / "src" / "tiny", tmp_path / "site", "tiny-int8", "onnx/model_qint8.onnx"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return model


def hold_quantisation(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Builds stop at their quantisation until ``release`` is set; ``quantising`` says one has."""
    import memhub.embed.export as export

    quantising, release = threading.Event(), threading.Event()
    quantize = export.quantize_int8

    def held(fp32: Path, out: Path) -> Path:
        quantising.set()
        assert release.wait(WAIT)
        return quantize(fp32, out)

    monkeypatch.setattr(export, "quantize_int8", held)
    return quantising, release


@pytest.fixture
def model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> PackagedModel:
    return tiny_packaged(tmp_path, monkeypatch)


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every build that ran (one join of the pieces each)."""
    ran: list[Path] = []
    unpack = packaged._unpack

    def counted(model: PackagedModel, pieces: list[Path], work: Path) -> Path:
        ran.append(work)
        return unpack(model, pieces, work)

    monkeypatch.setattr(packaged, "_unpack", counted)
    return ran


def _kept(built: Path) -> set[str]:
    return {p.relative_to(built).as_posix() for p in built.rglob("*") if p.is_file()}


def test_built_once_keeping_only_what_runs(
    model: PackagedModel, builds: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="memhub")
    cache = tmp_path / "cache"

    onnx = prepare(model, cache)
    again = prepare(model, cache, tmp_path / "data" / "models")

    assert again == onnx and len(builds) == 1
    (built,) = cache.glob("tiny-int8-*")
    assert onnx == built / "tiny" / "onnx" / "model_qint8.onnx"
    kept = _kept(built)
    assert MARKER in kept and "tiny/tokenizer.json" in kept
    assert (
        not {"tiny/model.safetensors", "tiny/onnx/model.onnx", "tiny/onnx/model.onnx.data"} & kept
    )
    assert not [p for p in cache.iterdir() if p.name.startswith(".building-")]
    vectors = LocalModelEmbedder(onnx).embed_sync(["i like jazz", "hello world"])
    assert vectors.shape == (2, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1.0)
    # Each step said what it was doing, and no third-party warning came through.
    steps = [r.getMessage() for r in caplog.records if ": step " in r.getMessage()]
    assert [s.split(": step ")[1][:6] for s in steps] == ["1 of 3", "2 of 3", "3 of 3"]
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]


def test_a_changed_recipe_is_built_anew(
    model: PackagedModel, builds: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = prepare(model, tmp_path / "cache")
    monkeypatch.setattr(packaged, "RECIPE_VERSION", packaged.RECIPE_VERSION + 1)

    second = prepare(model, tmp_path / "cache")

    assert len(builds) == 2 and first.parents[1] != second.parents[1]


def test_a_model_an_earlier_memhub_built_into_the_data_directory_is_used_in_place(
    model: PackagedModel, builds: list[Path], tmp_path: Path
) -> None:
    earlier = tmp_path / "data" / "models"
    (earlier / "tiny" / "onnx").mkdir(parents=True)
    (earlier / "tiny" / "onnx" / "model_qint8.onnx").write_bytes(b"the old build")

    assert prepare(model, tmp_path / "cache", earlier) == earlier / "tiny/onnx/model_qint8.onnx"
    assert builds == [] and packaged.is_ready(model, tmp_path / "cache", earlier)
    assert not packaged.is_ready(model, tmp_path / "cache")


_KILLED_BUILD = """
import os, sys
from pathlib import Path
import memhub.embed.export as export
import memhub.embed.packaged as packaged
spec = json.loads(sys.argv[1])
model = packaged.PackagedModel(spec["name"], tuple(spec["distributions"]), spec["piece"],
                               spec["folder"], spec["onnx"])
export.quantize_int8 = lambda *args: os._exit(9)  # killed between writing and quantising
packaged.prepare(model, Path(sys.argv[2]))
"""


def test_a_killed_build_is_not_trusted_and_the_next_start_rebuilds_saying_why(
    model: PackagedModel,
    builds: list[Path],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = tmp_path / "cache"
    spec = {f: getattr(model, f) for f in ("name", "distributions", "piece", "folder", "onnx")}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*sys.path])}
    killed = subprocess.run(
        [sys.executable, "-c", "import json\n" + _KILLED_BUILD, json.dumps(spec), str(cache)],
        env=env,
        capture_output=True,
        check=False,
    )
    assert killed.returncode == 9, killed.stderr.decode()
    left = [p.name for p in cache.iterdir() if not p.name.endswith(".lock")]
    assert len(left) == 1 and left[0].startswith(".building-tiny-int8-")
    assert not packaged.is_ready(model, cache)

    onnx = prepare(model, cache)

    assert len(builds) == 1 and onnx.is_file()
    assert [p.name for p in cache.iterdir() if p.name.startswith(".building-")] == []
    warned = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "an earlier build of tiny-int8 was interrupted" in warned and left[0] in warned


def test_a_finished_build_that_lost_a_file_is_rebuilt(
    model: PackagedModel, builds: list[Path], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    onnx = prepare(model, tmp_path / "cache")
    with onnx.open("r+b") as f:
        f.truncate(10)  # a disk that lost the file's end

    assert prepare(model, tmp_path / "cache") == onnx
    assert len(builds) == 2 and onnx.stat().st_size > 10
    warned = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "is not a finished build (tiny/onnx/model_qint8.onnx is missing" in warned


def test_a_full_disk_fails_clearly_and_leaves_nothing_trusted(
    model: PackagedModel, builds: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import memhub.embed.export as export

    cache = tmp_path / "cache"
    quantize = export.quantize_int8

    def full(*_: object) -> Path:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(export, "quantize_int8", full)
    with pytest.raises(ConfigurationError, match="No space left on device") as refused:
        prepare(model, cache)
    assert str(cache) in str(refused.value) and "MEMHUB_MODEL_CACHE" in str(refused.value)
    assert [p.name for p in cache.iterdir() if not p.name.endswith(".lock")] == []

    monkeypatch.setattr(export, "quantize_int8", quantize)
    assert prepare(model, cache).is_file() and len(builds) == 2


def test_a_cache_that_cannot_be_written_is_one_clear_error(
    model: PackagedModel, builds: list[Path], tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    with pytest.raises(ConfigurationError) as refused:
        prepare(model, blocked / "models")
    assert str(blocked / "models") in str(refused.value)
    assert "not writable" in str(refused.value) and "MEMHUB_MODEL_CACHE" in str(refused.value)
    assert builds == []


def test_a_lock_file_that_cannot_be_opened_is_the_same_clear_error(
    model: PackagedModel, builds: list[Path], tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    (cache / f".{packaged.recipe(model).folder}.lock").mkdir(parents=True)  # not a file

    with pytest.raises(ConfigurationError, match=r"not writable.*MEMHUB_MODEL_CACHE") as refused:
        prepare(model, cache)
    assert str(cache) in str(refused.value) and builds == []


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through directory permissions")
def test_a_read_only_cache_is_one_clear_error(model: PackagedModel, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o500)
    try:
        with pytest.raises(ConfigurationError, match=r"not writable.*MEMHUB_MODEL_CACHE"):
            prepare(model, cache)
    finally:
        cache.chmod(0o700)


def test_two_builders_at_once_build_once(
    model: PackagedModel, builds: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The second builder waits on the lock file (flock locks an open file, so two threads
    conflict as two processes do) and then finds the first one's build."""
    cache = tmp_path / "cache"
    quantizing, release = hold_quantisation(monkeypatch)
    results: dict[str, Path] = {}

    def build(name: str) -> None:
        results[name] = prepare(model, cache)

    first = threading.Thread(target=build, args=("first",))
    second = threading.Thread(target=build, args=("second",))
    first.start()
    try:
        assert quantizing.wait(WAIT)
        second.start()
        _wait_for(lambda: [b["step"] for b in active_builds()].count(_WAITING) == 1)
        steps = sorted(b["step"] for b in active_builds())
        assert steps == ["quantising the graph to int8", _WAITING]
    finally:
        release.set()
        first.join(WAIT)
        if second.is_alive() or second.ident is not None:
            second.join(WAIT)

    assert results["first"] == results["second"] and len(builds) == 1
    assert active_builds() == []


_WAITING = "waiting for another process to finish building it"


def _wait_for(condition: object) -> None:
    done = threading.Event()
    for _ in range(int(WAIT * 100)):
        if condition():  # type: ignore[operator]
            return
        done.wait(0.01)
    raise AssertionError("the condition never held")


_BUILDER = """
import json, logging, sys, time
from pathlib import Path
logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(message)s")
import memhub.embed.export as export
import memhub.embed.packaged as packaged
spec, cache, hold = json.loads(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
model = packaged.PackagedModel(spec["name"], tuple(spec["distributions"]), spec["piece"],
                               spec["folder"], spec["onnx"])
if hold != "-":
    quantize = export.quantize_int8
    def held(fp32, out):
        Path(hold, "quantising").touch()
        while not Path(hold, "release").exists():
            time.sleep(0.01)
        return quantize(fp32, out)
    export.quantize_int8 = held
print(packaged.prepare(model, cache), flush=True)
"""


def test_two_processes_starting_at_once_build_once(model: PackagedModel, tmp_path: Path) -> None:
    """The first process is held in its quantisation (until a file appears) while the second
    starts: the second says it waits, then both run the one build."""
    spec = json.dumps({f: getattr(model, f) for f in _SPEC})
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    hold = tmp_path / "hold"
    hold.mkdir()

    def builder(held: str) -> subprocess.Popen[str]:
        command = [sys.executable, "-c", _BUILDER, spec, str(tmp_path / "cache"), held]
        return subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )

    first = builder(str(hold))
    try:
        _wait_for(lambda: (hold / "quantising").exists() or first.poll() is not None)
        second = builder("-")
        assert second.stderr is not None
        said = []
        for line in second.stderr:  # ends early (EOF) if the second built on its own
            said.append(line)
            if "another process is building tiny-int8" in line:
                break
        assert "another process is building tiny-int8" in said[-1], said
    finally:
        (hold / "release").touch()
    out1, err1 = first.communicate(timeout=WAIT)
    out2, err2 = second.communicate(timeout=WAIT)

    assert first.returncode == second.returncode == 0, err1 + err2
    assert out1 == out2 and Path(out1.strip()).is_file()
    assert (err1 + "".join(said) + err2).count("once for this machine") == 1


_SPEC = ("name", "distributions", "piece", "folder", "onnx")
