"""Scoped vector search on a table large enough that PostgreSQL really uses the HNSW index.

pgvector's HNSW scan stops after ``hnsw.ef_search`` candidates and filters afterwards; with
many users in one table a user's search would silently come back short. memhub turns on
iterative scans; this test fails without them.
"""

from __future__ import annotations

import uuid

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from memhub import MemhubSettings
from memhub.engine import retrieve
from memhub.store.postgres.store import PostgresStore
from memhub.store.records import Scope

USERS, PER_USER, DIM, K = 10, 2000, 64, 50


def _fill(db_url: str, vectors: np.ndarray) -> None:
    with psycopg.connect(db_url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("DROP INDEX memories_embedding_hnsw")
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY memories (id, user_id, memory, hash, embedding) FROM STDIN WITH (FORMAT BINARY)"
            ) as copy,
        ):
            copy.set_types(["uuid", "varchar", "text", "text", "vector"])
            for n, vector in enumerate(vectors):
                copy.write_row((uuid.uuid4(), f"u{n % USERS}", f"memory {n}", f"h{n}", vector))
        conn.execute(
            "CREATE INDEX memories_embedding_hnsw ON memories USING hnsw (embedding vector_cosine_ops)"
        )
        conn.execute("ANALYZE memories")


async def test_scoped_search_returns_k_hits_through_the_index(
    settings: MemhubSettings, db_url: str
) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((USERS * PER_USER, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    store = await PostgresStore.open(settings)
    try:
        await store.ensure_embedding_space("test-random-64", DIM)
        _fill(db_url, vectors)
        query = vectors[3] + 0.1 * rng.standard_normal(DIM).astype(np.float32)
        query /= np.linalg.norm(query)

        candidates = await retrieve.candidates(
            store, Scope(user_id="u3"), "zzzz", query, K, None, False
        )
        hits = [c for c in candidates if c.vector_rank is not None]
        assert len(hits) == K
        assert all(c.record.scope.user_id == "u3" for c in hits)

        mine = np.arange(3, USERS * PER_USER, USERS)
        exact = {f"memory {n}" for n in mine[np.argsort(-(vectors[mine] @ query))[:K]]}
        found = {c.record.memory for c in hits}
        assert len(found & exact) / K >= 0.9  # approximate, but close to exact

        async with store.database.connection() as conn:
            cur = await conn.execute(
                "EXPLAIN SELECT id FROM memories m WHERE m.user_id = 'u3' AND m.valid_to IS NULL"
                " ORDER BY m.embedding <=> %s LIMIT 50",
                (query,),
            )
            plan = "\n".join(str(row[0]) for row in await cur.fetchall())
        assert "memories_embedding_hnsw" in plan, plan
    finally:
        await store.aclose()
