"""Retrieval on long chat histories: LongMemEval_S questions through the public API.

``python -m bench.longmemeval`` reads ``../shared/data/longmemeval-s-dev.json`` at run time
(never copied into the repository). Each question is one user: every session of its haystack is
added with ``Memory.add(turns, infer=False, timestamp=<the session's date>)``, the worker drains
(the turns are searchable by meaning), then the question is searched (``limit=10``). Reported,
overall and per question type: session recall (any / all evidence sessions in the top 5 and the
top 10), evidence-turn recall@10 (the turns marked ``has_answer`` found in the top 10), the
tokens of the top 10 (cl100k_base when tiktoken is installed, else four characters a token; the
output says which), search p50/p95 and ingest turns/s (from the first add to the drained queue),
and the answer's words kept: of the gold answer's content words that the top 10's whole texts
hold, the share its returned texts (passages, excerpts) hold too (a proxy for "the part
returned still answers"; preference questions, whose answers are rubrics, are left out).

The subset is deterministic: ``--half a|b`` takes the even (a) or odd (b) positions of each
question type in file order (tune on one half, report the other), ``--types`` keeps some types,
``--questions N`` the first N of each type after that. The embedder is the configured one
(``MEMHUB_EMBEDDER=minilm`` for quick runs); the output names it.

``--json`` keeps every question's figures under ``per_question``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.metrics import percentile

#: Messages longer than memhub's default ``max_text_chars`` (32,000) occur in this data (the
#: longest is ~42,000 characters); the run raises the limit rather than drop or cut them.
MAX_TEXT_CHARS = 100_000


@dataclass(frozen=True)
class Item:
    """One LongMemEval question with its haystack: sessions of ``{role, content, has_answer?}``."""

    question_id: str
    question_type: str
    question: str
    sessions: tuple[tuple[dict[str, Any], ...], ...]
    session_ids: tuple[str, ...]
    dates: tuple[datetime, ...]
    answer_sessions: frozenset[str]
    answer: str = ""
    question_date: datetime | None = None

    @property
    def turns(self) -> int:
        return sum(len(s) for s in self.sessions)


def default_data_path() -> Path:
    """``shared/data/longmemeval-s-dev.json`` in the nearest folder above the repository that
    has one (``../shared`` of a clone, ``../../shared`` of a worktree under ``wt/``)."""
    relative = Path("shared") / "data" / "longmemeval-s-dev.json"
    above = Path(__file__).resolve().parents[2:]
    return next((p / relative for p in above if (p / relative).exists()), above[0] / relative)


def parse_date(value: str) -> datetime:
    """LongMemEval's stamp, e.g. ``"2023/05/20 (Sat) 02:21"`` (naive)."""
    day, _, clock = value.partition(" (")
    return datetime.strptime(f"{day} {clock.partition(') ')[2]}", "%Y/%m/%d %H:%M")


def parse_item(raw: dict[str, Any]) -> Item:
    return Item(
        question_id=str(raw["question_id"]),
        question_type=str(raw["question_type"]),
        question=str(raw["question"]),
        sessions=tuple(tuple(s) for s in raw["haystack_sessions"]),
        session_ids=tuple(str(s) for s in raw["haystack_session_ids"]),
        dates=tuple(parse_date(d) for d in raw["haystack_dates"]),
        answer_sessions=frozenset(str(s) for s in raw["answer_session_ids"]),
        answer=str(raw.get("answer", "")),
        question_date=parse_date(raw["question_date"]) if raw.get("question_date") else None,
    )


def select(
    items: Sequence[Item], half: str | None, types: Sequence[str] | None, per_type: int | None
) -> list[Item]:
    """The deterministic subset: a half (even / odd positions within each type), some types,
    the first ``per_type`` of each type."""
    by_type: dict[str, list[Item]] = {}
    for item in items:
        by_type.setdefault(item.question_type, []).append(item)
    chosen: list[Item] = []
    for kind in sorted(by_type):
        if types is not None and kind not in types:
            continue
        of_type = by_type[kind]
        if half is not None:
            of_type = of_type[(0 if half == "a" else 1) :: 2]
        chosen += of_type[:per_type]
    return chosen


@dataclass(frozen=True)
class Scored:
    """One question's figures."""

    question_id: str
    question_type: str
    any_at_5: bool
    all_at_5: bool
    any_at_10: bool
    all_at_10: bool
    turn_recall_10: float | None  # None: the question marks no evidence turn
    tokens_10: int
    answer_kept: float | None = None  # None: no answer words in the top 10's whole texts


def score(
    item: Item,
    found: Sequence[dict[str, Any]],
    where: dict[str, tuple[str, bool]],
    count_tokens: Callable[[str], int],
    whole: dict[str, str] | None = None,
) -> Scored:
    """Score the results ``found`` of ``item``; ``where`` maps a memory id to (session id,
    whether that turn is an evidence turn), ``whole`` a memory id to its whole text."""
    sessions = [where[r["id"]][0] for r in found if r["id"] in where]
    evidence = {m for m, (_, answer) in where.items() if answer}
    top10 = {r["id"] for r in found[:10]}
    return Scored(
        question_id=item.question_id,
        question_type=item.question_type,
        any_at_5=bool(item.answer_sessions & set(sessions[:5])),
        all_at_5=item.answer_sessions <= set(sessions[:5]),
        any_at_10=bool(item.answer_sessions & set(sessions[:10])),
        all_at_10=item.answer_sessions <= set(sessions[:10]),
        turn_recall_10=len(evidence & top10) / len(evidence) if evidence else None,
        tokens_10=sum(count_tokens(r["memory"]) for r in found[:10]),
        answer_kept=_answer_kept(item, found[:10], whole or {}),
    )


def _answer_kept(
    item: Item, found: Sequence[dict[str, Any]], whole: dict[str, str]
) -> float | None:
    from memhub.engine.grounding import content_words

    if item.question_type == "single-session-preference":
        return None
    there = content_words(item.answer) & content_words(
        " ".join(whole.get(r["id"], r["memory"]) for r in found)
    )
    if not there:
        return None
    kept = there & content_words(" ".join(r["memory"] for r in found))
    return len(kept) / len(there)


def aggregate(scored: Sequence[Scored]) -> dict[str, float]:
    """Means over questions (turn recall over the questions that mark evidence turns)."""
    turns = [s.turn_recall_10 for s in scored if s.turn_recall_10 is not None]
    kept = [s.answer_kept for s in scored if s.answer_kept is not None]

    def mean(values: Sequence[float]) -> float:
        return sum(values) / len(values) if values else float("nan")

    return {
        "questions": len(scored),
        "any@5": mean([float(s.any_at_5) for s in scored]),
        "all@5": mean([float(s.all_at_5) for s in scored]),
        "any@10": mean([float(s.any_at_10) for s in scored]),
        "all@10": mean([float(s.all_at_10) for s in scored]),
        "turn_recall@10": mean(turns),
        "tokens@10": mean([float(s.tokens_10) for s in scored]),
        "answer_kept": mean(kept),
    }


def ingest(memory: Any, item: Item, user_id: str) -> dict[str, tuple[str, bool]]:
    """Add every session of ``item`` (one add each, with its date); return memory id ->
    (session id, evidence turn)."""
    where: dict[str, tuple[str, bool]] = {}
    for session, session_id, date in zip(item.sessions, item.session_ids, item.dates, strict=True):
        turns = [t for t in session if t["role"] in ("user", "assistant")]
        if not turns:
            continue
        messages = [{"role": t["role"], "content": t["content"]} for t in turns]
        added = memory.add(
            messages,
            user_id=user_id,
            infer=False,
            timestamp=date,
            metadata={"session": session_id},
        )
        # infer=False answers one memory per message, in order (a blank one has none).
        stored = [t for t in turns if t["content"].strip()]
        for result, turn in zip(added["results"], stored, strict=True):
            where[result["id"]] = (session_id, bool(turn.get("has_answer")))
    return where


def _token_counter() -> tuple[Callable[[str], int], str]:
    try:
        from bench.tokens import count_tokens, ensure_cl100k_cache

        ensure_cl100k_cache()
        count_tokens("probe")
    except Exception:  # tiktoken missing, or its vocabulary cannot be rebuilt here
        return (lambda text: (len(text) + 3) // 4), "estimated at 4 characters a token"
    return count_tokens, "cl100k_base"


def _store_counts(db_url: str) -> dict[str, int]:
    """Memories, and (when the database has them) passages and the memories they belong to."""
    import psycopg

    with psycopg.connect(db_url) as conn:
        memories = conn.execute("SELECT count(*) FROM memories").fetchone()
        counts = {"memories": int(memories[0]) if memories else 0}
        exists = conn.execute("SELECT to_regclass('memory_passages') IS NOT NULL").fetchone()
        if exists and exists[0]:
            row = conn.execute(
                "SELECT count(*), count(DISTINCT memory_id) FROM memory_passages"
            ).fetchone()
            if row:
                counts["passages"], counts["long_memories"] = int(row[0]), int(row[1])
    return counts


def parse_budget(text: str) -> tuple[str, dict[str, float | int]]:
    """``"min_score_ratio=0.5"``, ``"max_tokens=400"`` or ``"excerpt_tokens=0"``: one search
    variant, by its label."""
    name, _, value = text.partition("=")
    if name in ("max_tokens", "excerpt_tokens"):
        return text, {name: int(value)}
    if name == "min_score_ratio":
        return text, {name: float(value)}
    raise ValueError(
        f"--budget takes max_tokens=N, excerpt_tokens=N or min_score_ratio=R, not {text!r}"
    )


def run(
    items: Sequence[Item],
    db_url: str,
    count_tokens: Callable[[str], int],
    budgets: Sequence[tuple[str, dict[str, float | int]]] = (),
    candidates: Sequence[int] = (),
) -> dict[str, Any]:
    """Ingest and search every item; the figures, overall and per type (and, for each of
    ``budgets``, overall with that search argument on the same ingested memories; for each of
    ``candidates``, overall with that many candidates per retriever)."""
    from memhub import MemhubSettings, Memory
    from memhub.engine.fusion import FusionConfig

    settings = MemhubSettings.from_env(
        database_url=db_url, worker="thread", max_text_chars=MAX_TEXT_CHARS
    )
    memory = Memory(settings=settings)
    scored: list[Scored] = []
    budgeted: dict[str, list[Scored]] = {label: [] for label, _ in budgets}
    others = {
        f"candidates={n}": Memory(
            settings=settings.model_copy(update={"worker": "off"}),
            fusion=FusionConfig(candidates=n),
        )
        for n in candidates
    }
    budgeted.update({label: [] for label in others})
    latencies: list[float] = []
    ingest_seconds, turns = 0.0, 0
    try:
        for number, item in enumerate(items):
            user_id = f"lme-{item.question_id}"
            started = time.perf_counter()
            where = ingest(memory, item, user_id)
            memory.wait_idle()
            ingest_seconds += time.perf_counter() - started
            turns += item.turns
            memory.search("warm-up", user_id=user_id, limit=1)
            asked = time.perf_counter()
            found = memory.search(item.question, user_id=user_id, limit=10)["results"]
            latencies.append(time.perf_counter() - asked)
            whole = _whole_texts(memory, found)
            scored.append(score(item, found, where, count_tokens, whole))
            for label, arguments in budgets:
                cut = memory.search(item.question, user_id=user_id, limit=10, **arguments)
                whole = _whole_texts(memory, cut["results"])
                budgeted[label].append(score(item, cut["results"], where, count_tokens, whole))
            for label, other in others.items():
                found = other.search(item.question, user_id=user_id, limit=10)["results"]
                whole = _whole_texts(memory, found)
                budgeted[label].append(score(item, found, where, count_tokens, whole))
            print(f"  {number + 1}/{len(items)} {item.question_type}: {scored[-1]}", flush=True)
    finally:
        memory.close()
        for other in others.values():
            other.close()
    per_type = {
        kind: aggregate([s for s in scored if s.question_type == kind])
        for kind in sorted({s.question_type for s in scored})
    }
    return {
        "overall": aggregate(scored),
        "per_type": per_type,
        "budgets": {label: aggregate(found) for label, found in budgeted.items()},
        "per_question": {
            "default": [vars(s) for s in scored],
            **{label: [vars(s) for s in found] for label, found in budgeted.items()},
        },
        "search_p50_ms": percentile(latencies, 50) * 1e3,
        "search_p95_ms": percentile(latencies, 95) * 1e3,
        "ingest_turns_per_s": turns / ingest_seconds if ingest_seconds else float("nan"),
        "turns": turns,
        "embedder": settings.embedder_model or settings.embedder,
        "store": _store_counts(db_url),
    }


def _whole_texts(memory: Any, found: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Each result's whole text (a result may return a passage or an excerpt of it)."""
    return {r["id"]: memory.get(r["id"])["memory"] for r in found[:10] if "passage" in r}


def _table(result: dict[str, Any]) -> str:
    header = [
        "",
        "questions",
        "any@5",
        "all@5",
        "any@10",
        "all@10",
        "turn recall@10",
        "tok@10",
        "answer words kept",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    rows = [
        ("overall", result["overall"]),
        *result["per_type"].items(),
        *((f"overall, {label}", m) for label, m in result.get("budgets", {}).items()),
    ]
    for name, m in rows:
        cells = [
            name,
            str(m["questions"]),
            *(f"{m[k]:.3f}" for k in ("any@5", "all@5", "any@10", "all@10", "turn_recall@10")),
            f"{m['tokens@10']:.0f}",
            f"{m['answer_kept']:.3f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the subset the arguments choose and print its table."""
    from bench.machine import describe, summary
    from bench.pg import BenchPostgres

    parser = argparse.ArgumentParser(prog="python -m bench.longmemeval", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_data_path())
    parser.add_argument("--half", choices=("a", "b"), default=None)
    parser.add_argument("--types", default=None, help="question types to keep (a,b)")
    parser.add_argument("--questions", type=int, default=None, help="first N of each type")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--budget",
        action="append",
        default=[],
        help="also search with max_tokens=N or min_score_ratio=R (repeatable)",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        action="append",
        default=[],
        help="also search with this many candidates per retriever (repeatable)",
    )
    args = parser.parse_args(argv)
    budgets = [parse_budget(text) for text in args.budget]
    if not args.data.exists():
        raise SystemExit(f"{args.data} not found (it is never copied into the repository)")
    raw = json.loads(args.data.read_text(encoding="utf-8"))
    types = None if args.types is None else args.types.split(",")
    items = select([parse_item(r) for r in raw], args.half, types, args.questions)
    count_tokens, tokens_name = _token_counter()
    with BenchPostgres(Path(tempfile.mkdtemp(prefix="lme-")) / "pg") as postgres:
        db_url = postgres.create_database("lme")
        machine = describe(db_url)
        result = run(items, db_url, count_tokens, budgets, args.candidates)
    machine["load_after"] = os.getloadavg()
    result["tokens"] = tokens_name
    result["subset"] = {"half": args.half, "types": types, "per_type": args.questions}
    result["machine"] = machine
    print(_table(result))
    print(
        f"search p50 {result['search_p50_ms']:.1f} ms, p95 {result['search_p95_ms']:.1f} ms;"
        f" ingest {result['ingest_turns_per_s']:.1f} turns/s ({result['turns']} turns);"
        f" store {result['store']}; embedder {result['embedder']}; tokens {tokens_name}"
    )
    print(f"machine: {summary(machine)}")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1, default=str), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
