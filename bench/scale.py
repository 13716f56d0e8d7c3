"""The 1M-memories profile: load fast, build indexes, then search, ingest while searching, sizes.

``python -m bench.scale`` (memhub's ``.venv`` plus ``psutil``; ``make bench PROFILE=1m``) keeps
its embedded PostgreSQL in ``--data`` (default ``/work/bench-data/1m``, outside the repository),
so a re-run skips the load. ``--partitioned N`` builds the same rows into a second database
whose ``memories`` is hash-partitioned by ``user_id`` (issue 13) and measures it the same way.
Results go to ``bench/results/scale-<db>.json``; ``bench.report`` renders them.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import threading
import time
from importlib import resources
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql

from bench import machine, scale_data, synth
from bench.hotpath import PeakRSS
from bench.metrics import latency_summary

log = logging.getLogger("bench.scale")

# The loaded rows carry all-MiniLM-L6-v2 vectors (bench/scale_data.py): every process that
# opens the database embeds with it, whatever memhub's default is.
EMBEDDER = "minilm"

REPO = Path(__file__).resolve().parents[1]
LOADED = "bench_scale_loaded"  # memhub_settings key: the layout loaded, so re-runs skip it
VECTORS = "base-vectors.npy"  # the base texts' embeddings, kept next to the data


def _settings_value(url: str, key: str) -> str | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT value FROM memhub_settings WHERE key = %s", (key,)).fetchone()
    return None if row is None else str(row[0])


def _open_schema(url: str) -> None:
    """Let memhub create its schema and embedding column (one search on an empty user)."""
    from memhub import MemhubSettings, Memory

    memory = Memory(settings=MemhubSettings(database_url=url, worker="off", embedder=EMBEDDER))
    try:
        memory.search("warm up", user_id="scale-nobody", limit=1)
    finally:
        memory.close()


def _index_definitions(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT i.indexname, i.indexdef FROM pg_indexes i"
        " WHERE i.tablename IN ('memories', 'memory_words') AND NOT EXISTS"
        " (SELECT 1 FROM pg_constraint c WHERE c.conname = i.indexname) ORDER BY i.indexname"
    ).fetchall()
    return [(str(name), str(definition)) for name, definition in rows]


def _build_indexes(url: str, definitions: list[tuple[str, str]]) -> dict[str, float]:
    """Run each saved CREATE INDEX; seconds per index (HNSW in memory, 2 build processes)."""
    timings: dict[str, float] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET maintenance_work_mem = '4GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        for name, definition in definitions:
            began = time.perf_counter()
            # PostgreSQL's own text for an index it had (pg_indexes); a partitioned table's says
            # ON ONLY, which would leave the partitions without the index.
            statement = definition.replace(" ON ONLY ", " ON ")
            conn.execute(sql.SQL(statement))  # type: ignore[arg-type]
            timings[name] = time.perf_counter() - began
            log.info("index %s built in %.1f s", name, timings[name])
        began = time.perf_counter()
        conn.execute("VACUUM ANALYZE memories, memory_words")
        timings["vacuum_analyze"] = time.perf_counter() - began
    return timings


def _partition(url: str, partitions: int) -> None:
    """Make ``memories`` a hash-partitioned table of the same columns (before any row)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ALTER TABLE memories RENAME TO memories_plain")
        conn.execute(
            "CREATE TABLE memories (LIKE memories_plain INCLUDING DEFAULTS INCLUDING GENERATED"
            " INCLUDING CONSTRAINTS) PARTITION BY HASH (user_id)"
        )
        ddl = psycopg.ClientCursor(conn)  # DDL takes no server-side parameters
        for i in range(partitions):
            ddl.execute(
                sql.SQL(
                    "CREATE TABLE {} PARTITION OF memories"
                    " FOR VALUES WITH (MODULUS %s, REMAINDER %s)"
                ).format(sql.Identifier(f"memories_p{i}")),
                (partitions, i),
            )
        # A partitioned table's unique indexes must contain the partition key as a plain
        # column: the primary key becomes (id, user_id), and the fact hash index (expressions,
        # the arbiter of insert_memories' ON CONFLICT) cannot exist, so memhub cannot ingest
        # into this table as it is; the bench loads it with COPY and only reads it.
        conn.execute("ALTER TABLE memories ADD PRIMARY KEY (id, user_id)")
        definitions = _plain_index_definitions(conn)
        conn.execute("DROP TABLE memories_plain")
        # The triggers that keep search's copy of the words went with the renamed table:
        # migration 0019, run again, puts them on this one (the rest of it is idempotent).
        conn.execute(sql.SQL(_migration("0019_memory_words.sql")))  # type: ignore[arg-type]
        for _, definition in definitions:
            if "UNIQUE" not in definition:
                # PostgreSQL's own text of an index it had, moved to the new table.
                moved = definition.replace(" ON public.memories_plain ", " ON memories ")
                conn.execute(sql.SQL(moved))  # type: ignore[arg-type]


def _migration(name: str) -> str:
    return (resources.files("memhub.store.postgres.migrations") / name).read_text("utf-8")


def _plain_index_definitions(conn: psycopg.Connection[Any]) -> list[tuple[str, str]]:
    rows = conn.execute(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'memories_plain'"
        " AND indexname NOT LIKE '%pkey'"
    ).fetchall()
    return [(str(n), str(d)) for n, d in rows]


def load(url: str, layout: scale_data.Layout, partitions: int, data: Path) -> dict[str, Any]:
    """Schema, COPY of every row with the indexes dropped, then the indexes again, timed."""
    _open_schema(url)
    if partitions:
        _partition(url, partitions)
    with psycopg.connect(url, autocommit=True) as conn:
        definitions = _index_definitions(conn)
        for name, _ in definitions:
            conn.execute(sql.SQL("DROP INDEX {}").format(sql.Identifier(name)))
    began = time.perf_counter()
    texts, vectors = scale_data.base_vectors(data / VECTORS)
    embed_seconds = time.perf_counter() - began
    log.info(
        "embedded %s base texts in %.1f s; copying %s rows", len(texts), embed_seconds, layout.rows
    )
    copy_seconds = scale_data.copy_rows(url, layout, texts, vectors)
    log.info("copied in %.1f s; building indexes", copy_seconds)
    indexes = _build_indexes(url, definitions)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO memhub_settings (key, value) VALUES (%s, %s)",
            (LOADED, json.dumps({"rows": layout.rows, "partitions": partitions})),
        )
    return {
        "base_embed_seconds": embed_seconds,
        "copy_seconds": copy_seconds,
        "copy_rows_per_s": layout.rows / copy_seconds,
        "index_build_seconds": indexes,
    }


def sizes(url: str) -> dict[str, Any]:
    """Table, TOAST and index sizes of ``memories`` and ``memory_words`` (partitions summed), MB."""
    tables = (
        "WITH t AS (SELECT 'memories'::regclass::oid AS oid UNION ALL"
        " SELECT 'memory_words'::regclass::oid UNION ALL"
        " SELECT inhrelid FROM pg_inherits WHERE inhparent = 'memories'::regclass) "
    )
    with psycopg.connect(url) as conn:
        table = conn.execute(tables + "SELECT sum(pg_table_size(oid)) FROM t").fetchone()
        # A partition's index is named after the partition; report it under its parent's name.
        indexes = conn.execute(
            tables + "SELECT coalesce(p.inhparent::regclass::text, x.indexrelid::regclass::text),"
            " sum(pg_relation_size(x.indexrelid))"
            " FROM pg_index x LEFT JOIN pg_inherits p ON p.inhrelid = x.indexrelid"
            " WHERE x.indrelid IN (SELECT oid FROM t) GROUP BY 1 ORDER BY 1"
        ).fetchall()
        count = conn.execute("SELECT count(*) FROM memories").fetchone()
    mb = 2**20
    return {
        "rows": int(count[0]) if count else 0,
        "table_mb": float(table[0] or 0) / mb if table else 0.0,
        "index_mb": {str(name): float(size) / mb for name, size in indexes},
    }


def _search_latencies(memory: Any, user: str, n: int, seed: int) -> list[float]:
    queries = [q for _, q in synth.queries(n, users=1, seed=seed)]
    times = []
    for query in queries:
        began = time.perf_counter()
        memory.search(query, user_id=user, limit=10)
        times.append(time.perf_counter() - began)
    return times


def searches(url: str, layout: scale_data.Layout, n: int) -> dict[str, Any]:
    """Search p50/p95 through ``memhub.Memory`` for small users and the big user."""
    from memhub import MemhubSettings, Memory
    from memhub.embed.factory import create_embedder

    memory = Memory(settings=MemhubSettings(database_url=url, worker="off", embedder=EMBEDDER))
    try:
        _search_latencies(memory, "scale-big", 30, seed=1)  # warm caches and the model
        small_users = [f"scale-u{(i * 7919) % layout.users}" for i in range(n)]
        small = []
        for i, user in enumerate(small_users):
            small += _search_latencies(memory, user, 1, seed=100 + i)
        big = _search_latencies(memory, "scale-big", n, seed=2)
    finally:
        memory.close()
    embedder = create_embedder(EMBEDDER)
    queries = [q for _, q in synth.queries(n, users=1, seed=3)]
    embed_times = []
    for query in queries:
        began = time.perf_counter()
        embedder.embed_sync([query])  # type: ignore[attr-defined]
        embed_times.append(time.perf_counter() - began)
    return {
        "small_user": latency_summary(small),
        "big_user": latency_summary(big),
        "query_embedding": latency_summary(embed_times),
    }


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(args: list[str], url: str, **extra: str) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "MEMHUB_DATABASE_URL": url,
        "MEMHUB_WORKER": "off",
        "MEMHUB_EMBEDDER": EMBEDDER,
        **extra,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "memhub.cli", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _serve(url: str) -> tuple[subprocess.Popen[bytes], str]:
    """``memhub serve --auth off`` on a free loopback port, once it answers /healthz."""
    import httpx

    port = _free_port()
    server = _start(["serve", "--auth", "off", "--port", str(port)], url)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"memhub serve exited with {server.returncode}")
        try:
            if httpx.get(f"{base}/healthz", timeout=2).status_code == 200:
                return server, base
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    server.kill()
    raise RuntimeError("memhub serve did not answer /healthz within 120 s")


def _drain(url: str, seconds: float) -> tuple[float, int]:
    """Wait until no job is queued (or ``seconds`` pass), timed from the first embedded turn.

    ``add()`` writes a memory's row at once and the worker fills its vector (issue 23), so a
    turn counts as ingested when its memory has a vector.

    Returns the seconds from the first ingested memory to the last check and how many had
    been stored at that first sight, so the worker's model load is left out of its rate.
    """
    began = time.perf_counter()
    first_at, first_count = 0.0, 0
    with psycopg.connect(url, autocommit=True) as conn:
        while time.perf_counter() - began < seconds:
            row = conn.execute(
                "SELECT (SELECT count(*) FROM memory_jobs WHERE status = 'queued'),"
                " (SELECT count(*) FROM memories WHERE user_id LIKE 'live-%'"
                " AND embedding IS NOT NULL)"
            ).fetchone()
            queued, stored = (int(row[0]), int(row[1])) if row else (0, 0)
            if stored and not first_at:
                first_at, first_count = time.perf_counter(), stored
            if queued == 0:
                break
            time.sleep(0.05)
    return time.perf_counter() - (first_at or began), first_count


def ingest_while_searching(url: str, seconds: float, n_adds: int) -> dict[str, Any]:
    """One ``memhub worker`` ingests ``n_adds`` queued turns while a client searches the big user.

    The turns are queued first (the client's add is not what is measured here), then a
    ``memhub serve`` (worker off) and a ``memhub worker`` start; a client searches the big user
    through the server's REST API until the queue is empty. Reported: the worker's turns/s,
    the searches' latency meanwhile, peak RSS of both processes. The rows are deleted
    afterwards so that re-runs see the same 1M.
    """

    from memhub import MemhubSettings, Memory

    _forget_live(url)  # a run stopped half-way may have left its turns behind
    memory = Memory(settings=MemhubSettings(database_url=url, worker="off", embedder=EMBEDDER))
    try:
        for turn in synth.memories(0, n_adds, users=50, prefix="live"):
            memory.add(turn.text, user_id=turn.user_id, infer=False, timestamp=turn.timestamp)
    finally:
        memory.close()
    try:
        return _measure_ingest(url, seconds, n_adds)
    finally:
        _forget_live(url)


def _forget_live(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DELETE FROM memories WHERE user_id LIKE 'live-%'")
        conn.execute("DELETE FROM conversation_context WHERE user_id LIKE 'live-%'")
        conn.execute("DELETE FROM memory_jobs WHERE user_id LIKE 'live-%'")


def _measure_ingest(url: str, seconds: float, n_adds: int) -> dict[str, Any]:
    import httpx

    server, base = _serve(url)
    stop = threading.Event()
    latencies: list[float] = []
    queries = [q for _, q in synth.queries(1000, users=1, seed=500)]

    def search_loop() -> None:
        with httpx.Client(base_url=base, timeout=60) as client:
            for i in range(1_000_000):
                if stop.is_set():
                    return
                body = {"query": queries[i % len(queries)], "user_id": "scale-big", "limit": 10}
                began = time.perf_counter()
                client.post("/v1/memories/search", json=body).raise_for_status()
                latencies.append(time.perf_counter() - began)

    worker = _start(["worker"], url)
    try:
        with PeakRSS(lambda: [worker.pid]) as worker_rss, PeakRSS(lambda: [server.pid]) as rss:
            searcher = threading.Thread(target=search_loop)
            searcher.start()
            elapsed, first = _drain(url, seconds)
            stop.set()
            searcher.join()
        with psycopg.connect(url) as conn:
            done = conn.execute(
                "SELECT count(*) FROM memories WHERE user_id LIKE 'live-%'"
                " AND embedding IS NOT NULL"
            ).fetchone()
        ingested = int(done[0]) if done else 0
        return {
            "turns": ingested,
            "seconds": elapsed,
            "turns_per_s": (ingested - first) / elapsed if elapsed else 0.0,
            "search_while_ingesting": latency_summary(latencies),
            "worker_peak_rss_mb": worker_rss.peak_bytes / 2**20,
            "server_peak_rss_mb": rss.peak_bytes / 2**20,
        }
    finally:
        for process in (worker, server):
            process.terminate()
            process.wait(30)


def vacuum_after_delete(
    url: str, layout: scale_data.Layout, users: int, data: Path
) -> dict[str, Any]:
    """Delete ``users`` small users' rows, time VACUUM, then put the same rows back (timed)."""
    doomed = {f"scale-u{u}" for u in range(users)}
    with psycopg.connect(url, autocommit=True) as conn:
        deleted = conn.execute(
            "DELETE FROM memories WHERE user_id = ANY(%s)", (sorted(doomed),)
        ).rowcount
        began = time.perf_counter()
        # A plain VACUUM skips index cleanup when under 2 % of the pages hold dead rows, so
        # the second, forced one measures what cleaning the HNSW graph costs.
        conn.execute("VACUUM memories")
        vacuum = time.perf_counter() - began
        began = time.perf_counter()
        conn.execute("VACUUM (INDEX_CLEANUP ON) memories")
        cleanup = time.perf_counter() - began
    log.info(
        "VACUUM after deleting %s rows: %.1f s + %.1f s; putting them back",
        deleted,
        vacuum,
        cleanup,
    )
    texts, vectors = scale_data.base_vectors(data / VECTORS)
    reinsert = scale_data.copy_rows(url, layout, texts, vectors, owners=doomed)
    return {
        "deleted_rows": deleted,
        "vacuum_seconds": vacuum,
        "index_cleanup_seconds": cleanup,
        "reinsert_seconds": reinsert,
        "reinsert_rows_per_s": deleted / reinsert if reinsert else 0.0,
    }


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.scale", description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("/work/bench-data/1m"))
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=200_000, help="rows of the one big user")
    parser.add_argument("--partitioned", type=int, default=0, help="hash partitions (0: plain)")
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--ingest", type=int, default=3_000, help="turns ingested while searching")
    parser.add_argument("--vacuum-users", type=int, default=0, help="0: skip the VACUUM test")
    parser.add_argument("--out", type=Path, default=REPO / "bench" / "results")
    parser.add_argument("--load-only", action="store_true")
    parser.add_argument(
        "--shared-buffers",
        help="set PostgreSQL's shared_buffers (e.g. 4GB; 'default' resets it) and restart",
    )
    return parser.parse_args(argv)


def _set_shared_buffers(url: str, data: Path, database: str, size: str) -> str:
    """ALTER SYSTEM shared_buffers and restart the embedded server if it changed; new URL."""
    from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server

    with psycopg.connect(url, autocommit=True) as conn:
        before = conn.execute("SHOW shared_buffers").fetchone()
        if size == "default":
            conn.execute("ALTER SYSTEM RESET shared_buffers")
        else:
            # ALTER SYSTEM takes no server-side parameters: psycopg binds the value client-side.
            psycopg.ClientCursor(conn).execute("ALTER SYSTEM SET shared_buffers = %s", (size,))
    stop_embedded_server(data, force=True)
    url = embedded_database_url(data, database)
    with psycopg.connect(url) as conn:
        after = conn.execute("SHOW shared_buffers").fetchone()
    log.info("shared_buffers %s -> %s", before[0] if before else "?", after[0] if after else "?")
    return url


def _settings(url: str) -> dict[str, str]:
    with psycopg.connect(url) as conn:
        return {
            name: str(row[0])
            for name in ("shared_buffers", "work_mem", "maintenance_work_mem")
            if (row := conn.execute(sql.SQL("SHOW {}").format(sql.Identifier(name))).fetchone())
        }


def main(argv: list[str] | None = None) -> int:
    """Load once (if needed), then measure; writes ``scale-<database>.json``."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    args = _parse_args(argv)
    from memhub.store.postgres.embedded import embedded_database_url

    layout = scale_data.Layout(rows=args.rows, users=args.users, big_rows=args.big)
    database = f"scale_{args.rows}" + (f"_p{args.partitioned}" if args.partitioned else "")
    args.data.mkdir(parents=True, exist_ok=True)
    url = embedded_database_url(args.data, database)
    if args.shared_buffers:
        url = _set_shared_buffers(url, args.data, database, args.shared_buffers)
    result: dict[str, Any] = {
        "database": database,
        "layout": {"rows": layout.rows, "users": layout.users, "big_rows": layout.big_rows},
        "partitions": args.partitioned,
        "machine": machine.describe(url),
    }
    try:
        loaded = _settings_value(url, LOADED)
    except psycopg.errors.UndefinedTable:
        loaded = None
    if loaded is None:
        result["load"] = load(url, layout, args.partitioned, args.data)
    else:
        log.info("already loaded (%s); skipping the load", loaded)
        began = time.perf_counter()
        _open_schema(url)  # migrations a newer memhub brings apply before anything is measured
        result["migrate_seconds"] = time.perf_counter() - began
    result["machine"].update(machine.postgres_versions(url))  # pgvector exists from now on
    result["settings"] = _settings(url)
    result["sizes"] = sizes(url)
    if not args.load_only:
        result["search"] = searches(url, layout, args.searches)
        log.info("search: %s", json.dumps(result["search"]))
        if args.ingest and not args.partitioned:  # see _partition: no ON CONFLICT arbiter
            result["ingest"] = ingest_while_searching(url, 600.0, args.ingest)
            log.info("ingest: %s", json.dumps(result["ingest"]))
        if args.vacuum_users:
            result["vacuum"] = vacuum_after_delete(url, layout, args.vacuum_users, args.data)
            log.info("vacuum: %s", json.dumps(result["vacuum"]))
    result["machine"]["load_after"] = os.getloadavg()
    args.out.mkdir(parents=True, exist_ok=True)
    buffers = result["settings"].get("shared_buffers", "")
    suffix = "" if buffers in ("", "128MB") else f"-sb{buffers}"
    path = args.out / f"scale-{database}{suffix}.json"
    previous = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    for kept in ("load", "vacuum", "ingest"):
        if kept not in result and kept in previous:
            # The load runs once, the VACUUM test when asked: keep their last figures.
            result[kept] = previous[kept]
    path.write_text(json.dumps(result, indent=1), encoding="utf-8")
    log.info("wrote %s", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
