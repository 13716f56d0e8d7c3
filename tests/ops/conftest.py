"""Fixtures of the operations tests: data directories, and no process outliving its test."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ops.procs import TcpPostgres, postmaster_pid, private_home, spawned, stop


@pytest.fixture(autouse=True)
def _end_spawned() -> Iterator[None]:
    """Kill what a failed test left running (a passing test stops its own processes)."""
    yield
    while spawned:
        proc = spawned.pop()
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)


@pytest.fixture
def home() -> Iterator[Path]:
    """A fresh data directory (see :func:`private_home`); its server stopped, then removed."""
    path = private_home()
    yield path
    for proc in spawned:  # the processes using it first, or they would restart it
        if proc.poll() is None:
            stop(proc, signal.SIGKILL)
    pid = postmaster_pid(path / "pg")
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGQUIT)  # immediate shutdown; its children follow
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def tcp_postgres(home: Path) -> Iterator[TcpPostgres]:
    """A PostgreSQL on 127.0.0.1 (the "external" server of a scaled-out deployment)."""
    server = TcpPostgres(home / "tcp")
    try:
        yield server
    finally:
        for proc in spawned:  # its clients first, so they do not hold it up
            if proc.poll() is None:
                stop(proc, signal.SIGKILL)
        server.stop()
