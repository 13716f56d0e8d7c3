"""What passages cost the embedder: CPU-seconds per long message, whole against as passages.

``python -m bench.passages_cost`` takes the chat turns of LongMemEval_S
(``bench.longmemeval``'s file), counts how many are longer than the configured embedder's
window and how many passages they make, then embeds the first ``--messages`` long ones twice
in this process, whole (what memhub did before: the model reads the first window) and as
passages (``memhub.engine.passages.embed_texts``, what the worker does now), and reports the
CPU-seconds of each (``time.process_time``: the embedder runs one thread, so the figure does
not depend on what else the machine runs, unlike wall time).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.longmemeval import default_data_path


async def measure(texts: list[str], sample: int) -> dict[str, Any]:
    """The counts over ``texts``, and the CPU cost of ``sample`` long ones."""
    from memhub import MemhubSettings
    from memhub.embed.passages import PassageSplitter
    from memhub.engine.passages import embed_texts
    from memhub.memory.services import embedder_from_settings

    embedder = embedder_from_settings(MemhubSettings.from_env())
    assert isinstance(embedder, PassageSplitter), "this embedder embeds every text whole"
    cuts = await embedder.passage_spans(texts)
    long = [t for t, cut in zip(texts, cuts, strict=True) if cut]
    counts = [len(cut) for cut in cuts if cut]
    chosen = long[:sample]
    if not chosen:
        await embedder.aclose()
        return {"embedder": embedder.model_name, "turns": len(texts), "long_turns": 0}
    await embedder.embed(["warm-up"])
    started = time.process_time()
    for text in chosen:
        await embedder.embed([text])
    whole = time.process_time() - started
    started = time.process_time()
    for text in chosen:
        await embed_texts(embedder, [text])
    passages = time.process_time() - started
    # The cut tokenises a text once more than embedding it does: its share of the above.
    started = time.process_time()
    for text in chosen:
        await embedder.passage_spans([text])
    cutting = time.process_time() - started
    await embedder.aclose()
    per_memory = (len(texts) - len(long) + sum(counts)) / len(texts)
    return {
        "embedder": embedder.model_name,
        "turns": len(texts),
        "long_turns": len(long),
        "passages": sum(counts),
        "passages_per_long_turn": sum(counts) / len(counts) if counts else 0.0,
        "most_passages": max(counts, default=0),
        # a long memory's vector is its first passage's, computed and stored once (the first
        # passage's row keeps its span: store/postgres/memories.passage_rows)
        "vectors_embedded_per_memory": per_memory,
        "vectors_stored_per_memory": per_memory,
        "sampled": len(chosen),
        "cpu_s_per_long_turn_whole": whole / len(chosen),
        "cpu_s_per_long_turn_passages": passages / len(chosen),
        "cpu_s_per_long_turn_cutting": cutting / len(chosen),
        "cutting_share_of_passages": cutting / passages if passages else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    """Print the figures for the configured embedder (``MEMHUB_EMBEDDER``)."""
    parser = argparse.ArgumentParser(prog="python -m bench.passages_cost", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_data_path())
    parser.add_argument("--questions", type=int, default=6, help="the first N histories")
    parser.add_argument("--messages", type=int, default=100, help="long messages timed")
    parser.add_argument(
        "--locomo", action="store_true", help="LoCoMo's dev turns instead (bench.recall's texts)"
    )
    args = parser.parse_args(argv)
    if args.locomo:
        from bench.locomo import load_locomo

        found = sys.modules["bench.locomo"].default_data_path()
        texts = [t.ingest_text for c in load_locomo(_nearest(found)) for t in c.turns]
    else:
        raw = json.loads(args.data.read_text(encoding="utf-8"))[: args.questions]
        texts = [
            turn["content"]
            for item in raw
            for session in item["haystack_sessions"]
            for turn in session
            if turn["content"].strip()
        ]
    print(json.dumps(asyncio.run(measure(texts, args.messages)), indent=1))
    return 0


def _nearest(path: Path) -> Path:
    """``path`` (``../shared/data/...``), or the same file in a folder further up (a
    worktree's)."""
    relative = Path(*path.parts[-3:])
    above = Path(__file__).resolve().parents[2:]
    return next((p / relative for p in above if (p / relative).exists()), path)


if __name__ == "__main__":
    raise SystemExit(main())
