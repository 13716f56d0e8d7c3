"""Where one search's time goes at scale: the query embedding, the SQL round trip, the rest.

Builds (once) a database of N synthetic memories for one user on its own embedded server,
with real vectors of the settings' embedder, then times ``search()`` and its two parts over
synthetic queries.

    python -m bench.profile_search --memories 100000 --home /tmp/memhub-profile
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from dataclasses import replace
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector

from bench import synth
from memhub import AsyncMemory, MemhubSettings
from memhub.embed import create_embedder
from memhub.engine import retrieve
from memhub.engine.fusion import FusionConfig
from memhub.engine.text import memory_hash
from memhub.memory.services import Services
from memhub.store.postgres.store import PostgresStore
from memhub.store.records import Scope

USER = "hot-u0"


async def build(settings: MemhubSettings, n: int) -> None:
    """Fill the database with ``n`` memories through COPY (much faster than the worker)."""
    store = await PostgresStore.open(settings)
    embedder = create_embedder(
        settings.embedder, threads=2, models_dir=settings.data_dir / "models"
    )
    await store.ensure_embedding_space(embedder.model_name, embedder.dimension)
    url = store.database.url
    await store.aclose()
    with psycopg.connect(url, autocommit=True) as conn:
        # A database built before migration 0018 lacks the stored previous turns: rebuilt.
        row = conn.execute("SELECT count(*), count(previous_turn_id) FROM memories").fetchone()
        if row is not None and row[0] == row[1] == n:
            return
    turns = list(synth.memories(0, n, users=1))
    # Synthetic texts repeat (about 13.5k distinct in 100k): each distinct text is embedded once.
    distinct = sorted({t.text for t in turns})
    rows = np.concatenate(
        [await embedder.embed(distinct[i : i + 1024]) for i in range(0, len(distinct), 1024)]
    )
    by_text = dict(zip(distinct, rows, strict=True))
    vectors = [by_text[t.text] for t in turns]
    with psycopg.connect(url, autocommit=True) as conn:
        register_vector(conn)
        conn.execute("TRUNCATE memories, conversation_context")
        conn.execute("DROP INDEX IF EXISTS memories_embedding_hnsw")
        # Each memory comes from its own turn, as with add(infer=False), all in one session,
        # and stores the turn before it as add does (migration 0018).
        with (
            conn.cursor() as cur,
            cur.copy(
                "COPY conversation_context (id, user_id, session_id, role, message) FROM STDIN"
            ) as copy,
        ):
            for n, turn in enumerate(turns, start=1):
                copy.write_row((n, turn.user_id, "default", "user", turn.text))
        conn.execute(
            "SELECT setval(pg_get_serial_sequence('conversation_context', 'id'), %s)", (n + 1,)
        )
        columns = (
            "id, user_id, memory, hash, embedding, created_at, valid_from, source_turn_ids,"
            " previous_turn_id"
        )
        with (
            conn.cursor() as cur,
            cur.copy(
                f"COPY memories ({columns}) FROM STDIN WITH (FORMAT BINARY)"  # constant text
            ) as copy,
        ):
            copy.set_types(
                [
                    "uuid",
                    "varchar",
                    "text",
                    "text",
                    "vector",
                    "timestamptz",
                    "timestamptz",
                    "int8[]",
                    "int8",
                ]
            )
            for n, (turn, vector) in enumerate(zip(turns, vectors, strict=True), start=1):
                at = turn.timestamp.astimezone()
                unique = memory_hash(turn.text) + str(turn.index)  # synthetic texts repeat
                row = (uuid.uuid4(), turn.user_id, turn.text, unique, vector, at, at, [n], n - 1)
                copy.write_row(row)
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute(
            "CREATE INDEX memories_embedding_hnsw ON memories"
            " USING hnsw (embedding vector_cosine_ops)"
        )
        conn.execute("VACUUM ANALYZE memories")


def _line(name: str, values: list[float]) -> str:
    values.sort()
    p50, p95 = values[len(values) // 2], values[int(len(values) * 0.95)]
    return f"{name:<20} p50 {p50:6.2f} ms   p95 {p95:6.2f} ms"


#: The default before neighbour turns (issue 11): 20 candidates per retriever.
PREVIOUS = replace(FusionConfig(), candidates=20, previous_turn_weight=0.0, next_turn_weight=0.0)


async def _sql(memory: AsyncMemory, services: Services, q: str, vector: object) -> float:
    t0 = time.perf_counter()
    await retrieve.candidates(
        services.store,
        Scope(user_id=USER),
        q,
        vector,
        memory.search_config.fusion.candidates,
        None,
        False,
        memory.search_config.fusion.text,
    )
    return (time.perf_counter() - t0) * 1000


async def _search(memory: AsyncMemory, q: str) -> float:
    t0 = time.perf_counter()
    await memory.search(q, user_id=USER, limit=10)
    return (time.perf_counter() - t0) * 1000


async def profile(settings: MemhubSettings, queries: int) -> None:
    """Time the default and :data:`PREVIOUS` alternately, so machine load hits both alike."""
    memory = AsyncMemory(settings=settings)
    before = AsyncMemory(settings=settings, fusion=PREVIOUS)
    services = await memory._services()
    asked = [q for _, q in synth.queries(queries + 30, users=1)]
    for q in asked[:30]:  # warm up: model, pool, prepared statements
        await memory.search(q, user_id=USER, limit=10)
        await before.search(q, user_id=USER, limit=10)
    times: dict[str, list[float]] = {}
    for q in asked[30:]:
        t0 = time.perf_counter()
        vector = (await services.embedder.embed([q]))[0]
        times.setdefault("embedding", []).append((time.perf_counter() - t0) * 1000)
        times.setdefault("SQL", []).append(await _sql(memory, services, q, vector))
        times.setdefault("SQL, previous", []).append(await _sql(before, services, q, vector))
        times.setdefault("search()", []).append(await _search(memory, q))
        times.setdefault("search(), previous", []).append(await _search(before, q))
    for name, values in times.items():
        print(_line(name, values))
    await before.aclose()
    await memory.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--home", type=Path, default=Path("/tmp/memhub-profile"))
    args = parser.parse_args()
    settings = MemhubSettings(data_dir=args.home, worker="off")
    asyncio.run(build(settings, args.memories))
    asyncio.run(profile(settings, args.queries))


if __name__ == "__main__":
    main()
