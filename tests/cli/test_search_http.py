"""``memhub search`` against a real ``memhub serve`` subprocess: over HTTP, nothing heavy loaded."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from memhub import AsyncMemory, MemhubSettings
from memhub.cli import main
from tests.ops.procs import ADMIN_KEY, free_port, memhub_env, start_server, stop

# Runs the CLI and reports which heavy modules the process loaded along the way.
PROBE = (
    "import sys\n"
    "from memhub.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "heavy = ('memhub.memory', 'memhub.store', 'onnxruntime', 'psycopg', 'numpy', 'pydantic')\n"
    "print('loaded:', [m for m in heavy if m in sys.modules], file=sys.stderr)\n"
    "sys.exit(code)\n"
)


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[str]:
    """``memhub serve`` on the test's database (admin key ``ADMIN_KEY``)."""
    env = memhub_env(MEMHUB_DATABASE_URL=db_url, MEMHUB_DATA_DIR=str(tmp_path / "serve"))
    proc, url = start_server(env, tmp_path / "serve.log")
    try:
        yield url
    finally:
        stop(proc, signal.SIGTERM)


async def seed(settings: MemhubSettings) -> str:
    async with AsyncMemory(settings=settings) as memory:
        added = await memory.add("I keep bees.", user_id="ada", infer=False, wait=True)
        await memory.add("My sister lives in Lyon.", user_id="ada", infer=False, wait=True)
    return str(added["results"][0]["id"])


def test_search_asks_the_running_server(server: str, settings: MemhubSettings) -> None:
    from memhub._portal import run_sync

    bees = run_sync(seed(settings))
    env = memhub_env(MEMHUB_SERVER_URL=server, MEMHUB_API_KEY=ADMIN_KEY)
    argv = [sys.executable, "-c", PROBE, "search", "bees", "--user-id", "ada", "--limit", "1"]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == bees and done.stdout.rstrip().endswith("I keep bees.")
    assert "loaded: []" in done.stderr  # no driver, no model: what makes it fast
    assert "searching in this process" not in done.stderr

    # A wrong key is the server's 401, said in one line (exit 1), not a traceback.
    env["MEMHUB_API_KEY"] = "wrong"
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "answered 401" in done.stderr


def test_without_a_server_search_runs_here_and_says_why_it_is_slow(
    settings: MemhubSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from memhub._portal import run_sync

    run_sync(seed(settings))
    monkeypatch.setenv("MEMHUB_API_KEY", "some-key")
    monkeypatch.setenv("MEMHUB_PORT", str(free_port()))  # nothing listens there
    assert settings.database_url is not None
    code = main(["--database-url", settings.database_url, "search", "Lyon", "--user-id", "ada"])
    out = capsys.readouterr()
    assert code == 0 and "My sister lives in Lyon." in out.out
    assert "no server answers on http://127.0.0.1:" in out.err
    assert "loads the embedding model" in out.err


def test_an_unreachable_server_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMHUB_SERVER_URL", f"http://127.0.0.1:{free_port()}")
    assert main(["search", "x", "--user-id", "ada", "--timeout", "2"]) == 1
    assert "memhub: cannot reach http://127.0.0.1:" in capsys.readouterr().err


def test_search_takes_max_tokens_and_rerank(
    settings: MemhubSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The REST search's ``max_tokens`` and ``rerank``, in the CLI (the in-process path)."""
    from memhub._portal import run_sync

    run_sync(seed(settings))
    monkeypatch.setenv("MEMHUB_PORT", str(free_port()))  # no server: searched in-process
    assert settings.database_url is not None
    base = ["--database-url", settings.database_url, "search", "bees", "--user-id", "ada"]
    assert main([*base, "--limit", "5"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 2
    assert main([*base, "--limit", "5", "--max-tokens", "3"]) == 0  # "I keep bees." is 3
    assert [line.split()[-3:] for line in capsys.readouterr().out.strip().splitlines()] == [
        ["I", "keep", "bees."]
    ]
    assert main([*base, "--rerank"]) != 0  # no MEMHUB_RERANKER: refused, said in one line
    assert "rerank" in capsys.readouterr().err.lower()
    assert main([*base, "--limit", "5", "--min-score-ratio", "1.0"]) == 0  # the best only
    assert len(capsys.readouterr().out.strip().splitlines()) == 1
