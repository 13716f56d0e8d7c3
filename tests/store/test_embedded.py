"""The embedded server: shared by concurrent processes, recovered from after a restart."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psycopg
import pytest

from memhub import MemhubSettings, Memory, StoreUnavailable, UserMessage
from memhub.store.postgres.embedded import embedded_database_url, stop_embedded_server

CHILD = textwrap.dedent(
    """
    import sys, time
    from memhub import Memory, UserMessage
    start = float(sys.argv[1])
    while time.time() < start:
        time.sleep(0.001)
    memory = Memory(user_id="p", session_id=sys.argv[2], use_long_term=False)
    assert memory.add_memory(UserMessage(content="hello from " + sys.argv[2]))
    print(len(memory.retrieve_short_memory(turns=5)))
    """
)


def test_two_processes_start_one_server_on_a_fresh_directory(tmp_path: Path) -> None:
    env = {**os.environ, "MEMHUB_DATA_DIR": str(tmp_path / "home")}
    env.pop("MEMHUB_DATABASE_URL", None)
    env.pop("DB_URL", None)
    start = str(time.time() + 1.0)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CHILD, start, f"s{n}"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(2)
    ]
    outputs = [proc.communicate(timeout=120) for proc in procs]
    for proc, (out, err) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, err
        assert out.strip() == "1"
    # Both wrote into the same server and database.
    url = embedded_database_url(tmp_path / "home")
    with psycopg.connect(url) as conn:
        sessions = conn.execute("SELECT session_id FROM conversation_context ORDER BY 1").fetchall()
    assert sessions == [("s0",), ("s1",)]
    stop_embedded_server(tmp_path / "home")


def test_database_down_then_back(tmp_path: Path) -> None:
    home = tmp_path / "restart"
    settings = MemhubSettings(embedder="minilm", data_dir=home, connect_timeout=1.0)
    memory = Memory(user_id="u", session_id="s", settings=settings, use_long_term=False)
    assert memory.add_memory(UserMessage(content="before"))

    stop_embedded_server(home)
    assert memory.add_memory(UserMessage(content="while down")) is False
    assert memory.retrieve_short_memory(turns=5) == []
    # Failing fast, not hanging: the pool gives up after connect_timeout, and says so.
    with pytest.raises(StoreUnavailable, match=r"couldn't get a connection after 1\.00 sec"):
        memory.get_all(user_id="u")

    embedded_database_url(home)  # the server comes back on the same directory
    deadline = time.monotonic() + 60
    while not memory.add_memory(UserMessage(content="after")):
        assert time.monotonic() < deadline, "the same Memory object never recovered"
        time.sleep(0.2)
    assert [m.content for m in memory.retrieve_short_memory(turns=5)] == ["before", "after"]
    memory.close()
    stop_embedded_server(home)


def test_a_postmaster_pid_is_watched_until_it_exits_then_forgotten() -> None:
    # The per-checkout check polls a pidfd; once the process has exited it is dropped, so a
    # restarted postmaster that gets the same pid back is watched afresh.
    from memhub.store.postgres import embedded

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert not embedded._exited(child.pid)
        assert child.pid in embedded._exit_polls
    finally:
        child.kill()
        child.wait()
    assert embedded._exited(child.pid)
    assert child.pid not in embedded._exit_polls
