"""``memhub reembed`` re-embeds a long memory's passages with the new model's window.

MiniLM (a 256-token window) -> tests/tiny_models.py's model directory (32 dimensions, a
16-token window) -> MiniLM, on the real database swap.
"""

from __future__ import annotations

import io
from functools import partial
from pathlib import Path

import numpy as np
import psycopg
import pytest
from pgvector.psycopg import register_vector_async

from memhub import AsyncMemory, MemhubSettings
from memhub.cli.reembed import LineProgress
from memhub.embed import create_embedder
from memhub.engine.passages import embed_texts
from memhub.memory.reembed import reembed
from memhub.store.postgres import reembed as pg_reembed
from memhub.store.records import EmbeddedText, Passage
from tests.memory.test_passages import LONG, TAIL
from tests.tiny_models import build_encoder


async def _passages(db_url: str) -> tuple[int, str | None]:
    """How many passages, and the type of their vectors."""
    async with await psycopg.AsyncConnection.connect(db_url) as conn:
        cur = await conn.execute("SELECT count(*) FROM memory_passages")
        (count,) = await cur.fetchone() or (0,)
        cur = await conn.execute(
            "SELECT format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = 'memory_passages'::regclass AND attname = 'embedding'"
            " AND NOT attisdropped"
        )
        row = await cur.fetchone()
        return int(count), None if row is None else str(row[0])


async def test_reembed_cuts_and_embeds_passages_for_the_new_window(
    settings: MemhubSettings, db_url: str, tmp_path: Path
) -> None:
    async with AsyncMemory(settings=settings) as memory:
        await memory.add(
            [{"role": "assistant", "content": LONG}, {"role": "user", "content": "short one"}],
            user_id="ada",
            infer=False,
            wait=True,
        )
    minilm_passages, vector_type = await _passages(db_url)
    assert minilm_passages >= 2 and vector_type == "vector(384)"

    build_encoder(tmp_path / "tiny")
    tiny = settings.model_copy(update={"embedder_model": str(tmp_path / "tiny")})
    out = io.StringIO()
    assert await reembed(tiny, progress=LineProgress(out)) == 2
    tiny_passages, vector_type = await _passages(db_url)
    assert tiny_passages > minilm_passages and vector_type == "vector(32)"

    assert await reembed(settings, progress=LineProgress(out)) == 2
    assert await _passages(db_url) == (minilm_passages, "vector(384)")
    async with AsyncMemory(settings=settings) as memory:
        (best,) = (await memory.search("When is my sister's wedding?", user_id="ada", limit=1))[
            "results"
        ]
    assert TAIL in best["memory"] and best["passage"]["length"] == len(LONG)


async def _shadow_rows(conn: psycopg.AsyncConnection[tuple[object, ...]]) -> tuple[int, int]:
    """Memories with a new vector, and new passages, of the run under way."""
    cur = await conn.execute("SELECT count(embedding_new) FROM memories")
    (vectors,) = await cur.fetchone() or (0,)
    cur = await conn.execute("SELECT count(*) FROM memory_passages_new")
    (passages,) = await cur.fetchone() or (0,)
    return int(vectors), int(passages)


async def test_a_row_whose_passages_fail_to_store_stays_pending(
    settings: MemhubSettings, aconn: psycopg.AsyncConnection[tuple[object, ...]]
) -> None:
    """A memory's new vector and its new passages are stored together or not at all: a row
    with its vector but without its passages would never be embedded again (the run resumes
    at the rows without a vector), and after the swap its tail could not be found."""
    async with AsyncMemory(settings=settings) as memory:
        await memory.add(
            [{"role": "assistant", "content": LONG}], user_id="ada", infer=False, wait=True
        )
    await register_vector_async(aconn)
    assert not await pg_reembed.prepare(aconn, "another-model", 384)
    (row,) = await pg_reembed.pending_rows(aconn, None, 10)
    vector = np.ones(384, np.float32) / np.sqrt(384)
    first = Passage(0, 0, 10, vector)  # stored without its vector: it is the memory's own
    broken = Passage(1, 5, 20, np.ones(16, np.float32))  # not the column's dimension
    with pytest.raises(psycopg.Error):
        await pg_reembed.store_vectors(aconn, [row], [EmbeddedText(vector, (first, broken))])
    assert await _shadow_rows(aconn) == (0, 0)
    assert await pg_reembed.count_pending(aconn) == 1  # the resumed run embeds it again


async def test_a_memory_deleted_during_reembed_leaves_no_passages_behind(
    settings: MemhubSettings, aconn: psycopg.AsyncConnection[tuple[object, ...]]
) -> None:
    """Its new passages go with it (a user's erase keeps no vector of what was said), and a
    reset (TRUNCATE) takes them all."""
    embedder = create_embedder("minilm")
    embed = partial(embed_texts, embedder)
    async with AsyncMemory(settings=settings) as memory:
        added = await memory.add(
            [{"role": "assistant", "content": LONG}, {"role": "assistant", "content": LONG + "!"}],
            user_id="ada",
            infer=False,
            wait=True,
        )
        await register_vector_async(aconn)
        assert not await pg_reembed.prepare(aconn, embedder.model_name, 384)
        assert await pg_reembed.catch_up(aconn, embed) == 2
        assert (await _shadow_rows(aconn))[1] >= 4
        await memory.delete(added["results"][0]["id"])
        cur = await aconn.execute("SELECT DISTINCT memory_id::text FROM memory_passages_new")
        assert [str(r[0]) for r in await cur.fetchall()] == [added["results"][1]["id"]]
        await memory.reset()
        assert (await _shadow_rows(aconn))[1] == 0
