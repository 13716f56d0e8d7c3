"""Re-ranking ideas for evidence spread over sessions, on both dev sets (issue 37).

``python -m bench.session_spread --keep DIR`` takes every question's top 50 through the public
``Memory.search()`` (default configuration) on the LongMemEval_S dev questions (each
question's sessions added with their dates, as ``bench.longmemeval`` adds them) and on
LoCoMo's dev conversations (as ``bench.loo`` adds them), then re-ranks those lists with each
idea and scores them:

- **spread over sessions in the top 5**: the first five places are picked greedily, each
  candidate's score multiplied by ``(1 - w)`` for every pick already taken from its session;
  the rest follow in the fused order;
- **spread beyond two a session**: the same, from a session's third pick on;
- **session co-occurrence**: a candidate gains ``w`` times the best score of another
  candidate of its session;
- **a prior against the assistant's turns**: an assistant turn's score times ``(1 - w)``.
  LoCoMo's turns are all added as the user's here; the script also scores it with the
  second speaker's turns as the assistant's, as Mem0's own LoCoMo evaluation adds them.

Each idea's weight is fitted out of sample: on LongMemEval's half a (all evidence sessions in
the top 5, then evidence turns in the top 10), reported on half b; on LoCoMo leave one
conversation out (evidence recall@10). The session of a result is the one the benchmark
recorded when adding it: this measures whether an idea is worth building, not a built
feature. ``--keep DIR`` keeps the ingested databases (and the map from memory ids to sessions)
in ``DIR``, so a second run only searches; ``--questions N`` takes the first N of each
LongMemEval type in each half (default: all).

``--asked-at`` and ``--query-parts`` search with two more ideas (``bench.question_spans``):
the span of the past a LongMemEval question names, read from its date, and each thing a
question names, each merged with the whole search before the re-rankings; ``--touched-only``
keeps the LongMemEval questions either could change (the halves stay those of the whole file).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bench.metrics import recall_at_k
from bench.pg import BenchPostgres

Result = dict[str, Any]
Rerank = Callable[[list[Result]], list[Result]]

TOP = 50


def spread(results: list[Result], weight: float, free: int = 1, places: int = 5) -> list[Result]:
    """The first ``places`` picked greedily, a session's picks beyond ``free`` scored down."""
    left, picked, taken = list(results), [], collections.Counter[Any]()
    while left and len(picked) < places:
        best = max(
            left,
            key=lambda r: r["score"] * (1 - weight) ** max(0, taken[r["session"]] - free + 1),
        )
        picked.append(best)
        left.remove(best)
        taken[best["session"]] += 1
    chosen = {id(r) for r in picked}
    return picked + [r for r in results if id(r) not in chosen]


def co_occurrence(results: list[Result], weight: float) -> list[Result]:
    by_session: dict[Any, list[float]] = collections.defaultdict(list)
    for r in results:
        by_session[r["session"]].append(r["score"])

    def boosted(r: Result) -> float:
        scores = sorted(by_session[r["session"]], reverse=True)
        scores.remove(r["score"])
        return r["score"] + weight * (scores[0] if scores else 0.0)

    return sorted(results, key=lambda r: -boosted(r))


def assistant_prior(results: list[Result], weight: float) -> list[Result]:
    return sorted(
        results, key=lambda r: -r["score"] * ((1 - weight) if r["role"] == "assistant" else 1)
    )


FAMILIES: dict[str, list[tuple[Any, Rerank]]] = {
    "fused order (shipped)": [(0.0, lambda r: r)],
    "spread over sessions in the top 5": [
        (w, lambda r, w=w: spread(r, w)) for w in (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)
    ],
    "spread beyond two a session": [
        (w, lambda r, w=w: spread(r, w, free=2)) for w in (0.0, 0.05, 0.1, 0.2, 0.3, 1.0)
    ],
    "session co-occurrence": [
        (w, lambda r, w=w: co_occurrence(r, w)) for w in (0.0, 0.05, 0.1, 0.2)
    ],
    "prior against the assistant's turns": [
        (w, lambda r, w=w: assistant_prior(r, w)) for w in (0.0, 0.05, 0.1, 0.2, 0.3)
    ],
    "the prior, then the spread (weights: prior, spread)": [
        ((p, w), lambda r, p=p, w=w: spread(assistant_prior(r, p), w))
        for p in (0.0, 0.1, 0.2)
        for w in (0.0, 0.05, 0.1)
    ],
}


def lme_scores(question: dict[str, Any], results: list[Result]) -> dict[str, float | None]:
    answer, evidence = set(question["answer_sessions"]), question["evidence"]
    ranked = [r["id"] for r in results]
    return {
        "all@5": float(answer <= {r["session"] for r in results[:5]}),
        "turn@5": recall_at_k(ranked, evidence, 5) if evidence else None,
        "turn@10": recall_at_k(ranked, evidence, 10) if evidence else None,
    }


def locomo_scores(question: dict[str, Any], results: list[Result]) -> dict[str, float | None]:
    evidence = question["evidence"]
    ranked = [r["id"] for r in results]
    sessions = {e.split(":")[0][1:] for e in evidence}
    return {
        "r@5": recall_at_k(ranked, evidence, 5),
        "r@10": recall_at_k(ranked, evidence, 10),
        "all@5": float(sessions <= {str(r["session"]) for r in results[:5]}),
    }


def mean(rows: Sequence[dict[str, float | None]], key: str) -> float:
    values = [v for row in rows if (v := row.get(key)) is not None]
    return sum(values) / len(values) if values else float("nan")


def scored(
    questions: Sequence[dict[str, Any]],
    rerank: Rerank,
    score: Callable[[dict[str, Any], list[Result]], dict[str, float | None]],
) -> list[dict[str, float | None]]:
    # each question's results copied: a re-ranking must not see another's order
    return [score(q, rerank([dict(r) for r in q["results"]])) for q in questions]


def lme_questions(
    keep: Path,
    postgres: BenchPostgres,
    per_type: int | None,
    *,
    query_parts: bool = False,
    asked_at: bool = False,
    touched_only: bool = False,
) -> list[dict[str, Any]]:
    """LongMemEval's dev questions of both halves with their top 50 (ingesting what is not)."""
    from bench.longmemeval import MAX_TEXT_CHARS, default_data_path, ingest, parse_item, select
    from memhub import MemhubSettings, Memory

    every = [parse_item(r) for r in json.loads(default_data_path().read_text(encoding="utf-8"))]
    halves = {h: select(every, h, None, per_type) for h in "ab"}
    if touched_only:  # the halves stay those of the whole file
        halves = {h: [i for i in items if touched(i)] for h, items in halves.items()}
    url, _ = postgres.kept_database("lme")
    where_file = keep / "lme-where.json"
    where: dict[str, dict[str, list[Any]]] = (
        json.loads(where_file.read_text(encoding="utf-8")) if where_file.exists() else {}
    )
    settings = MemhubSettings.from_env(
        database_url=url, worker="thread", max_text_chars=MAX_TEXT_CHARS
    )
    memory = Memory(settings=settings)
    questions = []
    try:
        for half, items in halves.items():
            for item in items:
                user = f"lme-{item.question_id}"
                if item.question_id not in where:
                    found = ingest(memory, item, user)
                    memory.wait_idle()
                    where[item.question_id] = {k: list(v) for k, v in found.items()}
                    where_file.write_text(json.dumps(where), encoding="utf-8")
                    print(f"  ingested {item.question_id} ({item.turns} turns)", flush=True)
                mapping = where[item.question_id]
                hits = _searched(
                    memory,
                    user,
                    item.question,
                    item.question_date if asked_at else None,
                    query_parts,
                )
                questions.append(
                    {
                        "half": half,
                        "type": item.question_type,
                        "answer_sessions": sorted(item.answer_sessions),
                        "evidence": [m for m, (_, answer) in mapping.items() if answer],
                        "results": [
                            {
                                "id": h["id"],
                                "score": h["score"],
                                "session": mapping.get(h["id"], [None])[0],
                                "role": h.get("role"),
                            }
                            for h in hits
                        ],
                    }
                )
    finally:
        memory.close()
    return questions


def touched(item: Any) -> bool:
    """Whether a dated question or query parts could change ``item``'s search: a question
    that names neither a span of the past on its date nor several things is searched exactly
    as before (the code that would differ does not run)."""
    from bench.question_spans import query_parts, query_window

    dated = item.question_date is not None and query_window(item.question, item.question_date)
    return bool(dated or query_parts(item.question))


def _searched(
    memory: Any, user: str, question: str, asked_at: Any, query_parts: bool
) -> list[Result]:
    """The top 50 of ``question``, with the span it names on ``asked_at`` (when given) and
    its parts (``query_parts``) searched beside it (bench.question_spans)."""
    from bench.question_spans import dated_search, search_by_parts

    def search(query: str, **options: Any) -> list[Result]:
        found: list[Result] = memory.search(query, user_id=user, limit=TOP, **options)["results"]
        return found

    hits = dated_search(search, question, asked_at)
    if query_parts:
        hits = search_by_parts(search, question, hits)
    return hits[:TOP]


def locomo_questions(postgres: BenchPostgres, *, query_parts: bool = False) -> list[dict[str, Any]]:
    """LoCoMo's dev questions of categories 1-4 with their top 50 (ingesting once)."""
    from bench.locomo import RECALL_CATEGORIES, default_data_path, load_locomo
    from bench.loo import _ingest
    from memhub import MemhubSettings, Memory

    conversations = load_locomo(default_data_path())
    url, created = postgres.kept_database("locomo")
    if created:
        _ingest(url, conversations)
    second = {
        (c.sample_id, t.dia_id): t.speaker != c.turns[0].speaker
        for c in conversations
        for t in c.turns
    }
    memory = Memory(settings=MemhubSettings.from_env(database_url=url, worker="off"))
    questions = []
    try:
        for c in conversations:
            for q in c.questions:
                if q.category not in RECALL_CATEGORIES or not q.evidence:
                    continue
                user = f"locomo-{c.sample_id}"
                hits = {"results": _searched(memory, user, q.question, None, query_parts)}
                questions.append(
                    {
                        "conversation": c.sample_id,
                        "category": q.category,
                        "evidence": list(q.evidence),
                        "results": [
                            {
                                "id": str(h["metadata"].get("dia_id", "")),
                                "score": h["score"],
                                "session": h["metadata"].get("session"),
                                "role": h.get("role"),
                                "second_speaker": second.get(
                                    (c.sample_id, str(h["metadata"].get("dia_id", ""))), False
                                ),
                            }
                            for h in hits["results"]
                        ],
                    }
                )
    finally:
        memory.close()
    return questions


def as_two_roles(questions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """LoCoMo with the second speaker's turns as the assistant's (Mem0's evaluation)."""
    return [
        {
            **q,
            "results": [
                {**r, "role": "assistant" if r["second_speaker"] else "user"} for r in q["results"]
            ],
        }
        for q in questions
    ]


def where_evidence_lies(locomo: Sequence[dict[str, Any]]) -> dict[str, tuple[float, float, float]]:
    """Per LoCoMo category, the shares of evidence turns the searched order puts in the top
    10, at 11-50, and not in the top 50: what no re-ranking of the top 50 can reach."""
    from bench.locomo import CATEGORY_NAMES

    counts: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0])
    for q in locomo:
        ranked = [r["id"] for r in q["results"]]
        for turn in q["evidence"]:
            place = ranked.index(turn) if turn in ranked else TOP
            band = 0 if place < 10 else 1 if place < TOP else 2
            counts[CATEGORY_NAMES[q["category"]]][band] += 1
    shares = {}
    for kind, (top, middle, beyond) in sorted(counts.items()):
        total = top + middle + beyond
        shares[kind] = (top / total, middle / total, beyond / total)
    return shares


def table(lme: Sequence[dict[str, Any]], locomo: Sequence[dict[str, Any]]) -> str:
    half_a = [q for q in lme if q["half"] == "a"]
    half_b = [q for q in lme if q["half"] == "b"]
    two_roles = as_two_roles(locomo)
    conversations = sorted({q["conversation"] for q in locomo})
    header = (
        "| idea | weight fitted on LME half a | LME a all sessions@5 | LME b all sessions@5 "
        "| LME b evidence turns@5 | LME b evidence turns@10 | LoCoMo weights (LOO) "
        "| LoCoMo r@10 LOO | LoCoMo r@5 LOO | LoCoMo r@10 / r@5, LME's weight "
        "| the same, two roles |"
    )
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for name, family in FAMILIES.items():
        weight, rerank = max(
            family,
            key=lambda wf: (
                mean(scored(half_a, wf[1], lme_scores), "all@5"),
                mean(scored(half_a, wf[1], lme_scores), "turn@10"),
            ),
        )
        a = scored(half_a, rerank, lme_scores)
        b = scored(half_b, rerank, lme_scores)
        weights, outside = [], []
        for held in conversations:
            train = [q for q in locomo if q["conversation"] != held]
            fold_weight, fold = max(
                family, key=lambda wf: mean(scored(train, wf[1], locomo_scores), "r@10")
            )
            weights.append(fold_weight)
            test = [q for q in locomo if q["conversation"] == held]
            outside += scored(test, fold, locomo_scores)
        same = scored(locomo, rerank, locomo_scores)
        roles = scored(two_roles, rerank, locomo_scores)
        lines.append(
            f"| {name} | {weight} | {mean(a, 'all@5'):.3f} | {mean(b, 'all@5'):.3f} "
            f"| {mean(b, 'turn@5'):.3f} | {mean(b, 'turn@10'):.3f} "
            f"| {', '.join(str(w) for w in weights)} | {mean(outside, 'r@10'):.3f} "
            f"| {mean(outside, 'r@5'):.3f} | {mean(same, 'r@10'):.3f} / {mean(same, 'r@5'):.3f} "
            f"| {mean(roles, 'r@10'):.3f} / {mean(roles, 'r@5'):.3f} |"
        )
    lines.append(
        f"\n{len(half_a)} + {len(half_b)} LongMemEval questions, {len(locomo)} LoCoMo questions"
    )
    lines.append("LoCoMo evidence turns in the searched top 10 / at 11-50 / not in the top 50:")
    lines += [
        f"  {kind}: {top:.3f} / {middle:.3f} / {beyond:.3f}"
        for kind, (top, middle, beyond) in where_evidence_lies(locomo).items()
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from bench.machine import describe, summary

    parser = argparse.ArgumentParser(prog="python -m bench.session_spread", description=__doc__)
    parser.add_argument("--keep", type=Path, required=True, help="where the databases are kept")
    parser.add_argument("--questions", type=int, default=None, help="first N of each LME type")
    parser.add_argument("--json", type=Path, default=None, help="also write the top 50s here")
    parser.add_argument(
        "--asked-at",
        action="store_true",
        help="also search the span a LongMemEval question names, read from its date",
    )
    parser.add_argument(
        "--query-parts", action="store_true", help="also search each thing a question names"
    )
    parser.add_argument(
        "--touched-only",
        action="store_true",
        help="only the LongMemEval questions a date or query parts could change",
    )
    args = parser.parse_args(argv)
    args.keep.mkdir(parents=True, exist_ok=True)
    postgres = BenchPostgres(args.keep / "pg", keep=True)
    try:
        lme = lme_questions(
            args.keep,
            postgres,
            args.questions,
            query_parts=args.query_parts,
            asked_at=args.asked_at,
            touched_only=args.touched_only,
        )
        locomo = locomo_questions(postgres, query_parts=args.query_parts)
        machine = describe(postgres.kept_database("lme")[0])
    finally:
        postgres.close()
    machine["load_after"] = os.getloadavg()
    print(table(lme, locomo))
    print(f"machine: {summary(machine)}")
    if args.json is not None:
        args.json.write_text(json.dumps({"lme": lme, "locomo": locomo}), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
