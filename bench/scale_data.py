"""Synthetic memories for the 1M profile, written straight into memhub's ``memories`` with COPY.

Texts come from :mod:`bench.synth`. Vectors: a few thousand of those texts are embedded once
with all-MiniLM-L6-v2 (the model bench/scale.py embeds with), and every row gets one of them
plus small Gaussian noise, renormalised (cosine to its base text about 0.95), so the index
sees clusters shaped like real MiniLM vectors rather than uniform random ones, without
embedding a million texts.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import numpy.typing as npt
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from bench import synth
from memhub.engine.text import memory_hash

BASE_TEXTS = 8_192
NOISE = 0.012  # per-dimension sigma on unit vectors of 384 dimensions: cosine ~0.95 to the base
BLOCK = 20_000
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Layout:
    """How many rows, and which user owns each: one big user every ``1/big_share`` rows."""

    rows: int = 1_000_000
    users: int = 10_000
    big_rows: int = 200_000

    @property
    def big_every(self) -> int:
        return max(1, self.rows // self.big_rows) if self.big_rows else 0

    def owner(self, i: int) -> str:
        """The user of row ``i``: the big user on every ``big_every``-th row, else round robin."""
        every = self.big_every
        if every and i % every == 0 and i // every < self.big_rows:
            return "scale-big"
        small = i - (i // every + 1 if every else 0)
        return f"scale-u{small % self.users}"


def base_vectors(cache: Path | None = None) -> tuple[list[str], npt.NDArray[np.float32]]:
    """``BASE_TEXTS`` synthetic texts and their embeddings by all-MiniLM-L6-v2.

    The embeddings are kept in ``cache`` (a ``.npy`` file) once computed.
    """
    texts = [t.text for t in synth.memories(0, BASE_TEXTS, users=1, seed=97, prefix="base")]
    if cache is not None and cache.exists():
        return texts, np.load(cache)
    vectors = _embed(texts)
    if cache is not None:
        np.save(cache, vectors)
    return texts, vectors


def _embed(texts: list[str]) -> npt.NDArray[np.float32]:
    from memhub.embed.factory import create_embedder

    embedder = create_embedder("minilm", threads=2)

    async def embed() -> npt.NDArray[np.float32]:
        try:
            return np.asarray(await embedder.embed(texts), dtype=np.float32)
        finally:
            await embedder.aclose()

    return asyncio.run(embed())


def rows(
    layout: Layout,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    start: int,
    stop: int,
    owners: Collection[str] | None = None,
) -> Iterator[tuple[object, ...]]:
    """Rows ``start`` to ``stop`` (of ``owners`` only, if given) as COPY tuples.

    Deterministic per row (each block of rows has its own seed), so any subset comes back equal.
    """
    hashes = [memory_hash(t) for t in texts]
    for block in range(start - start % BLOCK, stop, BLOCK):
        rng = np.random.default_rng(block)
        n = min(BLOCK, layout.rows - block)
        picks = rng.integers(0, len(texts), n)
        noisy = (
            vectors[picks] + rng.standard_normal((n, vectors.shape[1])).astype(np.float32) * NOISE
        )
        noisy /= np.linalg.norm(noisy, axis=1, keepdims=True)
        for offset in range(max(start - block, 0), min(stop - block, n)):
            i = block + offset
            owner = layout.owner(i)
            if owners is not None and owner not in owners:
                continue
            pick = int(picks[offset])
            when = EPOCH + timedelta(seconds=37 * i)
            yield (
                uuid.UUID(int=i + 1),
                owner,
                texts[pick],
                hashes[pick],
                when,
                when,
                "user",
                noisy[offset],
            )


COLUMNS = ("id", "user_id", "memory", "hash", "valid_from", "created_at", "role", "embedding")


def copy_rows(
    url: str,
    layout: Layout,
    texts: list[str],
    vectors: npt.NDArray[np.float32],
    start: int = 0,
    stop: int | None = None,
    table: str = "memories",
    owners: Collection[str] | None = None,
) -> float:
    """COPY rows ``start`` to ``stop`` (of ``owners`` only) into ``table``; seconds taken."""
    began = time.perf_counter()
    stop = layout.rows if stop is None else stop
    with psycopg.connect(url) as conn:
        register_vector(conn)
        statement = sql.SQL("COPY {} ({}) FROM STDIN WITH (FORMAT BINARY)").format(
            sql.Identifier(table), sql.SQL(", ").join(map(sql.Identifier, COLUMNS))
        )
        with conn.cursor().copy(statement) as copy:
            copy.set_types(
                ["uuid", "varchar", "text", "text", "timestamptz", "timestamptz", "text", "vector"]
            )
            for row in rows(layout, texts, vectors, start, stop, owners):
                copy.write_row(row)
    return time.perf_counter() - began
