"""What a real model makes of 30 labelled conversations: extraction and supersession quality.

Each conversation in ``bench/llm_set/conversations.json`` (written for this bench) is added
session by session through the public API (``AsyncMemory.add(messages, wait=True)``) against an
OpenAI-compatible server; then the current facts are scored against the labels:

- precision: facts stored that match a fact to keep; recall: facts to keep that a stored fact
  matches (a label matches when a fact holds most of its content words);
- changes: a change of fact is right when the old fact is no longer current and the new one
  is; a request to forget is right when no current fact matches what was to be forgotten;
- LLM calls, prompt and completion tokens per turn, seconds per turn (wall time of ``add``).

Run a server first (``python tools/llm_tier.py serve --model 1.5b``), then
``python -m bench.llm_quality --url http://127.0.0.1:PORT/v1 --label "Qwen2.5-Coder-1.5B"``.
Quality is reported, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import platform
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memhub import AsyncMemory, MemhubSettings
from memhub.engine.grounding import content_words

SET = Path(__file__).parent / "llm_set" / "conversations.json"
NAMES = ("Ada", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Juno")


@dataclass
class Score:
    """Counts over the conversations run."""

    conversations: int = 0
    turns: int = 0
    stored: int = 0
    stored_matching: int = 0
    to_keep: int = 0
    kept: int = 0
    changes: int = 0
    changes_right: int = 0
    seconds: float = 0.0
    calls: float = 0.0
    prompt_tokens: float = 0.0
    completion_tokens: float = 0.0

    def row(self) -> dict[str, Any]:
        def ratio(a: float, b: float) -> float | None:
            return round(a / b, 2) if b else None

        return {
            "conversations": self.conversations,
            "precision": ratio(self.stored_matching, self.stored),
            "recall": ratio(self.kept, self.to_keep),
            "changes_right": f"{self.changes_right}/{self.changes}",
            "calls_per_turn": ratio(self.calls, self.turns),
            "prompt_tokens_per_turn": ratio(self.prompt_tokens, self.turns),
            "completion_tokens_per_turn": ratio(self.completion_tokens, self.turns),
            "seconds_per_turn": ratio(self.seconds, self.turns),
        }


def matches(label: str, fact: str, name: str) -> bool:
    """Does ``fact`` hold most (60 %) of ``label``'s content words?"""
    wanted = content_words(label, [name])
    if not wanted:
        return False
    return len(wanted & content_words(fact, [name])) >= max(1, math.ceil(0.6 * len(wanted)))


def said_in(conv: dict[str, Any]) -> set[str]:
    return {m["content"].strip() for session in conv["sessions"] for m in session}


def score_one(
    conv: dict[str, Any], memories: list[str], user: str, score: Score, raw: list[bool] | None
) -> list[bool]:
    """Score what is current after ``conv``: extracted facts only (raw turns kept after a
    refusal are the user's words, not the model's extraction). ``raw`` flags the raw turns;
    without it (older results) a memory saying exactly a turn is taken for one."""
    said = said_in(conv)
    flags = raw if raw is not None else [m.strip() in said for m in memories]
    facts = [m for m, is_raw in zip(memories, flags, strict=True) if not is_raw]
    keep = conv["keep"]
    score.conversations += 1
    score.stored += len(facts)
    score.stored_matching += sum(any(matches(k, f, user) for k in keep) for f in facts)
    score.to_keep += len(keep)
    score.kept += sum(any(matches(k, f, user) for f in facts) for k in keep)
    right = []
    for change in conv["changes"]:
        old_gone = not any(matches(change["old"], f, user) for f in facts)
        new_there = any(matches(change["new"], f, user) for f in facts)
        right.append(old_gone and new_there)
    for forgotten in conv["forgotten"]:
        # forgotten means gone entirely: neither a fact nor the raw turn still says it
        right.append(not any(matches(forgotten, m, user) for m in memories))
    score.changes += len(right)
    score.changes_right += sum(right)
    return right


async def run_one(
    memory: AsyncMemory, conv: dict[str, Any], name: str, score: Score
) -> dict[str, Any]:
    user = f"{name.lower()}-{conv['id']}"
    started = time.monotonic()
    for session in conv["sessions"]:
        await memory.add(session, user_id=user, wait=True)
        score.turns += len(session)
    score.seconds += time.monotonic() - started
    results = (await memory.get_all(user_id=user))["results"]
    memories = [r["memory"] for r in results]
    # a raw turn carries its role (and, in PostgreSQL, memory_type "turn"); a fact does not
    raw = [r.get("memory_type") == "turn" or "role" in r for r in results]
    right = score_one(conv, memories, user, score, raw)
    return {
        "id": conv["id"],
        "user": user,
        "memories": memories,
        "raw": raw,
        "changes_right": right,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    conversations = json.loads(SET.read_text())["conversations"]
    if args.limit:
        # a subset that keeps every kind: take conversations round robin over kinds
        by_kind: dict[str, list[dict[str, Any]]] = {}
        for conv in conversations:
            by_kind.setdefault(conv["kind"], []).append(conv)
        picked: list[dict[str, Any]] = []
        while len(picked) < args.limit and any(by_kind.values()):
            for group in by_kind.values():
                if group and len(picked) < args.limit:
                    picked.append(group.pop(0))
        conversations = picked
    score = Score()
    details = []
    with tempfile.TemporaryDirectory() as data_dir:
        settings = MemhubSettings(
            database_url="memory://",
            data_dir=Path(data_dir),
            llm_provider="llamacpp",
            llm_base_url=args.url,
            llm_model=args.model,
            llm_timeout=600.0,
            llm_context_tokens=args.context,
            consolidation_delay=0.0,
            wait_timeout=900.0,
            job_max_attempts=2,
            job_retry_base_seconds=0.1,
        )
        async with AsyncMemory(settings=settings) as memory:
            for n, conv in enumerate(conversations):
                details.append(await run_one(memory, conv, NAMES[n % len(NAMES)], score))
                print(conv["id"], details[-1]["memories"], flush=True)
            engine = await memory._services()
            usage = await engine.store.usage_stats()
    score.calls = usage.get("llm_calls", 0.0)
    score.prompt_tokens = usage.get("prompt_tokens", 0.0)
    score.completion_tokens = usage.get("completion_tokens", 0.0)
    return {
        "label": args.label,
        "machine": f"{platform.processor() or platform.machine()}, {args.machine}",
        "result": score.row(),
        "totals": asdict(score),
        "conversations": details,
    }


def rescore(path: Path) -> dict[str, Any]:
    """Score the memories a saved run left again (after a change to the scoring)."""
    saved = json.loads(path.read_text())
    by_id = {c["id"]: c for c in json.loads(SET.read_text())["conversations"]}
    totals = saved["totals"]
    score = Score(
        turns=totals["turns"],
        seconds=totals["seconds"],
        calls=totals["calls"],
        prompt_tokens=totals["prompt_tokens"],
        completion_tokens=totals["completion_tokens"],
    )
    for n, detail in enumerate(saved["conversations"]):
        user = detail.get("user") or f"{NAMES[n % len(NAMES)].lower()}-{detail['id']}"
        memories = detail.get("memories", detail.get("facts", []))
        raw = detail.get("raw")
        detail["changes_right"] = score_one(by_id[detail["id"]], memories, user, score, raw)
    return saved | {"result": score.row(), "totals": asdict(score)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True, help="the server's /v1 URL")
    parser.add_argument("--model", default="local", help="model name sent to the server")
    parser.add_argument("--label", default="model", help="name in the table")
    parser.add_argument("--context", type=int, default=4096)
    parser.add_argument("--limit", type=int, default=0, help="run a subset of every kind")
    parser.add_argument("--machine", default="", help="CPU and load, for the table")
    parser.add_argument("--out", type=Path, help="write the JSON result here")
    parser.add_argument("--rescore", type=Path, help="score a saved result again, no model")
    args = parser.parse_args()
    result = rescore(args.rescore) if args.rescore else asyncio.run(run(args))
    print(json.dumps(result["result"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
