"""Every Python block of README.md and docs/*.md runs as written (the shell commands are
tests/test_documented_commands.py's).

Each block runs in a subprocess of its own, against one embedded database the blocks share
(``MEMHUB_DATABASE_URL``) with the suite's embedder (``MEMHUB_EMBEDDER=minilm``). A block
that needs an OpenAI-compatible model reads ``OPENAI_API_KEY`` as the docs say; here the
OpenAI SDK is pointed (``OPENAI_BASE_URL``) at memhub.testing's scripted server, since no
capable model runs in CI: those blocks check that they run, not what a model would answer.
A block with a top-level ``await`` runs as it would typed into ``python -m asyncio`` (or a
notebook); a block defining ``test_`` functions is a test file, run by pytest outside the
checkout.

A block that cannot run as written (it needs a server this machine lacks, or it shows a
signature) says so in the markdown, on the line before it::

    <!-- snippet: skip (needs an Ollama server) -->

and is counted: the test of the markers below names each skipped block and its reason.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from memhub.testing import ScriptedOpenAIServer
from tests.fix_postgres import TEMPLATE, database_url

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SKIP = re.compile(r"<!-- snippet: skip \((?P<reason>[^)]+(?:\([^)]*\)[^)]*)*)\) -->\s*$")
#: What the scripted model says to every chat request of a block.
ANSWER = "Let's get you back into your dashboard: reset your password from the login page."
#: How many blocks are not run: a change of the docs that skips one more (or runs one more)
#: changes this number too, so a review sees it.
SKIPPED = 6

# Runs a block as `python -m asyncio` would: top-level await allowed, on one event loop.
# First, the servers the docs name by default (OpenAI, a local Ollama, vLLM...) become the
# scripted one: the block's own code is left as written.
RUNNER = textwrap.dedent(
    """
    import ast, asyncio, os, sys, types
    import memhub.llm, memhub.llm.openai_chat
    here = os.environ["OPENAI_BASE_URL"]  # http://127.0.0.1:PORT/v1
    memhub.llm.openai_chat.OPENAI_BASE_URL = here
    local = here.replace("127.0.0.1", "localhost")  # not OpenAI: needs no key
    for provider, url in memhub.llm._DEFAULT_BASE_URLS.items():
        memhub.llm._DEFAULT_BASE_URLS[provider] = url and local
    path = sys.argv[1]
    code = compile(open(path).read(), path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    module = types.ModuleType("__main__")
    sys.modules["__main__"] = module
    result = eval(code, module.__dict__)
    if result is not None:
        asyncio.run(result)
    """
)


def scripted_answer(request: dict[str, Any]) -> str:
    """What the scripted model says: facts when asked for facts (docs/llm.md's first block),
    else a support agent's answer (docs/agents.md)."""
    if "Extract facts" in json.dumps(request.get("messages", [])):
        return '{"facts": ["The user moved to Lyon last spring"]}'
    return ANSWER


@dataclass(frozen=True)
class Snippet:
    """One ```python block: where it is, its code, and why it is skipped (if it is)."""

    file: str
    line: int
    code: str
    skip: str | None

    @property
    def name(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def is_test_file(self) -> bool:
        return re.search(r"^(async )?def test_", self.code, re.M) is not None


def snippets() -> list[Snippet]:
    """Every ```python block of the docs, with the skip marker on the line before it."""
    found = []
    for path in DOCS:
        text = path.read_text("utf-8")
        for block in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M):
            before = text[: block.start()].rstrip("\n").rsplit("\n", 1)[-1]
            marker = SKIP.match(before.strip())
            line = text.count("\n", 0, block.start()) + 1
            name = str(path.relative_to(ROOT))
            found.append(Snippet(name, line, block.group(1), marker and marker["reason"]))
    return found


@pytest.fixture(scope="module")
def shared_database(pg_admin_url: str) -> Iterator[str]:
    """One migrated database for all the blocks (each block's data under its own users)."""
    name = "memhub_test_snippets"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )
        conn.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {} STRATEGY FILE_COPY").format(
                sql.Identifier(name), sql.Identifier(TEMPLATE)
            )
        )
    yield database_url(pg_admin_url, name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@pytest.fixture(scope="module")
def scripted_model() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(default=scripted_answer) as server:
        yield server


def test_the_skipped_blocks_are_few_and_each_says_why() -> None:
    found = snippets()
    skipped = [f"{s.name}: {s.skip}" for s in found if s.skip]
    assert len(found) >= 19, [s.name for s in found]  # the scan still finds the docs' blocks
    assert len(skipped) == SKIPPED, "\n".join(skipped)
    # Visible in the run's output (pytest -rA / -s): how many blocks do not run, and why.
    print(f"{len(found)} Python blocks in the docs, {len(skipped)} not run:", *skipped, sep="\n")


@pytest.mark.parametrize("snippet", [s for s in snippets() if not s.skip], ids=lambda s: s.name)
def test_the_block_runs_as_written(
    snippet: Snippet,
    shared_database: str,
    scripted_model: ScriptedOpenAIServer,
    tmp_path: Path,
) -> None:
    env = {
        **os.environ,
        "MEMHUB_DATABASE_URL": shared_database,
        "OPENAI_API_KEY": "sk-scripted",
        "OPENAI_BASE_URL": scripted_model.base_url,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    source = tmp_path / ("test_snippet.py" if snippet.is_test_file else "snippet.py")
    source.write_text(snippet.code, "utf-8")
    if snippet.is_test_file:  # outside the checkout: none of its pytest settings apply
        argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", source.name]
    else:
        argv = [sys.executable, "-c", RUNNER, source.name]
    done = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"{snippet.name}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    if "print(" in snippet.code:
        assert done.stdout.strip(), f"{snippet.name} printed nothing"
    # A streamed answer is printed once: its last chunk ("done") carries the whole text again.
    for line in done.stdout.splitlines():
        assert line.count(ANSWER) <= 1, f"{snippet.name} printed the answer twice: {line}"
