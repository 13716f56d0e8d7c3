"""``make test`` runs every stage even after one fails, names each that failed, exits non-zero.

The stages are replaced on the command line (``TEST_STAGES``) by two that fail (no such
target) around one that passes (a file make finds up to date), and the install step by nothing
(``DEV_STAMP=``), so the recipe itself is what runs: the real stages are the suite itself.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make_test(*stages: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "test", "DEV_STAMP=", f"TEST_STAGES={' '.join(stages)}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_every_stage_runs_and_each_failure_is_named() -> None:
    done = make_test("no-such-stage-a", "Makefile", "no-such-stage-b")
    assert done.returncode != 0
    started = re.findall(r"^memhub: make (\S+)$", done.stdout, re.M)
    assert started == ["no-such-stage-a", "Makefile", "no-such-stage-b"]
    assert "FAILED in: no-such-stage-a no-such-stage-b (of " in done.stderr


def test_make_test_passes_when_every_stage_passes() -> None:
    done = make_test("Makefile", "pyproject.toml")
    assert done.returncode == 0, done.stderr
    assert "memhub: make test passed: Makefile pyproject.toml" in done.stdout


def test_the_stages_are_lint_types_python_and_typescript() -> None:
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^TEST_STAGES := lint typecheck unit test-ts$", makefile, re.M)
