"""What a queued job's payload says: its turns, its progress, and which jobs share a call."""

from __future__ import annotations

from datetime import datetime

from memhub.store.records import Job

__all__ = ["call_groups", "done_of", "expires_at_of", "turn_ids_of"]


def turn_ids_of(job: Job) -> list[int]:
    """The turns a job covers, as its payload lists them."""
    ids = job.payload.get("turn_ids", [])
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise TypeError(f"job {job.id}: payload turn_ids must be a list of integers")
    return ids


def done_of(job: Job) -> int:
    """How many of its turns a large job has applied so far (its saved progress)."""
    done = job.payload.get("done", 0)
    return done if isinstance(done, int) else 0


def expires_at_of(job: Job) -> datetime | None:
    """When the memories of the job's turns expire (``add(expiration_date=...)``), or None."""
    raw = job.payload.get("expires_at")
    return datetime.fromisoformat(raw) if isinstance(raw, str) else None


def call_groups(jobs: list[Job], max_turns: int) -> list[list[Job]]:
    """Consecutive jobs sharing one LLM call: same kind of summary, within the turn budget."""
    groups: list[list[Job]] = []
    current: list[Job] = []
    turns = 0
    for job in jobs:
        n = len(job.payload.get("turn_ids", []))
        same_kind = not current or (
            current[0].payload.get("memory_type") == job.payload.get("memory_type")
        )
        if current and (turns + n > max_turns or not same_kind):
            groups.append(current)
            current, turns = [], 0
        current.append(job)
        turns += n
    if current:
        groups.append(current)
    return groups
