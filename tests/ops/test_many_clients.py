"""One ``memhub serve`` and many clients: a search waits only for its own caller's writes.

A real server process on its own embedded PostgreSQL, with no worker and a search wait of
600 s (``MEMHUB_SEARCH_WAIT_TIMEOUT``): a search that waited for anything still queued would
hang past the clients' 60 s timeout, so a search that answers did not wait. A search given
its caller's causal token does wait: it returns the memory by meaning only once a
``memhub worker`` started meanwhile has embedded it.
"""

from __future__ import annotations

import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.ops.procs import ADMIN_KEY, memhub_env, private_home, spawned, start, start_server, stop

SEARCH = "/v1/memories/search"


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, dict[str, str], Path]]:
    home = private_home()
    env = memhub_env(
        MEMHUB_DATA_DIR=str(home), MEMHUB_WORKER="off", MEMHUB_SEARCH_WAIT_TIMEOUT="600"
    )
    proc, url = start_server(env, home / "serve.log")
    spawned.remove(proc)  # the module's: stopped here, not after each test
    try:
        yield url, env, home
    finally:
        stop(proc, signal.SIGTERM)
    log = (home / "serve.log").read_text()
    shutil.rmtree(home, ignore_errors=True)
    assert "Traceback" not in log, log


def client(url: str, key: str = ADMIN_KEY) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)


def add(c: httpx.Client, text: str, user: str) -> dict[str, Any]:
    added = c.post("/v1/memories", json={"messages": text, "user_id": user, "infer": False})
    assert added.status_code == 200, added.text
    body: dict[str, Any] = added.json()
    assert body["causal_token"] == added.headers["Memhub-Causal-Token"]
    return body


def queued(c: httpx.Client) -> int:
    return int(c.get("/v1/jobs/stats").json()["queued"])


def test_a_search_never_waits_for_another_callers_adds(
    served: tuple[str, dict[str, str], Path],
) -> None:
    url, _, _ = served
    with client(url) as a, client(url) as b:
        for n in range(5):  # A streams adds to one user; nobody embeds them
            add(a, f"olive grove note {n}", "shared")
        before = queued(a)
        found = b.post(SEARCH, json={"query": "olive grove", "user_id": "shared"})
        assert found.status_code == 200, found.text
        # B found A's words at once and did not wait for A's vectors: they are still queued
        assert len(found.json()["results"]) == 5
        assert queued(a) == before >= 5


def test_a_search_with_its_token_waits_for_its_own_vectors_only(
    served: tuple[str, dict[str, str], Path],
) -> None:
    url, env, home = served
    with client(url) as a, client(url) as b:
        token = add(a, "I adore hiking in the Alps every summer", "walker")["causal_token"]
        answers: list[httpx.Response] = []
        query = {"query": "mountain walking holidays", "user_id": "walker"}  # no shared word
        waiting = threading.Thread(
            target=lambda: answers.append(
                client(url).post(SEARCH, json={**query, "causal_tokens": [token]}, timeout=300)
            )
        )
        waiting.start()
        # Meanwhile another caller's search of the same user answers (without the vector).
        assert b.post(SEARCH, json=query).status_code == 200
        assert waiting.is_alive(), "A's search waits: no worker has embedded its memory yet"
        worker = start(["worker"], env, home / "worker.log")
        try:
            waiting.join(300)
        finally:
            stop(worker, signal.SIGTERM)
        assert not waiting.is_alive()
        (answer,) = answers
        assert answer.status_code == 200, answer.text
        texts = [r["memory"] for r in answer.json()["results"]]
        assert texts == ["I adore hiking in the Alps every summer"], "found by meaning"


def test_a_token_waits_only_inside_its_callers_namespace(
    served: tuple[str, dict[str, str], Path],
) -> None:
    url, _, _ = served
    with client(url) as admin:
        keys = {}
        for tenant in ("acme", "globex"):
            created = admin.post("/v1/keys", json={"name": tenant, "tenant": tenant})
            assert created.status_code == 201, created.text
            keys[tenant] = str(created.json()["key"])
    with client(url, keys["acme"]) as acme, client(url, keys["globex"]) as globex:
        token = add(acme, "the acme launch code is hidden", "x")["causal_token"]
        # globex passes acme's token: it names user x of globex's own namespace, where no
        # such turns are queued, so the search answers at once and shows nothing of acme's.
        found = globex.post(SEARCH, json={"query": "launch code", "user_id": "x",
                                          "causal_tokens": [token]})  # fmt: skip
        assert found.status_code == 200 and found.json()["results"] == []
        for bad in ("garbage", "c1.!!!", "c1.eyJzIjpbbnVsbCxudWxsLG51bGxdLCJ0IjpbMV19"):
            refused = globex.post(SEARCH, json={"query": "q", "user_id": "x",
                                                "causal_tokens": [bad]})  # fmt: skip
            assert refused.status_code == 422, refused.text
            assert "causal_tokens" in refused.text
