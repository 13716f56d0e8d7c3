"""The sync ``Memory`` is generated from ``AsyncMemory`` (tools/gen_sync.py) and kept fresh."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from memhub import AsyncMemory, Memory

ROOT = Path(__file__).parents[1]


def test_generated_sync_memory_is_up_to_date() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "tools/gen_sync.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    # The message names the command that regenerates the file.
    assert done.returncode == 0, done.stderr


def test_every_public_member_has_a_docstring() -> None:
    for cls in (AsyncMemory, Memory):
        for name, member in inspect.getmembers(cls):
            if name.startswith("_") or not (callable(member) or isinstance(member, property)):
                continue
            assert inspect.getdoc(member), f"{cls.__name__}.{name} has no docstring"
    assert inspect.getdoc(Memory) and "Args:" in (inspect.getdoc(Memory) or "")


def test_the_sync_docstrings_are_the_async_ones() -> None:
    for name, method in inspect.getmembers(AsyncMemory, inspect.iscoroutinefunction):
        if not name.startswith("_") and name != "aclose":
            assert inspect.getdoc(getattr(Memory, name)) == inspect.getdoc(method), name


def test_a_stale_file_fails_the_check(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_sync
    finally:
        sys.path.remove(str(ROOT / "tools"))
    edited = tmp_path / "sync_memory.py"
    edited.write_text(gen_sync.TARGET.read_text("utf-8") + "\n# edited by hand\n", "utf-8")
    assert gen_sync.stale(edited)
    assert not gen_sync.stale(gen_sync.TARGET)
    assert gen_sync.COMMAND == "python tools/gen_sync.py"  # what the failure message says
