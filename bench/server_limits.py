"""Server limits under load: RSS through 200 maximum-size requests, and a flooding tenant.

Run with the dev install: ``python -m bench.server_limits`` (starts ``memhub serve`` on an
embedded PostgreSQL of its own in a temporary directory, or on ``MEMHUB_DATABASE_URL``).
Prints RSS before, peak and after, and tenant B's latency while tenant A is rate limited
(``--flood-only``: only the latter; ``--search``: with it, B and 8 flooding processes call
search instead of ``/v1/me``; ``--concurrent``: only the RSS of 8 maximum-size requests at
once (idle, once one search loaded the embedder, peak, after: the embedder named by
``MEMHUB_EMBEDDER``, assembled in a process of its own first); ``--pin``: the flooding
client on CPU 1 and the server on CPU 0, as if the flood came from another machine;
``--nice``: the flooding and the CPU-burning processes at nice 19, so their own CPU yields
to the server and B, which is what a flood from another machine costs B; ``--no-hold``:
``MEMHUB_FLOOD_HOLD_SECONDS=0``, so every refusal is answered at once, the control for the
hold; ``--rounds N``: the quiet, flood and CPU-burn phases taken N times in turn with the
samples pooled, so that load beside the bench falls on all three alike; ``--tenants 1,2,4``:
one flood phase per count, the same flooding processes spread over that many tenant keys, so
the clients' own CPU stays the same and what changes is how many tenants the server admits;
``--no-burn``: without the CPU-burn control).
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

ADMIN = "bench-admin-key-0123456789abcdef"
FLOODERS = 4
CONCURRENT = 8  # maximum-size requests in flight at once (--concurrent)
SAMPLES = 200


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start(
    home: Path, extra_env: dict[str, str] | None = None, python_args: tuple[str, ...] = ()
) -> tuple[subprocess.Popen[bytes], str]:
    """``memhub serve`` on a free port (``python_args`` go before ``-m memhub.cli``)."""
    port = _port()
    url = os.environ.get("MEMHUB_DATABASE_URL")
    if not url:  # started here, so this process can stop it at the end
        from memhub.store.postgres.embedded import embedded_database_url

        url = embedded_database_url(home)
    env = {
        **os.environ,
        "MEMHUB_DATABASE_URL": url,
        "MEMHUB_DATA_DIR": str(home),
        "MEMHUB_ADMIN_KEY": ADMIN,
        "MEMHUB_PORT": str(port),
        "MEMHUB_RATE_LIMIT": "20",
        "MEMHUB_RATE_BURST": "40",
        **(extra_env or {}),
    }
    process = subprocess.Popen(
        [sys.executable, *python_args, "-m", "memhub.cli", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    for _ in range(1200):
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    process.kill()
    raise SystemExit("the server did not start")


def _assemble_model(home: Path, extra_env: dict[str, str] | None) -> None:
    """Assemble and run the embedder once in a process of its own, as an install would.

    The first use of the default model in a data directory assembles it (ONNX export and
    quantisation): done inside the server, that work's memory would stay in the RSS measured.
    """
    script = (
        "import sys; from pathlib import Path; from memhub.config import MemhubSettings; "
        "from memhub.memory.services import embedder_from_settings; "
        "embedder = embedder_from_settings(MemhubSettings(data_dir=Path(sys.argv[1]))); "
        "embedder.embed_sync(['warm'])"
    )
    env = {**os.environ, **(extra_env or {})}
    subprocess.run([sys.executable, "-c", script, str(home)], env=env, check=True)


@contextlib.contextmanager
def served(
    extra_env: dict[str, str] | None = None, python_args: tuple[str, ...] = ()
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A ``memhub serve`` on its own temporary home, stopped with its embedded server after."""
    with tempfile.TemporaryDirectory(prefix="memhub-bench-") as tmp:
        _assemble_model(Path(tmp), extra_env)
        process, base = _start(Path(tmp), extra_env, python_args)
        try:
            yield process, base
        finally:
            process.terminate()
            process.wait(30)
            from memhub.store.postgres.embedded import stop_embedded_server

            stop_embedded_server(Path(tmp))


def _max_body() -> bytes:
    # 32 messages of 32,000 characters: just under the 1 MiB body limit, every one stored.
    body = {"messages": ["x" * 31_990 + f" {n:05d}" for n in range(32)], "user_id": "rss"}
    raw = json.dumps({**body, "infer": False}).encode()
    assert len(raw) < 1_048_576, len(raw)
    return raw


def rss_under_max_requests(base: str, pid: int, admin: httpx.Client) -> dict[str, float]:
    before = _rss_mb(pid)
    peak = before
    body = _max_body()
    oversize = b'{"messages": "' + b"y" * 2_000_000 + b'", "user_id": "rss"}'
    statuses: dict[int, int] = {}
    for n in range(200):
        response = admin.post(
            "/v1/memories",
            content=body if n % 2 == 0 else oversize,
            headers={"Content-Type": "application/json"},
        )
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
        peak = max(peak, _rss_mb(pid))
    print(f"  statuses: {statuses}")
    deadline = time.monotonic() + 600
    while admin.get("/v1/jobs/stats").json()["queued"] and time.monotonic() < deadline:
        peak = max(peak, _rss_mb(pid))
        time.sleep(0.5)
    return {"before": before, "peak": peak, "after": _rss_mb(pid)}


def rss_under_concurrent_max_requests(base: str, pid: int, admin: httpx.Client) -> dict[str, float]:
    """Peak RSS while CONCURRENT maximum-size adds, then as many 2 MB bodies, arrive at once."""
    import threading

    before = _rss_mb(pid)
    # One search loads the embedder: what the model costs, apart from the requests' peak.
    warm = admin.post("/v1/memories/search", json={"query": "warm", "user_id": "rss"})
    assert warm.status_code == 200, warm.text
    loaded = _rss_mb(pid)
    peak = [loaded]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _rss_mb(pid))
            time.sleep(0.02)

    oversize = b'{"messages": "' + b"y" * 2_000_000 + b'", "user_id": "rss"}'
    statuses: dict[int, int] = {}

    def send(body: bytes) -> None:
        with httpx.Client(base_url=base, headers=dict(admin.headers), timeout=300) as client:
            response = client.post(
                "/v1/memories", content=body, headers={"Content-Type": "application/json"}
            )
        statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

    sampler = threading.Thread(target=sample)
    sampler.start()
    for body in (_max_body(), oversize):
        senders = [threading.Thread(target=send, args=(body,)) for _ in range(CONCURRENT)]
        for sender in senders:
            sender.start()
        for sender in senders:
            sender.join()
    deadline = time.monotonic() + 600
    while admin.get("/v1/jobs/stats").json()["queued"] and time.monotonic() < deadline:
        time.sleep(0.5)
    done.set()
    sampler.join()
    print(f"  statuses: {statuses}")
    return {"before": before, "model loaded": loaded, "peak": peak[0], "after": _rss_mb(pid)}


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


SEARCH = "--search" in sys.argv[1:]  # B and the flood call search, not /v1/me
NICE = "--nice" in sys.argv[1:]  # the load processes at nice 19
# --no-hold: MEMHUB_FLOOD_HOLD_SECONDS=0, every refusal answered at once (the hold's control)
NO_HOLD = {"MEMHUB_FLOOD_HOLD_SECONDS": "0"} if "--no-hold" in sys.argv[1:] else {}
_QUERY = {"query": "where does the user live", "user_id": "u", "limit": 5}


def _flooders() -> int:
    return 8 if SEARCH else FLOODERS


def _call(client: httpx.Client) -> httpx.Response:
    if SEARCH:
        return client.post("/v1/memories/search", json=_QUERY)
    return client.get("/v1/me")


def _as_load(cpus: set[int] | None) -> None:
    if cpus:
        os.sched_setaffinity(0, cpus)
    if NICE:
        os.nice(19)


def _flood(
    base: str, key: str, refused: Any, admitted: Any, cpus: set[int] | None, stop: Any
) -> None:
    # A process of its own: flooding threads in the sampler's process would make B wait for
    # the GIL, not for the server.
    _as_load(cpus)
    auth = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, headers=auth, timeout=120) as a:
        while not stop.is_set():
            try:
                counter = refused if _call(a).status_code == 429 else admitted
            except httpx.HTTPError:  # a loaded machine: the flood goes on
                continue
            with counter.get_lock():
                counter.value += 1


def _spin(cpus: set[int] | None, stop: Any) -> None:
    # The control: as much CPU as a flooding client, none of it spent on the server.
    _as_load(cpus)
    while not stop.is_set():
        sum(range(10_000))


def _with_load(
    target: Any, args: Callable[[int], tuple[Any, ...]], sample: Any
) -> tuple[list[float], float]:
    """B's samples while ``_flooders()`` processes run ``target`` (process n with ``args(n)``),
    and the seconds they took."""
    stop = multiprocessing.Event()
    count = _flooders()
    loads = [multiprocessing.Process(target=target, args=(*args(n), stop)) for n in range(count)]
    for process in loads:
        process.start()
    time.sleep(1)  # the load under way before sampling
    started = time.monotonic()
    samples = sample()
    elapsed = time.monotonic() - started
    stop.set()
    for process in loads:
        process.join()
    return samples, elapsed


def _rounds() -> int:
    """``--rounds N``: quiet, flood and CPU-burn phases taken N times in turn, samples pooled.

    On a machine shared with other work, the load beside the bench changes from minute to
    minute: alternating the phases exposes each to the same mix, where one long phase each
    would compare different minutes.
    """
    argv = sys.argv[1:]
    return int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 1


def _tenant_counts() -> list[int]:
    """``--tenants 1,2,4``: how many tenants flood at once, one flood phase per count."""
    argv = sys.argv[1:]
    if "--tenants" not in argv:
        return [1]
    return [int(n) for n in argv[argv.index("--tenants") + 1].split(",")]


def _quantile(samples: list[float], q: int) -> float:
    return statistics.quantiles(samples, n=100)[q - 1]


def flood_latency(
    base: str, admin: httpx.Client, pid: int, cpus: set[int] | None
) -> dict[str, float]:
    """B's latency quiet, while 1 or more tenants flood, and while as many processes only
    burn CPU."""
    counts = _tenant_counts()
    flooding = [f"a{n}" if max(counts) > 1 else "a" for n in range(max(counts))]
    keys = [
        admin.post("/v1/keys", json={"name": t, "tenant": t}).json()["key"]
        for t in [*flooding, "b"]
    ]
    refused = {n: multiprocessing.Value("i", 0) for n in counts}
    admitted = {n: multiprocessing.Value("i", 0) for n in counts}
    rounds = _rounds()
    headers = {"Authorization": f"Bearer {keys[-1]}"}
    if SEARCH:  # something to find
        with httpx.Client(base_url=base, headers=headers, timeout=120) as b:
            for n in range(20):
                note = {"messages": f"fact {n}: the user lives in Paris", "user_id": "u"}
                b.post("/v1/memories", json={**note, "infer": False, "wait": True})
        time.sleep(3)  # B's bucket refills

    def sample() -> list[float]:
        times = []
        with httpx.Client(base_url=base, headers=headers, timeout=120) as b:
            for _ in range(SAMPLES // rounds):
                start = time.perf_counter()
                assert _call(b).status_code == 200
                times.append((time.perf_counter() - start) * 1000)
                time.sleep(0.06)  # within b's own 20/s
        return times

    quiet: list[float] = []
    loud: dict[int, list[float]] = {n: [] for n in counts}
    spun: list[float] = []
    cpu = dict.fromkeys(counts, 0.0)
    elapsed = dict.fromkeys(counts, 0.0)
    quiet_cpu = quiet_elapsed = 0.0
    for _ in range(rounds):
        before, started = _cpu_seconds(pid), time.monotonic()
        quiet += sample()
        quiet_cpu += _cpu_seconds(pid) - before
        quiet_elapsed += time.monotonic() - started
        for n in counts:
            before = _cpu_seconds(pid)

            def args(i: int, n: int = n) -> tuple[Any, ...]:
                return (base, keys[i % n], refused[n], admitted[n], cpus)

            samples, seconds = _with_load(_flood, args, sample)
            cpu[n] += _cpu_seconds(pid) - before
            loud[n] += samples
            elapsed[n] += seconds
        if "--no-burn" not in sys.argv[1:]:
            spun += _with_load(_spin, lambda i: (cpus,), sample)[0]
    result = {
        "b_p50_quiet_ms": _quantile(quiet, 50),
        "b_p95_quiet_ms": _quantile(quiet, 95),
        "server_cpu_share_quiet": quiet_cpu / quiet_elapsed,
    }
    for n in counts:
        tag = "flood" if counts == [1] else f"flood{n}"
        result |= {
            f"b_p50_{tag}_ms": _quantile(loud[n], 50),
            f"b_p95_{tag}_ms": _quantile(loud[n], 95),
            f"p50_{tag}_over_quiet": _quantile(loud[n], 50) / _quantile(quiet, 50),
            f"p95_{tag}_over_quiet": _quantile(loud[n], 95) / _quantile(quiet, 95),
            f"a_refused_429_per_s_{tag}": refused[n].value / elapsed[n],
            f"a_served_per_s_{tag}": admitted[n].value / elapsed[n],
            f"server_cpu_share_in_{tag}": cpu[n] / elapsed[n],
        }
    if spun:
        result |= {
            "b_p50_cpu_burn_ms": _quantile(spun, 50),
            "b_p95_cpu_burn_ms": _quantile(spun, 95),
            "p95_cpu_burn_over_quiet": _quantile(spun, 95) / _quantile(quiet, 95),
        }
    return result


def main() -> int:
    only_flood = "--flood-only" in sys.argv[1:]
    # --pin: the server and B's client on CPU 0, A's flooding client on CPU 1, as if A flooded
    # from another machine (unpinned, A's client processes take CPU from the server and B).
    pin = "--pin" in sys.argv[1:] and len(os.sched_getaffinity(0)) >= 2
    with served(NO_HOLD) as (process, base):
        if pin:  # B's client and the server on CPU 0, A's flooding client on CPU 1
            os.sched_setaffinity(process.pid, {0})
            os.sched_setaffinity(0, {0})
        with httpx.Client(
            base_url=base, headers={"Authorization": f"Bearer {ADMIN}"}, timeout=120
        ) as admin:
            if "--concurrent" in sys.argv[1:]:
                print(f"{CONCURRENT} concurrent maximum-size adds, then {CONCURRENT} 2 MB bodies:")
                rss = rss_under_concurrent_max_requests(base, process.pid, admin)
                print("  RSS MB:", {k: round(v, 1) for k, v in rss.items()})
                return 0
            if not only_flood:
                print("200 maximum-size requests (every other one 2 MB, refused with 413):")
                rss = rss_under_max_requests(base, process.pid, admin)
                print("  RSS MB:", {k: round(v, 1) for k, v in rss.items()})
            where = "on CPU 1, the server on CPU 0" if pin else "sharing every CPU"
            tenants = ",".join(map(str, _tenant_counts()))
            print(
                f"tenant B while {tenants} tenants flood ({_flooders()} processes {where}),"
                f" load average {os.getloadavg()[0]:.1f}:"
            )
            flood = flood_latency(base, admin, process.pid, {1} if pin else None)
            print("  ", {k: round(v, 2) for k, v in flood.items()})
            print(f"  load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
