"""docs/agents.md's "Try it without an LLM", run line by line as a user would paste it.

The "LLM" is the scripted OpenAI-compatible server from memhub.testing, started with the
documented command (a real process on a real port); the database is the test's PostgreSQL.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from memhub.testing._serve import echo, load_script

ROOT = Path(__file__).resolve().parents[2]


def documented_commands() -> list[str]:
    text = (ROOT / "docs" / "agents.md").read_text()
    section = text.split("## Try it without an LLM", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "the section lost its command block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def argv_and_env(line: str) -> tuple[list[str], dict[str, str]]:
    words = shlex.split(line.removesuffix("&"))
    env: dict[str, str] = {}
    while "=" in words[0]:
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if words[0] == ".venv/bin/python":  # the checkout's venv; the tests run in it (or a copy)
        words[0] = sys.executable
    return words, env


def test_both_examples_run_against_the_documented_fake_llm(db_url: str, tmp_path: Path) -> None:
    server_line, support_line, arkos_line, kill_line = documented_commands()
    assert server_line.endswith("&") and kill_line == "kill %1"
    base_env = {
        **os.environ,
        "MEMHUB_DATABASE_URL": db_url,
        "MEMHUB_DATA_DIR": str(tmp_path),
        # The ARKOS example recalls right after its adds; recall waits for its own turns'
        # ingestion for at most 3 s by default (test_queue_acceptance holds that bound), and
        # beside eight CPU burners the worker's first embedding took longer: the example's
        # output, not the bound, is what this test checks.
        "MEMHUB_RECALL_WAIT_TIMEOUT": "120",
    }
    argv, _ = argv_and_env(server_line)
    server = subprocess.Popen(
        argv, cwd=ROOT, env=base_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert "memhub fake LLM" in banner and "2 scripted replies" in banner, banner
        outputs = []
        for line in (support_line, arkos_line):
            argv, env = argv_and_env(line)
            done = subprocess.run(
                argv, cwd=ROOT, env={**base_env, **env}, capture_output=True, text=True, timeout=180
            )
            assert done.returncode == 0, done.stderr[-3000:]
            outputs.append(done.stdout)
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert server.returncode == 0
    support, arkos = outputs
    assert "ticket-1876: Sorry to hear that!" in support
    assert "ticket-1901: Yes: after the session reset" in support
    recalled = support.split("recalled:", 1)[1]
    assert "I can't log into my dashboard again." in recalled
    assert "Sorry to hear that" not in recalled  # raw mode: the agent's replies stay short-term
    assert "allergic to peanuts" in arkos
    assert arkos.count("Suggest a snack for my hike.") == 1  # the question is not in twice


def test_script_files_and_the_echo(tmp_path: Path) -> None:
    replies, default = load_script(ROOT / "examples" / "fake_llm_replies.json")
    assert len(replies) == 2 and default is None
    path = tmp_path / "s.json"
    path.write_text('["hi", {"content": "there"}]')
    assert load_script(path) == (["hi", {"content": "there"}], None)
    path.write_text('{"replies": [], "default": "ok"}')
    assert load_script(path) == ([], "ok")
    path.write_text('[{"nope": 1}]')
    with pytest.raises(ValueError, match="reply 1"):
        load_script(path)
    request = {"messages": [{"role": "user", "content": "hello"}]}
    assert echo(request).endswith("You said: hello")


def test_memhub_fake_llm_serves_chat_completions() -> None:
    import json
    import urllib.request

    command = [str(Path(sys.executable).parent / "memhub"), "fake-llm", "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        base_url = re.search(r"(http://127\.0\.0\.1:\d+/v1)", banner)
        assert base_url is not None and "then echo" in banner, banner
        body = {"model": "any", "messages": [{"role": "user", "content": "ping"}]}
        request = urllib.request.Request(
            base_url.group(1) + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            answer = json.load(response)
        assert answer["choices"][0]["message"]["content"].endswith("You said: ping")
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert server.returncode == 0
