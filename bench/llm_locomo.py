"""LoCoMo recall@10 of the facts a real model's consolidation leaves, against the raw turns.

One LoCoMo dev conversation (default: index 1, ``conv-30``, the shortest) is added session by
session through the public API, ``AsyncMemory.add(messages, user_id=..., timestamp=<session
date>, wait=True)``, twice in separate in-process stores:

- **facts**: with the LLM configured (consolidation on, ``infer=True``): the turns stay as
  episodes and the model's facts are added beside them (issue 35);
- **raw**: the same messages with ``infer=False`` (each turn stored as said).

Every turn is a ``user`` message ``"<speaker>: <text>"`` (LoCoMo's two speakers are both people,
so neither is the assistant). Then, for each category 1-4 question whose evidence all lies in
the ingested sessions, ``search(question, limit=10)``; each returned memory is mapped back to
the LoCoMo turns it came from: ``add()`` answers ``queued_turn_ids`` (the stored turn ids, in the
order of the messages, so turn id -> ``dia_id``), and a memory's ``history()`` names the turns of
every change (``turn_ids``: a fact's source turns, those an UPDATE added; a raw turn's own turn).
recall@10 is the share of a question's evidence turns that the 10 memories returned came from; for
raw turns (one turn each) it is ``bench.metrics`` recall@10 over the ranked ``dia_id``s.

Run a server first (``.venv/bin/python tools/llm_tier.py serve --model 1.5b --threads 2``), then
``.venv/bin/python -m bench.llm_locomo --url http://127.0.0.1:PORT/v1 --sessions 3 --label 1.5B``.
Slow on a CPU (minutes per session): a bench, not a test. Quality is reported, not asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import platform
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORY_NAMES, RECALL_CATEGORIES, Conversation, Question, load_locomo
from memhub import AsyncMemory, MemhubSettings
from memhub.engine.grounding import content_words

K = 10


# -- pure logic (tests/bench/test_llm_locomo.py) -----------------------------------------------
def session_of(dia_id: str) -> int:
    """``"D3:12"`` -> 3."""
    return int(dia_id[1:].split(":", 1)[0])


def questions_in(conversation: Conversation, sessions: int) -> list[Question]:
    """Category 1-4 questions with evidence, all of it in the first ``sessions`` sessions."""
    return [
        q
        for q in conversation.questions
        if q.category in RECALL_CATEGORIES
        and q.evidence
        and all(session_of(e) <= sessions for e in q.evidence)
    ]


def turn_dia_ids(turn_ids: Sequence[int], dia_ids: Sequence[str]) -> dict[int, str]:
    """Stored turn id -> LoCoMo ``dia_id``, from one ``add()``'s ``queued_turn_ids``."""
    if len(turn_ids) != len(dia_ids):
        raise ValueError(f"add() stored {len(turn_ids)} turns for {len(dia_ids)} messages")
    return dict(zip(turn_ids, dia_ids, strict=True))


def sources(history: Iterable[Mapping[str, Any]], metadata: Mapping[str, Any]) -> list[int]:
    """The turn ids a memory came from: every history event's ``turn_ids``, then any
    ``metadata["source_turn_ids"]``, first occurrence first."""
    found: list[int] = []
    for event in history:
        found += [int(t) for t in event.get("turn_ids") or ()]
    found += [int(t) for t in metadata.get("source_turn_ids") or ()]
    return list(dict.fromkeys(found))


def memory_dia_ids(turn_ids: Sequence[int], known: Mapping[int, str]) -> list[str]:
    """The ``dia_id``s of a memory's source turns (turns not from this conversation dropped)."""
    return list(dict.fromkeys(known[t] for t in turn_ids if t in known))


def recall_of_memories(
    ranked: Sequence[Sequence[str]], evidence: Iterable[str], k: int = K
) -> float:
    """Share of ``evidence`` among the source turns of the first ``k`` memories returned."""
    wanted = set(evidence)
    if not wanted:
        raise ValueError("recall is undefined without evidence")
    covered = {d for memory in ranked[:k] for d in memory}
    return len(wanted & covered) / len(wanted)


def fits(elapsed: float, done: Sequence[Mapping[str, Any]], budget: float | None) -> bool:
    """Whether one more session, as slow as the slowest so far, ends within ``budget`` s."""
    if budget is None or not done:
        return True
    return elapsed + max(float(s["seconds"]) for s in done) <= budget


def best_source(memory: str, dia_ids: Sequence[str], texts: Mapping[str, str]) -> tuple[str, ...]:
    """The one source turn that shares most content words with the memory's text (the
    first cited on a tie); none when it has no source turn. A raw turn is its own."""
    if not dia_ids:
        return ()
    words = content_words(memory)
    return (max(dia_ids, key=lambda d: len(words & content_words(texts.get(d, "")))),)


@dataclass(frozen=True, slots=True)
class Asked:
    """One question and, in rank order, each returned memory's source turns: all of them
    (``ranked``) and the best-supported one only (``best``)."""

    category: int
    evidence: tuple[str, ...]
    ranked: tuple[tuple[str, ...], ...]
    best: tuple[tuple[str, ...], ...]


def summarize(asked: Iterable[Asked], k: int = K) -> dict[str, dict[str, float]]:
    """Per category and overall, means of: recall@k over every source turn of the top k
    memories, recall@k over one turn per memory (the same budget as k raw turns), hit@k and
    the distinct source turns the top k memories name."""
    groups: dict[str, list[tuple[float, float, float, int]]] = defaultdict(list)
    for a in asked:
        covered = {d for memory in a.ranked[:k] for d in memory}
        row = (
            recall_of_memories(a.ranked, a.evidence, k),
            recall_of_memories(a.best, a.evidence, k),
            1.0 if covered & set(a.evidence) else 0.0,
            len(covered),
        )
        groups[CATEGORY_NAMES[a.category]].append(row)
        groups["overall"].append(row)
    return {
        name: {
            "questions": len(rows),
            f"recall@{k}": round(sum(r[0] for r in rows) / len(rows), 3),
            f"recall@{k}_one_turn": round(sum(r[1] for r in rows) / len(rows), 3),
            f"hit@{k}": round(sum(r[2] for r in rows) / len(rows), 3),
            f"source_turns@{k}": round(sum(r[3] for r in rows) / len(rows), 1),
        }
        for name, rows in sorted(groups.items())
    }


# -- the run ----------------------------------------------------------------------------------
class _Warnings(logging.Handler):
    """Counts memhub's warnings (refusals, retries) by their first words."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[" ".join(record.getMessage().split()[:4])] += 1


def settings_for(args: argparse.Namespace, data_dir: Path, infer: bool) -> MemhubSettings:
    base: dict[str, Any] = {"database_url": args.database_url, "data_dir": data_dir}
    if not infer:
        return MemhubSettings(**base)
    return MemhubSettings(
        **base,
        llm_provider="llamacpp",
        llm_base_url=args.url,
        llm_model=args.model,
        llm_timeout=900.0,
        llm_context_tokens=args.context,
        consolidation_delay=0.0,
        wait_timeout=3600.0,
        job_max_attempts=2,
        job_retry_base_seconds=1.0,
    )


async def run_one(
    args: argparse.Namespace,
    conversation: Conversation,
    infer: bool,
    sessions: int,
    budget: float | None,
) -> dict[str, Any]:
    """Add the first ``sessions`` sessions (fewer if the next would overrun ``budget``
    seconds), then ask the questions those sessions hold the evidence of."""
    user = f"locomo-{conversation.sample_id}"
    known: dict[int, str] = {}
    per_session: list[dict[str, Any]] = []
    asked: list[Asked] = []
    warnings = _Warnings()
    logging.getLogger("memhub").addHandler(warnings)
    try:
        with tempfile.TemporaryDirectory() as data_dir:
            settings = settings_for(args, Path(data_dir), infer)
            async with AsyncMemory(settings=settings) as memory:
                started = time.monotonic()
                for number in range(1, sessions + 1):
                    turns = [t for t in conversation.turns if t.session == number]
                    if not turns:
                        break
                    if not fits(time.monotonic() - started, per_session, budget):
                        print(f"budget: session {number} would not end in time", flush=True)
                        break
                    began = time.monotonic()
                    added = await memory.add(
                        [{"role": "user", "content": t.ingest_text} for t in turns],
                        user_id=user,
                        infer=infer,
                        timestamp=turns[0].date,
                        metadata={"session": number},
                        wait=True,
                    )
                    known |= turn_dia_ids(added["queued_turn_ids"], [t.dia_id for t in turns])
                    per_session.append(
                        {
                            "session": number,
                            "turns": len(turns),
                            "seconds": round(time.monotonic() - began, 1),
                            "status": added["status"],
                        }
                    )
                    print(("facts" if infer else "raw"), per_session[-1], flush=True)
                await memory.wait_idle()
                ingest_seconds = time.monotonic() - started
                questions = questions_in(conversation, len(per_session))
                texts = {t.dia_id: t.ingest_text for t in conversation.turns}
                cache: dict[str, tuple[str, ...]] = {}
                for q in questions:
                    hits = (await memory.search(q.question, user_id=user, limit=K))["results"]
                    ranked = []
                    for hit in hits:
                        if hit["id"] not in cache:
                            history = await memory.history(hit["id"], user_id=user)
                            turn_ids = sources(history, hit["metadata"])
                            cache[hit["id"]] = tuple(memory_dia_ids(turn_ids, known))
                        ranked.append(cache[hit["id"]])
                    best = [
                        best_source(h["memory"], r, texts)
                        for h, r in zip(hits, ranked, strict=True)
                    ]
                    asked.append(Asked(q.category, q.evidence, tuple(ranked), tuple(best)))
                left = (await memory.get_all(user_id=user, limit=10_000))["results"]
                everything = await memory.get_all(
                    user_id=user, limit=10_000, include_superseded=True
                )
                services = await memory._services()  # LLM usage: the store's usage table
                usage = await services.store.usage_stats()
    finally:
        logging.getLogger("memhub").removeHandler(warnings)
    raw_left = [m for m in left if m.get("memory_type") == "turn" or "role" in m]
    facts = [m for m in left if m not in raw_left]
    return {
        "mode": "facts (infer=True)" if infer else "raw turns (infer=False)",
        "sessions_added": len(per_session),
        "questions": len(questions),
        "recall": summarize(asked),
        "turns_added": len(known),
        "memories_left": len(left),
        "facts_left": len(facts),
        "raw_turns_left": len(raw_left),
        "superseded_or_closed": len(everything["results"]) - len(left),
        "llm_calls": usage.get("llm_calls", 0.0),
        "prompt_tokens": usage.get("prompt_tokens", 0.0),
        "completion_tokens": usage.get("completion_tokens", 0.0),
        "ingest_seconds": round(ingest_seconds, 1),
        "sessions": per_session,
        "warnings": dict(warnings.counts),
        "facts": [m["memory"] for m in facts],
        "facts_source_turns": [m["metadata"].get("source_turn_ids") for m in facts],
        "per_question": [
            {"category": a.category, "evidence": a.evidence, "ranked": a.ranked, "best": a.best}
            for a in asked
        ],
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both modes, each in an event loop of its own (a second ``AsyncMemory`` in the loop of
    a closed one leaves its jobs unrun: see docs/llm.md), the result written after each."""
    conversation = load_locomo(args.locomo)[args.conversation]
    all_sessions = sorted({t.session for t in conversation.turns})
    questions = questions_in(conversation, args.sessions)
    print(
        f"{conversation.sample_id}: the first {args.sessions} of {len(all_sessions)} sessions, "
        f"{sum(t.session <= args.sessions for t in conversation.turns)} turns, "
        f"{len(questions)} questions",
        flush=True,
    )
    result: dict[str, Any] = {
        "label": args.label,
        "conversation": conversation.sample_id,
        "machine": f"{platform.processor() or platform.machine()}, {args.machine}",
        "runs": [],
    }

    def record(sessions: int) -> None:
        result["sessions"] = f"{sessions} of {len(all_sessions)}"
        result["questions"] = len(questions_in(conversation, sessions))
        if args.out:
            args.out.write_text(json.dumps(result, indent=1))

    # the model first: the raw turns then take the sessions it had the time for
    sessions = args.sessions
    if args.only != "raw":
        budget = None if args.budget_minutes is None else args.budget_minutes * 60.0
        facts = asyncio.run(run_one(args, conversation, True, sessions, budget))
        result["runs"].append(facts)
        sessions = facts["sessions_added"]
        record(sessions)
    if args.only != "facts":
        result["runs"].append(asyncio.run(run_one(args, conversation, False, sessions, None)))
        record(sessions)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="the LLM server's /v1 URL (needed unless --only raw)")
    parser.add_argument("--model", default="local", help="model name sent to the server")
    parser.add_argument("--label", default="model", help="name in the table")
    parser.add_argument("--conversation", type=int, default=1, help="index in the LoCoMo file")
    parser.add_argument("--sessions", type=int, default=1, help="take the first N sessions")
    parser.add_argument("--context", type=int, default=4096, help="the server's window")
    parser.add_argument(
        "--budget-minutes",
        type=float,
        help="start no session that, at the pace of the slowest so far, would end after this",
    )
    parser.add_argument("--only", choices=["facts", "raw"], help="run one of the two modes")
    parser.add_argument("--database-url", default="memory://", help="memory:// or PostgreSQL")
    parser.add_argument("--locomo", type=Path, help="LoCoMo JSON (default: ../shared/data)")
    parser.add_argument("--machine", default="", help="CPU and load, for the table")
    parser.add_argument("--out", type=Path, help="write the JSON result here")
    args = parser.parse_args()
    if args.only != "raw" and not args.url:
        parser.error("--url is needed to run consolidation (or pass --only raw)")
    result = run(args)
    for r in result["runs"]:
        shown = {k: v for k, v in r.items() if k not in ("facts", "per_question", "sessions")}
        print(json.dumps(shown, indent=1))


if __name__ == "__main__":
    main()
