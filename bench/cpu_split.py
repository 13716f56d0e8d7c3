"""Where the cores go while a worker drains: its threads, PostgreSQL's processes, the rest.

CPU seconds are read from the kernel (``psutil``) at the start and end of a window and reported
as percent of all cores over it, so the components and the idle time add up to 100. The
window's capacity is the kernel's own count of CPU time in every state, idle included, not
wall time by a stopwatch times the cores: the two are read at slightly different moments,
and on a loaded machine that gap alone put the sum above 100.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import psutil

__all__ = ["CpuSplit", "postmaster_of"]


def postmaster_of(backend_pid: int) -> int | None:
    """The postmaster of a local server, from one of its backends (None if not visible)."""
    try:
        return psutil.Process(backend_pid).ppid()
    except psutil.Error:
        return None


def _seconds(times: psutil._common.pcputimes) -> float:  # type: ignore[name-defined]
    return float(times.user + times.system)


@dataclass
class CpuSplit:
    """CPU time of a worker process and a PostgreSQL server over a window.

    The worker's main thread runs the event loop and the SQL client; its other threads run
    the embedder (``asyncio.to_thread``). PostgreSQL's backends do the queries (index
    insertion included); its background processes write WAL, checkpoint, vacuum.
    """

    worker_pid: int
    postmaster_pid: int | None
    _start: dict[str, float] = field(default_factory=dict)

    def _sample(self) -> dict[str, float]:
        now: dict[str, float] = {}
        try:
            threads = psutil.Process(self.worker_pid).threads()
        except psutil.Error:
            threads = []
        main = sum(t.user_time + t.system_time for t in threads if t.id == self.worker_pid)
        now["worker main thread (event loop, SQL client)"] = main
        now["worker other threads (embedding)"] = (
            sum(t.user_time + t.system_time for t in threads) - main
        )
        backends = background = 0.0
        if self.postmaster_pid is not None:
            try:
                postmaster = psutil.Process(self.postmaster_pid)
                children = postmaster.children()
                background += _seconds(postmaster.cpu_times())
            except psutil.Error:
                children = []
            for child in children:
                try:
                    title = " ".join(child.cmdline())
                    spent = _seconds(child.cpu_times())
                except psutil.Error:
                    continue
                if "[local]" in title or "(" in title:  # a client backend: "db [local] ..."
                    backends += spent
                else:
                    background += spent
        now["PostgreSQL backends (queries, index insertion)"] = backends
        now["PostgreSQL background (WAL writer, checkpointer, I/O)"] = background
        machine = psutil.cpu_times()
        now["_busy"] = _seconds(machine) + getattr(machine, "nice", 0.0)
        now["_busy"] += getattr(machine, "irq", 0.0) + getattr(machine, "softirq", 0.0)
        now["_busy"] += getattr(machine, "steal", 0.0)
        # guest time is counted in user time already (Linux)
        guests = getattr(machine, "guest", 0.0) + getattr(machine, "guest_nice", 0.0)
        now["_capacity"] = sum(machine) - guests
        return now

    def start(self) -> None:
        """Begin the window."""
        self._start = self._sample()

    def stop(self) -> dict[str, float]:
        """End the window: percent of all cores per component, the rest of the machine, idle."""
        end = self._sample()
        capacity = max(end["_capacity"] - self._start.get("_capacity", 0.0), 1e-9) / 100
        spent = {k: (end[k] - self._start.get(k, 0.0)) / capacity for k in end}
        spent.pop("_capacity")
        busy = spent.pop("_busy")
        mine = sum(spent.values())
        spent["rest of the machine (other processes)"] = max(busy - mine, 0.0)
        spent["idle"] = max(100.0 - max(busy, mine), 0.0)
        return {k: round(v, 1) for k, v in spent.items()}
