"""Re-embedding every memory with the configured embedder: the steps of ``memhub reembed``.

The store does each step (its :class:`BulkStore`, which only PostgreSQL's has); this module
orders them, asks for confirmation through a callback and reports through another, so the
command line only draws them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from memhub.config import MemhubSettings
from memhub.engine.passages import embed_texts
from memhub.errors import UsageError
from memhub.memory.services import embedder_from_settings
from memhub.store import open_store
from memhub.store.protocol import BulkStore, Embed
from memhub.store.records import EmbeddingSpace

__all__ = ["ReembedProgress", "reembed"]


class ReembedProgress:
    """What a run reports: lines to say, and the running count of the first pass."""

    def say(self, text: str) -> None:
        """A line for the person running it (default: nothing)."""

    def start(self, total: int) -> None:
        """The first pass begins, with ``total`` memories to embed."""

    def update(self, done: int) -> None:
        """``done`` memories of the first pass are embedded."""

    def finish(self) -> None:
        """The first pass is over."""


async def reembed(
    settings: MemhubSettings,
    *,
    batch: int = 256,
    force: bool = False,
    confirm: Callable[[str], bool] | None = None,
    progress: ReembedProgress | None = None,
) -> int:
    """Re-embed every memory with the configured embedder and record it as the database's.

    Stop servers and workers that use the old embedder first: after the swap they are refused
    (or, with an equal dimension, would write vectors of the wrong model). An interrupted run
    resumes. Returns how many memories were embedded.

    Args:
        settings: The database, and the embedder to move to.
        batch: Memories per embedding call and update.
        force: Re-embed even when the recorded model already is the configured one.
        confirm: Asked once with a description of the change; False cancels (UsageError).
        progress: Told what happens (default: nothing is reported).
    """
    report = progress or ReembedProgress()
    embedder = embedder_from_settings(settings)
    store = await open_store(settings)
    try:
        if not isinstance(store, BulkStore):
            raise UsageError("memhub reembed works on PostgreSQL; memory:// has no stored vectors")
        dimension = int((await embedder.embed(["dimension probe"])).shape[1])
        model = embedder.model_name
        old = await store.embedding_space()
        if old.model is None:
            await store.ensure_embedding_space(model, dimension)
            report.say(f"no embeddings recorded yet; the database now uses {model}")
            return 0
        if old == EmbeddingSpace(model, dimension) and not force:
            report.say(f"memories are already embedded with {model} ({dimension})")
            return 0
        await _confirm(store, confirm, old, EmbeddingSpace(model, dimension))
        if await store.prepare_reembed(model, dimension):
            report.say("resuming an interrupted re-embedding")
        # A memory longer than the new model's window is embedded as its passages, as the
        # worker does.
        embed = partial(embed_texts, embedder)
        done = await _fill(store, embed, batch, report)
        report.say("building the vector index...")
        await store.build_reembed_index()
        done += await store.swap_embeddings(model, dimension, embed)
        report.say(f"re-embedded {done} memories; the database now uses {model} ({dimension})")
        return done
    finally:
        await store.aclose()
        await embedder.aclose()


async def _confirm(
    store: BulkStore,
    confirm: Callable[[str], bool] | None,
    old: EmbeddingSpace,
    new: EmbeddingSpace,
) -> None:
    if confirm is None:
        return
    question = (
        f"re-embed {await store.count_memories()} memories from {old.model} "
        f"({old.dimension} dimensions) to {new.model} ({new.dimension} dimensions)?"
    )
    if not confirm(question):
        raise UsageError("reembed cancelled; nothing was changed")


async def _fill(store: BulkStore, embed: Embed, batch: int, report: ReembedProgress) -> int:
    report.start(await store.reembed_pending())
    done = await store.reembed_pass(embed, batch, report.update)
    report.finish()
    return done
