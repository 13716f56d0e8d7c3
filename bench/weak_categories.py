"""Two ideas for the weak categories (multi-hop, open-domain), scored leave-one-conversation-out.

``python -m bench.weak_categories --db-url URL`` reads each question's candidates from a
database that ``bench.loo`` ingested (the same embedder must be configured) and scores the
shipped fusion with one post-fusion change, its weight fitted on four conversations and
scored on the fifth:

- **session co-occurrence**: a candidate gains ``w x`` the best score of another candidate
  from the same LoCoMo session (evidence of a multi-hop question often sits in one session
  the question's words hit several times);
- **more candidates**: 100 per retriever instead of 50, so evidence that matches the
  question weakly can enter the fused list at all.

The first is a bench-side prototype over the store's candidates (what ``Memory.search``
fuses), not a search() feature: it ships only if it raises the out-of-sample figure.
"""

from __future__ import annotations

import argparse
import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORY_NAMES, RECALL_CATEGORIES, load_locomo
from bench.loo import _candidates, _prepare
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
    now = datetime.now(UTC)
    out = []
    for candidates, (_, question) in zip(pool, asked, strict=True):
        top = _session_boost(fuse(candidates, PRESETS["default"], now), weight)[:10]
        ranked = [str(s.candidate.record.metadata.get("dia_id", "")) for s in top]
        out.append((question.category, recall_at_k(ranked, question.evidence, 10)))
    return out


def _summary(results: Sequence[tuple[int, float]]) -> str:
    cats = {c: [r for k, r in results if k == c] for c in sorted(RECALL_CATEGORIES)}
    overall = sum(r for _, r in results) / len(results)
    per = " | ".join(f"{sum(v) / len(v):.3f}" for v in cats.values())
    return f"{overall:.3f} | {per}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.weak_categories", description=__doc__)
    parser.add_argument("--locomo", type=Path, required=True)
    parser.add_argument("--db-url", required=True)
    args = parser.parse_args(argv)
    conversations = load_locomo(args.locomo)
    data = _prepare(args.db_url, conversations)
    keep = [i for i, (_, q) in enumerate(data.asked) if q.evidence]
    asked = [data.asked[i] for i in keep]
    vectors = [data.vectors[i] for i in keep]
    print(
        "| variant | in-sample | LOO | "
        + " | ".join(f"{c} {CATEGORY_NAMES[c]}" for c in sorted(RECALL_CATEGORIES))
        + " |"
    )
    for k in (50, 100):
        import bench.loo as loo

        loo.FIT_CANDIDATES = k
        pool = asyncio.run(_candidates(args.db_url, asked, vectors, PRESETS["default"].text))
        per_weight = {w: _recalls(pool, asked, w) for w in WEIGHTS}
        users = sorted({u for u, _ in asked})
        outside: list[tuple[int, float]] = []
        chosen = []
        for held_out in users:
            train = [i for i, (u, _) in enumerate(asked) if u != held_out]
            best = max(WEIGHTS, key=lambda w: sum(per_weight[w][i][1] for i in train))
            chosen.append(best)
            outside += [per_weight[best][i] for i, (u, _) in enumerate(asked) if u == held_out]
        best_all = max(WEIGHTS, key=lambda w: sum(r for _, r in per_weight[w]))
        fixed = _summary(per_weight[0.0])
        print(f"| {k} candidates, no session boost | {fixed.split(' | ')[0]} | {fixed} |")
        print(
            f"| {k} candidates, session boost fitted per fold (in-sample w={best_all}, folds "
            f"{chosen}) | {_summary(per_weight[best_all]).split(' | ')[0]} | {_summary(outside)} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
