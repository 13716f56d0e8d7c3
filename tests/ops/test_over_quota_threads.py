"""Real ``memhub serve`` and ``memhub mcp --http`` processes: a tenant key's search runs its
query embedding at normal priority while the key is within its quota, and in a nice-19
thread once the key has been refused (memhub._cpu). Read from /proc: the nice value of
every thread of the server process. MCP is driven with raw JSON-RPC over httpx, so the
SDK's own session tasks run the tool, as they do for any client."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from memhub._cpu import BACKGROUND_NICE
from tests.ops.procs import (
    ADMIN_KEY,
    free_port,
    memhub_env,
    start,
    start_server,
    stop,
)

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="a nice value per thread")


def _nice(stat: Path) -> int:
    return int(stat.read_text().rsplit(")", 1)[1].split()[16])  # field 19, after the ")"


def niced_threads(pid: int) -> list[int]:
    """The nice values of the process's threads that are not at its own (0, or the nice
    value the tests run at: ``nice -n 5 pytest`` starts the server at 5)."""
    own = _nice(Path(f"/proc/{pid}/stat"))
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            nice = _nice(task / "stat")
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        if nice != own:
            found.append(nice)
    return found


def flood_then_send(send: Callable[[], int]) -> None:
    """Call ``send`` until it is refused, then until it is admitted again (over quota)."""
    for _ in range(20):
        if send() == 429:
            break
    else:
        raise AssertionError("never refused: the quota is not applied")
    # Every refusal renews "over quota" (OVER_QUOTA_SECONDS, 2 s); asking again every 0.1 s
    # until a token is back (1 a second), the admitted request follows a refusal by about
    # 0.1 s, not by a sleep a loaded machine could stretch past the 2 s.
    for _ in range(600):
        time.sleep(0.1)
        if send() == 200:
            return
    raise AssertionError("never admitted again")


def test_an_over_quota_keys_search_embeds_in_a_niced_thread_on_both_doors(home: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_RATE_LIMIT="1", MEMHUB_RATE_BURST="3")
    server, url = start_server(env, home / "serve.log")
    admin = {"Authorization": f"Bearer {ADMIN_KEY}"}
    key = httpx.post(f"{url}/v1/keys", json={"name": "a", "tenant": "a"}, headers=admin).json()
    rest = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key['key']}"}, timeout=60)
    query = {"query": "where does the user live", "user_id": "u"}
    with rest:
        assert rest.post("/v1/memories/search", json=query).status_code == 200
        assert niced_threads(server.pid) == [], "a search within the quota was niced"
        flood_then_send(lambda: rest.post("/v1/memories/search", json=query).status_code)
    assert niced_threads(server.pid) == [BACKGROUND_NICE]
    stop(server)

    port = free_port()
    mcp = start(["mcp", "--http", "--port", str(port), "--user-id", "web"], env, home / "mcp.log")
    for _ in range(600):
        try:
            socket.create_connection(("127.0.0.1", port), 1).close()
            break
        except OSError:
            time.sleep(0.1)
    headers = {
        "Authorization": f"Bearer {key['key']}",
        "Accept": "application/json, text/event-stream",
    }
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search_memories", "arguments": {"query": "where does ada live"}},
    }
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        time.sleep(3.5)  # the key's bucket full again
        hello = {"name": "ops-test", "version": "0"}
        init = client.post(
            "/mcp",
            headers=headers,
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": hello,
                },
            },
        )
        assert init.status_code == 200, init.text
        session = init.headers.get("mcp-session-id")
        headers |= {"mcp-protocol-version": "2025-06-18"}
        if session:
            headers["mcp-session-id"] = session
        notified = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert client.post("/mcp", headers=headers, json=notified).status_code < 300
        first = client.post("/mcp", headers=headers, json=call)
        assert first.status_code == 200 and '"results"' in first.text, first.text
        assert niced_threads(mcp.pid) == [], "a search within the quota was niced"
        flood_then_send(lambda: client.post("/mcp", headers=headers, json=call).status_code)
    assert niced_threads(mcp.pid) == [BACKGROUND_NICE]
    stop(mcp)
