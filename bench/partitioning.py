"""Does hash-partitioning ``memories`` by user help scoped search and VACUUM? (docs/scaling.md)

Builds two copies of the same synthetic table on a throwaway embedded PostgreSQL, one plain
and one ``PARTITION BY HASH (user_id)``, each with memhub's indexes (HNSW cosine, b-tree on
user_id), then times scoped vector searches and a VACUUM after deleting a tenth of the users.
Vectors are random unit vectors (the shape of the index work, not retrieval quality).

    .venv/bin/python -m bench.partitioning --rows 100000 --users 1000 --partitions 16
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql

from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server

DIM = 384

CREATE = """
CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE flat (id bigint, user_id text NOT NULL, memory text, embedding vector(384));
CREATE TABLE parted (id bigint, user_id text NOT NULL, memory text, embedding vector(384))
    PARTITION BY HASH (user_id);
"""


def _load(conn: psycopg.Connection[tuple[object, ...]], rows: int, users: int) -> float:
    started = time.perf_counter()
    rng = np.random.default_rng(7)
    with conn.cursor().copy(
        "COPY flat (id, user_id, memory, embedding) FROM STDIN WITH (FORMAT BINARY)"
    ) as copy:
        copy.set_types(["int8", "text", "text", "vector"])
        for start in range(0, rows, 10_000):
            block = rng.standard_normal((min(10_000, rows - start), DIM)).astype(np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            for offset, vector in enumerate(block):
                n = start + offset
                copy.write_row((n, f"user-{n % users}", f"memory {n}", vector))
    conn.execute("INSERT INTO parted SELECT * FROM flat")
    return time.perf_counter() - started


def _index(conn: psycopg.Connection[tuple[object, ...]], table: str) -> float:
    started = time.perf_counter()
    name = sql.Identifier(table)
    conn.execute(
        sql.SQL("CREATE INDEX ON {} USING hnsw (embedding vector_cosine_ops)").format(name)
    )
    conn.execute(sql.SQL("CREATE INDEX ON {} (user_id)").format(name))
    conn.execute(sql.SQL("ANALYZE {}").format(name))
    return time.perf_counter() - started


def _search_ms(
    conn: psycopg.Connection[tuple[object, ...]], table: str, users: int, n: int
) -> tuple[float, float, float]:
    rng = np.random.default_rng(11)
    picker = random.Random(11)
    query = sql.SQL(
        "SELECT id FROM {} WHERE user_id = %s ORDER BY embedding <=> %s LIMIT 10"
    ).format(sql.Identifier(table))
    times, hits = [], []
    for _ in range(n):
        vector = rng.standard_normal(DIM).astype(np.float32)
        user = f"user-{picker.randrange(users)}"
        started = time.perf_counter()
        found = conn.execute(query, (user, vector / np.linalg.norm(vector))).fetchall()
        times.append((time.perf_counter() - started) * 1000)
        hits.append(len(found))
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.95)], statistics.mean(hits)


def _vacuum_s(conn: psycopg.Connection[tuple[object, ...]], table: str, users: int) -> float:
    doomed = [f"user-{u}" for u in range(0, users, 10)]
    conn.execute(
        sql.SQL("DELETE FROM {} WHERE user_id = ANY(%s)").format(sql.Identifier(table)), (doomed,)
    )
    started = time.perf_counter()
    conn.execute(sql.SQL("VACUUM {}").format(sql.Identifier(table)))
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=1_000)
    parser.add_argument("--partitions", type=int, default=16)
    parser.add_argument("--searches", type=int, default=300)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="memhub-partitioning-"))
    home.chmod(0o755)
    try:
        url = embedded_database_url(home, "partitioning")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(CREATE)
            register_vector(conn)
            # DDL takes no server-side parameters: psycopg binds these on the client.
            ddl = psycopg.ClientCursor(conn)
            for i in range(args.partitions):
                ddl.execute(
                    sql.SQL(
                        "CREATE TABLE {} PARTITION OF parted"
                        " FOR VALUES WITH (MODULUS %s, REMAINDER %s)"
                    ).format(sql.Identifier(f"parted_{i}")),
                    (args.partitions, i),
                )
            conn.execute("SET maintenance_work_mem = '1GB'")
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            print(f"rows {args.rows}, users {args.users}, partitions {args.partitions}")
            print(f"load (both tables): {_load(conn, args.rows, args.users):.1f} s")
            for table in ("flat", "parted"):
                built = _index(conn, table)
                _search_ms(conn, table, args.users, 50)  # warm the caches
                p50, p95, hits = _search_ms(conn, table, args.users, args.searches)
                vacuum = _vacuum_s(conn, table, args.users)
                print(
                    f"{table:>6}: index build {built:.1f} s, scoped search p50 {p50:.2f} ms"
                    f" p95 {p95:.2f} ms ({hits:.1f} hits of 10), VACUUM after deleting"
                    f" 10% of users {vacuum:.2f} s"
                )
    finally:
        stop_embedded_server(home)
        shutil.rmtree(home, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
