"""Mem0 2.2.x through ``bench.llm_quality``: the same conversations, judge and server as memhub.

``python -m bench.llm_quality --system mem0 --url http://127.0.0.1:PORT/v1 --model NAME``
(from ``.venv-bench``, which has mem0ai; nothing here imports mem0 until a run starts, so the
test suite's venv can import this module).

What Mem0 2.2.1 does with a conversation, read from ``mem0/memory/main.py``:

- ``add(messages, user_id=..., metadata=...)`` with ``infer=True`` makes **one** LLM call per
  ``add`` (its "additive" pipeline): a system prompt of 7,924 tokens (Qwen's tokenizer), the
  session's messages as ``role: content`` lines (system messages included), the user's 10
  nearest stored memories and its last 10 messages: ~8,000 tokens, over a 4,096-token
  server's context (run the server with ``--context 16384``). It only ever ADDs: no update,
  no delete, so a change of fact or a request to forget leaves the old memory in place.
- ``timestamp=`` raises ("platform-only"); the session's date goes to ``metadata["created_at"]``,
  which Mem0 keeps as the memory's creation time, but its prompt's "Observation Date" and
  "Current Date" are today's date, so "last month" is resolved against the day of the run.
- The LLM is Mem0's ``openai`` provider with ``openai_base_url`` pointed at the llama.cpp
  server; every response passes through the config's ``response_callback``, which is where the
  calls and the server's own token counts (``response.usage``) are read here.
- Mem0 has no episodes: ``get_all`` returns only what it extracted, and every memory is judged.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.llm_quality import Score, score_one

log = logging.getLogger(__name__)

# Mem0's get_all returns 20 by default; a conversation here never leaves near this many.
_ALL = 1000


@dataclass
class LLMUsage:
    """LLM calls and the server's token counts, read from each chat-completion response."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: int = 0  # add() calls whose LLM request raised (no response to count)

    def record(self, response: Any) -> None:
        """Count one response; its ``usage`` may be an object or a dict, or missing."""
        self.calls += 1
        usage = getattr(response, "usage", None)
        if usage is None and isinstance(response, dict):
            usage = response.get("usage")
        if usage is None:
            return
        self.prompt_tokens += _count(usage, "prompt_tokens")
        self.completion_tokens += _count(usage, "completion_tokens")

    def callback(self, _llm: Any, response: Any, _params: Any) -> None:
        """Mem0's ``response_callback(llm, response, params)``."""
        self.record(response)


def _count(usage: Any, name: str) -> int:
    value = usage.get(name) if isinstance(usage, dict) else getattr(usage, name, None)
    return value if isinstance(value, int) else 0


def llm_config(url: str, model: str, usage: LLMUsage, temperature: float) -> dict[str, Any]:
    """Mem0's ``llm`` config for an OpenAI-compatible server at ``url`` (a ``/v1`` URL)."""
    return {
        "provider": "openai",
        "config": {
            "model": model,
            "openai_base_url": url,
            "api_key": "sk-local-placeholder",  # the local server checks no key
            "temperature": temperature,
            "response_callback": usage.callback,
        },
    }


def run_one(memory: Any, conv: dict[str, Any], user: str, score: Score, usage: LLMUsage) -> Any:
    """Add ``conv`` session by session, then judge every memory Mem0 stored for ``user``."""
    started = time.monotonic()
    for session in conv["sessions"]:
        try:
            memory.add(session["messages"], user_id=user, metadata={"created_at": session["date"]})
        except Exception as exc:  # a refused call is counted and the run goes on
            usage.failed += 1
            log.warning("%s: Mem0's add failed: %s", conv["id"], exc)
        score.turns += len(session["messages"])
    score.seconds += time.monotonic() - started
    results = memory.get_all(filters={"user_id": user}, top_k=_ALL)["results"]
    facts = [r["memory"] for r in results]
    judged = score_one(conv, facts, [], user, score)
    return {"id": conv["id"], "user": user, "facts": facts, "episodes": []} | judged


def run(args: argparse.Namespace, conversations: list[dict[str, Any]]) -> dict[str, Any]:
    """Mem0 on pgvector (embedded PostgreSQL) with MiniLM, its LLM the server at ``args.url``."""
    from bench.mem0_runner import mem0_config
    from bench.pg import BenchPostgres

    score, usage, details = Score(), LLMUsage(), []
    scratch = Path(tempfile.mkdtemp(prefix="llm-quality-mem0-"))
    with contextlib.ExitStack() as cleanup:
        cleanup.callback(shutil.rmtree, scratch, ignore_errors=True)
        pg = cleanup.enter_context(BenchPostgres(scratch / "pg"))
        config = mem0_config(pg.create_database("llm_quality"), maxconn=2)
        config["llm"] = llm_config(args.url, args.model, usage, args.temperature)
        from mem0 import Memory  # imported only here: the test venv has no mem0ai

        memory = Memory.from_config(config)
        try:
            for conv in conversations:
                details.append(run_one(memory, conv, f"u-{conv['id']}", score, usage))
                print(conv["id"], details[-1]["facts"], details[-1]["verdicts"], flush=True)
        finally:
            pool = getattr(memory.vector_store, "connection_pool", None)
            if pool is not None:
                pool.close()
    score.calls = usage.calls
    score.prompt_tokens = usage.prompt_tokens
    score.completion_tokens = usage.completion_tokens
    return {"score": score, "details": details, "failed_llm_calls": usage.failed}
