"""Ideas for the weak categories (multi-hop, open-domain), scored leave-one-conversation-out.

``python -m bench.weak_categories`` ingests the LoCoMo dev conversations as ``bench.loo`` does
(or, with ``--db-url URL``, reads a database that ``bench.loo``'s ingest filled with the same
embedder) and, from each question's candidates, scores the shipped fusion with one change,
its weight fitted on four conversations and scored on the fifth:

- **session co-occurrence**: a candidate gains ``w x`` the best score of another candidate
  from the same LoCoMo session (evidence of a multi-hop question often sits in one session
  the question's words hit several times);
- **more candidates**: 100 per retriever instead of 50, so evidence that matches the
  question weakly can enter the fused list at all;
- **sessions spread** (``--spread``): the top 10 taken greedily from the fused list, each
  candidate's score lowered by ``w`` for every one already taken from its session (the
  evidence of a multi-hop question lies in several sessions);
- **a second pass on what the first found** (``--second-pass``): the query's vector moved
  towards the mean vector of the first search's top 3 (``q + w x mean``, normalised), both
  retrievers run again with it (the text query unchanged) and fused.

All are bench-side prototypes over the store's candidates (what ``Memory.search`` fuses), not
search() features: one ships only if it raises the out-of-sample figure.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORY_NAMES, RECALL_CATEGORIES, load_locomo
from bench.loo import Asked, _candidates, _prepare
from bench.metrics import recall_at_k
from memhub.engine.fusion import PRESETS, ScoredCandidate, fuse

WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.3)


def _session_boost(scored: Sequence[ScoredCandidate], weight: float) -> list[ScoredCandidate]:
    if weight == 0.0:
        return list(scored)
    by_session: dict[Any, list[float]] = defaultdict(list)
    for s in scored:
        by_session[s.candidate.record.metadata.get("session")].append(s.score)
    boosted = []
    for position, s in enumerate(scored):
        peers = sorted(by_session[s.candidate.record.metadata.get("session")], reverse=True)
        others = peers[1:] if peers and peers[0] == s.score else peers
        bonus = weight * (others[0] if others else 0.0)
        boosted.append((-(s.score + bonus), position, replace(s, score=s.score + bonus)))
    return [item[2] for item in sorted(boosted, key=lambda t: (t[0], t[1]))]


def _recalls(pool: Sequence[Any], asked: Sequence[Any], weight: float) -> list[tuple[int, float]]:
    return _reordered_recalls(pool, asked, lambda fused: _session_boost(fused, weight)[:10])


def _reordered_recalls(
    pool: Sequence[Any],
    asked: Sequence[Any],
    reorder: Callable[[list[ScoredCandidate]], Sequence[ScoredCandidate]],
) -> list[tuple[int, float]]:
    """(category, recall@10) of each question, its fused candidates reordered by ``reorder``."""
    now = datetime.now(UTC)
    return [
        (
            q.category,
            recall_at_k(_dia_ids(reorder(fuse(c, PRESETS["default"], now))), q.evidence, 10),
        )
        for c, (_, q) in zip(pool, asked, strict=True)
    ]


SPREAD_WEIGHTS = (0.0, 0.05, 0.1, 0.2, 0.4)
SECOND_PASS_WEIGHTS = (0.0, 0.25, 0.5, 1.0)


def _spread(scored: Sequence[ScoredCandidate], weight: float, k: int = 10) -> list[Any]:
    """The top ``k``, each pick lowering the others of its session by ``weight``."""
    left, taken = list(scored), []
    per_session: dict[Any, int] = defaultdict(int)
    while left and len(taken) < k:

        def adjusted(s: ScoredCandidate) -> float:
            return s.score - weight * per_session[s.candidate.record.metadata.get("session")]

        best = max(left, key=adjusted)  # max keeps the first of equals: the fused order
        left.remove(best)
        taken.append(best)
        per_session[best.candidate.record.metadata.get("session")] += 1
    return taken


def _dia_ids(top: Sequence[ScoredCandidate]) -> list[str]:
    return [str(s.candidate.record.metadata.get("dia_id", "")) for s in top]


def _spread_recalls(pool: Sequence[Any], asked: Sequence[Asked], weight: float) -> list[Any]:
    return _reordered_recalls(pool, asked, lambda fused: _spread(fused, weight))


def _second_pass_vectors(
    db_url: str, pool: Sequence[Any], vectors: Sequence[Any], weight: float
) -> list[Any]:
    """Each query's vector moved towards its first search's top 3 (``weight`` 0: unchanged)."""
    import numpy as np
    import psycopg
    from pgvector.psycopg import register_vector

    if weight == 0.0:
        return list(vectors)
    now = datetime.now(UTC)
    moved = []
    with psycopg.connect(db_url) as conn:
        register_vector(conn)
        for candidates, vector in zip(pool, vectors, strict=True):
            ids = [s.candidate.record.id for s in fuse(candidates, PRESETS["default"], now)[:3]]
            rows = conn.execute(
                "SELECT embedding FROM memories WHERE id = ANY(%s)", (ids,)
            ).fetchall()
            q = np.asarray(vector, dtype=np.float32)
            if rows:
                q = q + weight * np.mean(
                    [np.asarray(r[0].to_numpy(), dtype=np.float32) for r in rows], 0
                )
            moved.append(q / np.linalg.norm(q))
    return moved


def _fitted_per_fold(
    asked: Sequence[Asked], per_weight: dict[float, list[tuple[int, float]]]
) -> tuple[list[tuple[int, float]], list[float], float]:
    """Out-of-sample results (each fold's weight fitted on the others), the folds' weights,
    and the in-sample best."""
    users = sorted({u for u, _ in asked})
    outside: list[tuple[int, float]] = []
    chosen = []
    for held_out in users:
        train = [i for i, (u, _) in enumerate(asked) if u != held_out]
        best = max(per_weight, key=lambda w: sum(per_weight[w][i][1] for i in train))
        chosen.append(best)
        outside += [per_weight[best][i] for i, (u, _) in enumerate(asked) if u == held_out]
    best_all = max(per_weight, key=lambda w: sum(r for _, r in per_weight[w]))
    return outside, chosen, best_all


def _summary(results: Sequence[tuple[int, float]]) -> str:
    cats = {c: [r for k, r in results if k == c] for c in sorted(RECALL_CATEGORIES)}
    overall = sum(r for _, r in results) / len(results)
    per = " | ".join(f"{sum(v) / len(v):.3f}" for v in cats.values())
    return f"{overall:.3f} | {per}"


def main(argv: list[str] | None = None) -> int:
    from bench.locomo import default_data_path
    from bench.loo import _ingest
    from bench.pg import BenchPostgres

    parser = argparse.ArgumentParser(prog="python -m bench.weak_categories", description=__doc__)
    parser.add_argument("--locomo", type=Path, default=default_data_path())
    parser.add_argument(
        "--db-url", default=None, help="a database bench.loo's ingest filled (default: a new one)"
    )
    parser.add_argument("--spread", action="store_true", help="also the sessions spread")
    parser.add_argument("--second-pass", action="store_true", help="also the second pass")
    args = parser.parse_args(argv)
    conversations = load_locomo(args.locomo)
    if args.db_url is not None:
        return _report(args, conversations)
    with BenchPostgres(Path(tempfile.mkdtemp(prefix="weak-")) / "pg") as postgres:
        args.db_url = postgres.create_database("weak")
        _ingest(args.db_url, conversations)
        return _report(args, conversations)


def _report(args: argparse.Namespace, conversations: Sequence[Any]) -> int:
    """Print every row on the database ``args.db_url`` names."""
    data = _prepare(args.db_url, conversations)
    keep = [i for i, (_, q) in enumerate(data.asked) if q.evidence]
    asked = [data.asked[i] for i in keep]
    vectors = [data.vectors[i] for i in keep]
    print(
        "| variant | in-sample | LOO | "
        + " | ".join(f"{c} {CATEGORY_NAMES[c]}" for c in sorted(RECALL_CATEGORIES))
        + " |"
    )
    by_candidates: dict[float, list[tuple[int, float]]] = {}
    for k in (50, 100):
        import bench.loo as loo

        loo.FIT_CANDIDATES = k
        pool = asyncio.run(_candidates(args.db_url, asked, vectors, PRESETS["default"].text))
        per_weight = {w: _recalls(pool, asked, w) for w in WEIGHTS}
        outside, chosen, best_all = _fitted_per_fold(asked, per_weight)
        by_candidates[k] = per_weight[0.0]
        fixed = _summary(per_weight[0.0])
        print(f"| {k} candidates, no session boost | {fixed.split(' | ')[0]} | {fixed} |")
        print(
            f"| {k} candidates, session boost fitted per fold (in-sample w={best_all}, folds "
            f"{chosen}) | {_summary(per_weight[best_all]).split(' | ')[0]} | {_summary(outside)} |",
            flush=True,
        )
        if k != 50:
            continue
        rows = {}
        if args.spread:
            rows["sessions spread"] = {w: _spread_recalls(pool, asked, w) for w in SPREAD_WEIGHTS}
        if args.second_pass:
            rows["second pass"] = {}
            for w in SECOND_PASS_WEIGHTS:
                moved = _second_pass_vectors(args.db_url, pool, vectors, w)
                again = asyncio.run(_candidates(args.db_url, asked, moved, PRESETS["default"].text))
                rows["second pass"][w] = _recalls(again, asked, 0.0)
        for name, by_weight in rows.items():
            outside, chosen, best_all = _fitted_per_fold(asked, by_weight)
            print(
                f"| {name} fitted per fold (in-sample w={best_all}, folds {chosen}) | "
                f"{_summary(by_weight[best_all]).split(' | ')[0]} | {_summary(outside)} |",
                flush=True,
            )
    outside, chosen, best_all = _fitted_per_fold(asked, by_candidates)
    print(
        f"| candidates per retriever chosen per fold (in-sample {best_all}, folds {chosen}) | "
        f"{_summary(by_candidates[best_all]).split(' | ')[0]} | {_summary(outside)} |"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
