"""Every command of README.md and docs/*.md runs from a checkout as written.

memhub is on no package index, so an install line names the checkout (``pip install -e``) or a
wheel ``make dist`` built, never ``pip install memhub``; a command runs from the checkout's
venv (``.venv/bin/...``: Debian has no bare ``python``). Each documented ``memhub`` command
and ``python -m memhub...`` module answers ``--help`` (the way docs/agents.md's commands are
run by tests/agent/test_try_without_an_llm.py). The docs' Python blocks are run by
tests/test_documented_snippets.py.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent  # the venv the tests run in: the checkout's .venv in CI


def shell_lines() -> list[tuple[str, str]]:
    """``(file, line)`` for every command line of the docs' bash blocks (prompts dropped)."""
    found = []
    for path in DOCS:
        for block in re.findall(r"```(?:bash|sh|shell)\n(.*?)```", path.read_text(), re.S):
            for line in block.splitlines():
                line = line.split("  #")[0].strip().removeprefix("$ ")
                if line and not line.startswith("#"):
                    found.append((path.name, line))
    return found


def inline_commands() -> list[tuple[str, str, str]]:
    """``(file, code, the text around it)`` for the docs' inline code spans that are commands."""
    spans = []
    for path in DOCS:
        text = path.read_text()
        for found in re.finditer(r"`([^`\n]+)`", text):
            code = found.group(1)
            if re.match(r"(pip|python3?(\.\d+)?|\S*/python) ", code) or " pip install" in code:
                spans.append(
                    (path.name, code, text[max(0, found.start() - 100) : found.end() + 40])
                )
    return spans


def words_of(line: str) -> list[str]:
    try:
        words = shlex.split(line.removesuffix("&").removesuffix("\\"))
    except ValueError:  # an unbalanced quote in prose
        words = line.split()
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):
        words.pop(0)
    return words


def test_no_command_needs_an_index_memhub_is_not_on_or_a_bare_python() -> None:
    extras = set(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    )
    wrong = []
    lines = [(where, line, line) for where, line in shell_lines()] + inline_commands()
    for where, line, context in lines:
        words = words_of(line)
        if not words:
            continue
        if words[0] == "python":
            wrong.append((where, line, "Debian has no bare python: name the venv's"))
        for match in re.finditer(r"pip install (?:-e )?'?([^' ]+)'?", line):
            target = match.group(1)
            if re.match(r"memhub\b", target) and "PyPI" not in context + line:
                wrong.append((where, line, "memhub is not on PyPI: install the checkout"))
            for extra in re.findall(r"\[([^\]]+)\]", target):
                unknown = set(extra.split(",")) - extras
                if unknown and target.startswith((".", "dist/")):
                    wrong.append((where, line, f"no such extra {sorted(unknown)}"))
    assert not wrong, "\n".join(f"{w}: {line!r}: {why}" for w, line, why in wrong)


def _help_commands() -> list[list[str]]:
    """The distinct ``memhub SUBCOMMAND`` and ``python -m MODULE`` of the docs, with --help."""
    seen: dict[tuple[str, ...], list[str]] = {}
    for _, line in shell_lines():
        for part in line.split("|"):
            words = words_of(part)
            if not words:
                continue
            program = Path(words[0]).name
            if program == "memhub" and len(words) > 1:
                seen.setdefault(("memhub", words[1]), [str(BIN / "memhub"), words[1], "--help"])
            elif program == "python" and words[1:2] == ["-m"] and words[2].startswith("memhub"):
                seen.setdefault(("python", words[2]), [sys.executable, "-m", words[2], "--help"])
    return list(seen.values())


def test_the_documented_commands_answer_help() -> None:
    commands = _help_commands()
    names = sorted(f"{Path(cmd[0]).name} {cmd[-2]}" for cmd in commands)
    assert len(commands) >= 6, names  # the scan still finds the docs' commands
    for argv in commands:
        done = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "usage:" in done.stdout, (argv, done.stderr[-2000:])


@pytest.mark.parametrize("extra", [None, "mcp"])
def test_error_messages_name_an_install_that_works(extra: str | None) -> None:
    from memhub.errors import install_hint

    hint = install_hint(extra)
    command = hint.split("run ", 1)[1].split(" (", 1)[0]
    assert command.startswith(".venv/bin/pip install -e '.")
    assert "once memhub is on PyPI" in hint
    if extra is not None:
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        assert extra in extras["optional-dependencies"]
