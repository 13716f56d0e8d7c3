"""The Mem0 mode of the quality bench without mem0ai: how calls and the server's token counts
are read from responses, the LLM config it hands Mem0, and how a conversation is added and
judged (``_Mem0Stand`` stands in for Mem0's ``Memory``: the real one runs only in .venv-bench)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.llm_quality import SETS, Score, rescore
from bench.llm_quality_mem0 import LLMUsage, llm_config, run_one


def test_usage_counts_each_response_and_adds_the_servers_token_counts() -> None:
    usage = LLMUsage()
    usage.record(SimpleNamespace(usage=SimpleNamespace(prompt_tokens=8026, completion_tokens=22)))
    usage.record({"usage": {"prompt_tokens": 310, "completion_tokens": 5}})
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (2, 8336, 27)


def test_a_response_without_usage_is_a_call_with_no_tokens() -> None:
    usage = LLMUsage()
    usage.record(SimpleNamespace(usage=None))
    usage.record({"choices": []})
    usage.record(SimpleNamespace(usage=SimpleNamespace(prompt_tokens=None, completion_tokens=3)))
    assert (usage.calls, usage.prompt_tokens, usage.completion_tokens) == (3, 0, 3)


def test_the_config_points_mem0s_openai_provider_at_the_server_and_counts_through_it() -> None:
    usage = LLMUsage()
    config = llm_config("http://127.0.0.1:9/v1", "qwen.gguf", usage, 0.0)
    assert config["provider"] == "openai"
    settings = config["config"]
    assert (settings["openai_base_url"], settings["model"]) == (
        "http://127.0.0.1:9/v1",
        "qwen.gguf",
    )
    response = SimpleNamespace(usage=SimpleNamespace(prompt_tokens=7, completion_tokens=1))
    settings["response_callback"](object(), response, {})
    assert (usage.calls, usage.prompt_tokens) == (1, 7)


CONV: dict[str, Any] = {
    "id": "m01",
    "sessions": [
        {
            "date": "2023-02-01T10:00:00",
            "messages": [{"role": "user", "content": "I live in Madrid."}],
        },
        {
            "date": "2023-05-15T10:00:00",
            "messages": [
                {"role": "user", "content": "We moved to Dublin."},
                {"role": "assistant", "content": "Noted."},
            ],
        },
    ],
    "facts": [{"about": "user", "all": ["dublin"]}],
    "changes": [
        {
            "old": {"about": "user", "all": ["madrid"]},
            "new": {"about": "user", "all": ["dublin"]},
        }
    ],
    "forgotten": [],
    "assistant_words": [],
}


class _Mem0Stand:
    """Mem0's ``add`` / ``get_all`` as the bench calls them; the second session's add fails."""

    def __init__(self) -> None:
        self.added: list[tuple[int, str, dict[str, Any]]] = []

    def add(
        self, messages: list[dict[str, str]], *, user_id: str, metadata: dict[str, Any]
    ) -> None:
        self.added.append((len(messages), user_id, metadata))
        if len(self.added) == 2:
            raise RuntimeError("request exceeds the available context size")

    def get_all(self, *, filters: dict[str, str], top_k: int) -> dict[str, Any]:
        assert filters == {"user_id": "u-m01"}
        return {"results": [{"memory": "User lives in Madrid"}, {"memory": "I live in Madrid."}]}


def test_each_session_is_added_at_its_date_and_every_memory_is_judged() -> None:
    memory, score, usage = _Mem0Stand(), Score(), LLMUsage()
    detail = run_one(memory, CONV, "u-m01", score, usage)
    assert memory.added == [
        (1, "u-m01", {"created_at": "2023-02-01T10:00:00"}),
        (2, "u-m01", {"created_at": "2023-05-15T10:00:00"}),
    ]
    assert usage.failed == 1  # the refused call is counted and the run went on to judge
    assert detail["verdicts"] == ["stale", "raw_turn"]
    assert detail["episodes"] == []
    assert (score.turns, score.kept, score.changes_right) == (3, 0, 0)


def test_a_saved_run_is_judged_again_with_what_it_measured(tmp_path: Path) -> None:
    """``--rescore`` on a Mem0 run's JSON (no episodes): the verdicts are redone, the counts
    the run measured (turns, calls, tokens) are kept."""
    conv = json.loads(SETS["dev"].read_text())["conversations"][0]
    measured = {"turns": 2, "seconds": 9.0, "calls": 1, "prompt_tokens": 8026}
    saved = {
        "set": "dev",
        "totals": measured | {"completion_tokens": 22},
        "conversations": [
            {"id": conv["id"], "user": "u-x", "facts": ["I said hello."], "episodes": []}
        ],
    }
    path = tmp_path / "run.json"
    path.write_text(json.dumps(saved))
    again = rescore(path)
    assert again["conversations"][0]["verdicts"] == ["copy_of_turn"]
    assert again["result"]["stored_facts"] == 1
    assert again["result"]["prompt_tokens_per_turn"] == 4013.0
