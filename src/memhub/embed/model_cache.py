"""Built models, kept once per machine in a cache that every data directory shares.

A model that memhub builds itself (the default, assembled from its part packages, its graph
written and quantised) is built into ``<cache>/<name>-<recipe>/``, where ``<recipe>`` is a
hash of everything that shapes the files: a changed recipe is a new directory, built anew.
Only what runs stays (the ONNX graph and the tokenizer and config files).

What a later start trusts: a directory whose ``BUILT.json`` (written last) names the same
recipe and lists files that are all there at their recorded sizes. A build works in a
temporary directory beside the target, flushes every file to disk and appears under its
final name in one rename, so a build killed half-way (or stopped by a full disk) leaves
only a ``.building-*`` directory, which the next build removes, saying why. Builders in
several processes take an exclusive ``flock`` on ``.<directory>.lock`` first: the second
waits and then finds the model built.

The cache directory is ``MEMHUB_MODEL_CACHE``; by default ``$XDG_CACHE_HOME/memhub/models``
or ``~/.cache/memhub/models``.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import gc
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memhub.errors import ConfigurationError

__all__ = [
    "MARKER",
    "BuildProgress",
    "Recipe",
    "active_builds",
    "ensure_built",
    "finished",
]

logger = logging.getLogger(__name__)

#: The file a finished build writes last; without it a directory is not trusted.
MARKER = "BUILT.json"
_SETTING = "MEMHUB_MODEL_CACHE"


@dataclass(frozen=True)
class Recipe:
    """How to build one model into an empty directory.

    ``run(work, step)`` fills ``work``, calls ``step(n)`` as it starts step ``n`` (0-based,
    of ``steps``), deletes what does not run, and returns the runnable file's path
    relative to ``work``.
    """

    name: str
    fingerprint: str  # a hash of the recipe: part of the directory's name
    steps: tuple[str, ...]  # what each step does, for people ("quantising to int8")
    run: Callable[[Path, Callable[[int], None]], str]

    @property
    def folder(self) -> str:
        return f"{self.name}-{self.fingerprint[:12]}"


class BuildProgress:
    """Where one build is: read by ``/healthz`` while the build runs in another thread."""

    def __init__(self, recipe: Recipe) -> None:
        self._recipe = recipe
        self._lock = threading.Lock()
        self._step = "starting"
        self._done = 0

    def waiting(self) -> None:
        with self._lock:
            self._step = "waiting for another process to finish building it"

    def start(self, step: int) -> None:
        with self._lock:
            self._step, self._done = self._recipe.steps[step], step

    def snapshot(self) -> dict[str, Any]:
        """``{"name", "step", "done", "of"}``: the step under way and how many are done."""
        with self._lock:
            return {
                "name": self._recipe.name,
                "step": self._step,
                "done": self._done,
                "of": len(self._recipe.steps),
            }


_ACTIVE: dict[int, BuildProgress] = {}
_ACTIVE_LOCK = threading.Lock()


def active_builds() -> list[dict[str, Any]]:
    """The builds this process is running or waiting for, as :meth:`BuildProgress.snapshot`."""
    with _ACTIVE_LOCK:
        return [progress.snapshot() for progress in _ACTIVE.values()]


def ensure_built(recipe: Recipe, cache: Path) -> Path:
    """The runnable file of ``recipe`` in ``cache``, built first unless a build is there.

    Raises:
        ConfigurationError: ``cache`` cannot be written (named, with the setting), or the
            build failed (a full disk, say); nothing half-built is left to be trusted.
    """
    target = cache / recipe.folder
    runnable, _ = _check(target, recipe)
    if runnable is not None:
        return runnable
    progress = BuildProgress(recipe)
    with _ACTIVE_LOCK:
        _ACTIVE[id(progress)] = progress
    try:
        _writable(cache)
        with _locked(cache / f".{recipe.folder}.lock", recipe, progress):
            runnable, why = _check(target, recipe)
            if runnable is not None:  # built by another process while this one waited
                return runnable
            _discard_leftovers(cache, recipe, target, why)
            return _build(recipe, cache, target, progress)
    finally:
        with _ACTIVE_LOCK:
            _ACTIVE.pop(id(progress), None)


def finished(recipe: Recipe, cache: Path) -> Path | None:
    """The runnable file of a finished build of ``recipe`` in ``cache``, or None."""
    return _check(cache / recipe.folder, recipe)[0]


def _check(target: Path, recipe: Recipe) -> tuple[Path | None, str | None]:
    """The runnable file if ``target`` is a finished build, else why not (None: absent)."""
    if not target.exists():
        return None, None
    try:
        marker = json.loads((target / MARKER).read_text())
        files: dict[str, int] = marker["files"]
        runnable = target / str(marker["runnable"])
        same = marker["recipe"] == recipe.fingerprint
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"it has no readable {MARKER} ({exc.__class__.__name__})"
    if not same:
        return None, f"its {MARKER} names another recipe"
    for name, size in files.items():
        path = target / name
        if not path.is_file() or path.stat().st_size != size:
            return None, f"{name} is missing or not of its recorded size"
    return runnable, None


def _writable(cache: Path) -> None:
    try:
        cache.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=cache):
            pass
    except OSError as exc:
        raise _not_writable(cache, exc) from exc


def _not_writable(cache: Path, exc: OSError) -> ConfigurationError:
    return ConfigurationError(
        f"the model cache {cache} is not writable ({exc.strerror or exc}); set "
        f"{_SETTING} to a directory memhub can write (it keeps built embedding models, "
        "a few hundred MB, shared by every data directory)"
    )


@contextlib.contextmanager
def _locked(path: Path, recipe: Recipe, progress: BuildProgress) -> Iterator[None]:
    """Hold an exclusive flock on ``path``: one builder at a time, across processes."""
    try:
        handle = path.open("a")
    except OSError as exc:  # a lock file of another user's, say
        raise _not_writable(path.parent, exc) from exc
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            progress.waiting()
            logger.info(
                "another process is building %s into %s; waiting for it", recipe.name, path.parent
            )
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _discard_leftovers(cache: Path, recipe: Recipe, target: Path, why: str | None) -> None:
    # Under the lock, so no other builder of this recipe is running: whatever is here is
    # what a build that died left behind.
    for leftover in sorted(cache.glob(f".building-{recipe.folder}-*")):
        logger.warning(
            "an earlier build of %s was interrupted (it left %s); removing it and rebuilding",
            recipe.name,
            leftover,
        )
        shutil.rmtree(leftover, ignore_errors=True)
    if why is not None:
        logger.warning("%s is not a finished build (%s); rebuilding it", target, why)
        shutil.rmtree(target, ignore_errors=True)


def _build(recipe: Recipe, cache: Path, target: Path, progress: BuildProgress) -> Path:
    started = time.monotonic()
    logger.info(
        "building %s once for this machine into %s (%d steps; later starts reuse it)",
        recipe.name,
        target,
        len(recipe.steps),
    )
    work = Path(tempfile.mkdtemp(prefix=f".building-{recipe.folder}-", dir=cache))
    try:

        def step(n: int) -> None:
            progress.start(n)
            total = len(recipe.steps)
            logger.info("%s: step %d of %d, %s", recipe.name, n + 1, total, recipe.steps[n])

        runnable = recipe.run(work, step)
        files = {str(p.relative_to(work)): p.stat().st_size for p in _files(work)}
        _write_marker(work, recipe, runnable, files)
        work.chmod(0o755)  # mkdtemp made it private; the cache is readable like any other
        work.rename(target)
        _fsync_dir(cache)
    except OSError as exc:
        full = exc.errno == errno.ENOSPC
        raise ConfigurationError(
            f"building {recipe.name} in {cache} failed: {exc.strerror or exc}"
            + ("; free some space there or set MEMHUB_MODEL_CACHE to another disk" if full else "")
        ) from exc
    finally:
        shutil.rmtree(work, ignore_errors=True)  # gone already after the rename
        _give_back_memory()
    size = sum(files.values())
    logger.info(
        "built %s in %.0f s: %.0f MB in %s",
        recipe.name,
        time.monotonic() - started,
        size / 1e6,
        target,
    )
    return target / runnable


def _give_back_memory() -> None:
    """Return the build's freed memory to the system.

    glibc keeps freed heap for reuse: after a build a server held 0.8 GB it no longer used
    (0.09 GB after ``malloc_trim``, measured; docs/embedders.md). Elsewhere this does nothing.
    """
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):  # not glibc
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


def _write_marker(work: Path, recipe: Recipe, runnable: str, files: dict[str, int]) -> None:
    """Flush every file, then write the marker: it reaches the disk after what it lists."""
    for path in _files(work):
        with path.open("rb") as f:
            os.fsync(f.fileno())
    marker = {
        "model": recipe.name,
        "recipe": recipe.fingerprint,
        "runnable": runnable,
        "files": files,
    }
    with (work / MARKER).open("w") as f:
        json.dump(marker, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    for directory in {p.parent for p in _files(work)}:
        _fsync_dir(directory)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
