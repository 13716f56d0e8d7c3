"""Retrieval ablation on LoCoMo: ingest once, then rank every question under many search settings.

``python -m bench.ablation`` prints (and with ``--markdown FILE`` writes) a table of evidence
recall@10 per category and top-10 tokens for each variant in :data:`VARIANTS`. It drives
the search's own two steps (``retrieve.candidates`` on the store, as every search fetches its
candidates, then ``fusion.fuse``) directly, so a variant can change what the facade does not
expose (the text ranking) without a rebuild.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORY_NAMES, RECALL_CATEGORIES, Conversation, load_locomo
from bench.metrics import QuestionResult, aggregate
from bench.recall import TOP_N, ingest
from memhub.engine.fusion import PRESETS, FusionConfig, fuse
from memhub.engine.retrieve import candidates
from memhub.store.records import DEFAULT_TEXT_RANKING, Scope, TextRanking


@dataclass(frozen=True)
class Variant:
    """One row of the ablation table."""

    name: str
    fusion: FusionConfig
    ranking: TextRanking = DEFAULT_TEXT_RANKING


def _grid() -> list[Variant]:
    """A sweep of fusion weights and BM25 length normalisation (``--grid``), for tuning."""
    found: list[Variant] = []
    for b in (0.75, 1.0):
        for w_rrf, rrf_k in ((0.0, 60), (0.3, 5), (0.5, 5)):
            for share_vec in (0.6, 0.7, 0.8):
                rest = 1.0 - w_rrf
                fusion = FusionConfig(
                    vector_weight=rest * share_vec,
                    text_weight=rest * (1 - share_vec),
                    rrf_weight=w_rrf,
                    rrf_k=rrf_k,
                )
                name = (
                    f"b={b} rrf {w_rrf:.1f} k={rrf_k}, vec/text {share_vec:.1f}/{1 - share_vec:.1f}"
                )
                found.append(Variant(name, fusion, TextRanking(b=b)))
    return found


def _variants() -> list[Variant]:
    base = PRESETS["default"]
    ts_rank = TextRanking(method="ts_rank", score_all=False)
    old = FusionConfig(vector_weight=0.5, text_weight=0.3, rrf_weight=0.2, rrf_k=60, candidates=50)
    wide = TextRanking(term_cap=1000, scope_cap=5000)
    return [
        Variant("vector only (MiniLM int8, HNSW)", FusionConfig.only("vector")),
        Variant(
            "text only: ts_rank over OR of words (previous)", FusionConfig.only("text"), ts_rank
        ),
        Variant("text only: BM25 in SQL, b=0.75", FusionConfig.only("text"), wide),
        Variant("text only: BM25, b=0.3", FusionConfig.only("text"), replace(wide, b=0.3)),
        Variant("previous memhub: ts_rank, 0.5/0.3/0.2, RRF k=60, 50 cand.", old, ts_rank),
        Variant("+ BM25 instead of ts_rank", old, replace(wide, score_all=False)),
        Variant("+ both signals for every candidate", old, wide),
        Variant("+ weights 0.49/0.21/0.3, RRF k=5 (default preset)", base, wide),
        Variant("RRF only, k=60", FusionConfig.only("rrf"), wide),
        Variant("RRF only, k=5", replace(FusionConfig.only("rrf"), rrf_k=5), wide),
        Variant("default, BM25 b=1.0", base, replace(wide, b=1.0)),
        Variant("compact preset", PRESETS["compact"], wide),
        Variant("compact preset, BM25 b=1.0", PRESETS["compact"], replace(wide, b=1.0)),
        Variant("default, 20 candidates", replace(base, candidates=20), wide),
        Variant("default, 100 candidates", replace(base, candidates=100), wide),
        Variant("default, term_cap=100, scope_cap=1000 (shipped)", base),
        Variant("default, term_cap=30", base, replace(wide, term_cap=30)),
        Variant("recent preset (0.2 recency, 30-day half-life)", PRESETS["recent"], wide),
    ]


async def _ingest(db_url: str, conversations: Sequence[Conversation]) -> float:
    from bench.systems import MemhubSystem

    started = time.perf_counter()
    system = MemhubSystem(db_url)
    try:
        for conversation in conversations:
            await asyncio.to_thread(ingest, system, conversation)
        await asyncio.to_thread(system.flush)
    finally:
        await asyncio.to_thread(system.close)
    return time.perf_counter() - started


async def _evaluate(
    db_url: str, conversations: Sequence[Conversation], variants: Sequence[Variant]
) -> list[dict[str, Any]]:
    import memhub
    from bench.tokens import count_tokens
    from memhub.memory.services import embedder_from_settings
    from memhub.store.postgres.store import PostgresStore

    asked = [
        (f"locomo-{c.sample_id}", q)
        for c in conversations
        for q in c.questions
        if q.category in RECALL_CATEGORIES
    ]
    embedder = embedder_from_settings(memhub.MemhubSettings())
    vectors = await embedder.embed([q.question for _, q in asked])
    rows: list[dict[str, Any]] = []
    store = await PostgresStore.open(memhub.MemhubSettings(database_url=db_url))
    try:
        # Recency is measured from the conversation's own end, not today (LoCoMo is from 2023).
        now = max(t.date for c in conversations for t in c.turns).replace(tzinfo=UTC)
        for variant in variants:
            results: list[QuestionResult] = []
            started = time.perf_counter()
            for (user_id, question), vector in zip(asked, vectors, strict=True):
                k = max(TOP_N, variant.fusion.candidates)
                found = await candidates(
                    store,
                    Scope(user_id=user_id),
                    question.question,
                    vector,
                    k,
                    None,
                    False,
                    variant.ranking,
                )
                scored = fuse(found, variant.fusion, now)[:TOP_N]
                assert all(0.0 <= s.score <= 1.0 for s in scored)
                ranked = tuple(str(s.candidate.record.metadata.get("dia_id", "")) for s in scored)
                tokens = sum(count_tokens(s.candidate.record.memory) for s in scored[:10])
                results.append(QuestionResult(question.category, ranked, question.evidence, tokens))
            seconds = time.perf_counter() - started
            rows.append(
                {
                    "variant": variant.name,
                    "metrics": aggregate(results),
                    "ms": seconds * 1e3 / len(asked),
                }
            )
            print(_row(rows[-1]), flush=True)
    finally:
        await store.aclose()
    await embedder.aclose()
    return rows


HEADER = [
    "variant",
    "recall@10",
    *(f"{c} {CATEGORY_NAMES[c]}" for c in sorted(RECALL_CATEGORIES)),
    "recall@5",
    "MRR",
    "tokens top 10",
    "SQL+fusion ms",
]


def _row(row: dict[str, Any]) -> str:
    m = row["metrics"]
    cells = [
        row["variant"],
        f"{m['overall']['recall@10']:.3f}",
        *(
            f"{m.get(str(c), {}).get('recall@10', float('nan')):.3f}"
            for c in sorted(RECALL_CATEGORIES)
        ),
        f"{m['overall']['recall@5']:.3f}",
        f"{m['overall']['mrr']:.3f}",
        f"{m['overall']['tokens_top10']:.0f}",
        f"{row['ms']:.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


def main(argv: list[str] | None = None) -> int:
    """Ingest LoCoMo into a fresh database and print the ablation table."""
    from bench.locomo import default_data_path
    from bench.pg import BenchPostgres
    from bench.tokens import ensure_cl100k_cache

    parser = argparse.ArgumentParser(prog="python -m bench.ablation", description=__doc__)
    parser.add_argument("--locomo", type=Path, default=default_data_path())
    parser.add_argument("--conversations", type=int, default=None)
    parser.add_argument("--markdown", type=Path, default=None, help="also write the table here")
    parser.add_argument("--db-url", default=None, help="an already ingested database")
    parser.add_argument("--grid", action="store_true", help="sweep fusion weights instead")
    args = parser.parse_args(argv)
    ensure_cl100k_cache()
    conversations = load_locomo(args.locomo)[: args.conversations]
    variants = _grid() if args.grid else _variants()
    print("| " + " | ".join(HEADER) + " |\n|" + "---|" * len(HEADER), flush=True)
    if args.db_url:
        rows = asyncio.run(_evaluate(args.db_url, conversations, variants))
    else:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="ablation-") as tmp:
            postgres = BenchPostgres(Path(tmp) / "pg")
            try:
                url = postgres.create_database("ablation")
                seconds = asyncio.run(_ingest(url, conversations))
                turns = sum(len(c.turns) for c in conversations)
                print(f"(ingested {turns} turns in {seconds:.1f} s)")
                rows = asyncio.run(_evaluate(url, conversations, variants))
            finally:
                postgres.close()
    if args.markdown is not None:
        lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        args.markdown.write_text(
            "\n".join(lines + [_row(r) for r in rows]) + "\n", encoding="utf-8"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
