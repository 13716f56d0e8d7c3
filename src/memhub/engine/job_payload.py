"""Which claimed jobs share one LLM call (their payloads are typed:
:class:`memhub.store.records.JobPayload`, read when the store hands the jobs out)."""

from __future__ import annotations

from memhub.store.records import Job

__all__ = ["call_groups"]


def call_groups(jobs: list[Job], max_turns: int) -> list[list[Job]]:
    """Consecutive jobs sharing one LLM call: same kind of summary, within the turn budget."""
    groups: list[list[Job]] = []
    current: list[Job] = []
    turns = 0
    for job in jobs:
        n = len(job.payload.turns)
        same_kind = not current or current[0].payload.memory_type == job.payload.memory_type
        if current and (turns + n > max_turns or not same_kind):
            groups.append(current)
            current, turns = [], 0
        current.append(job)
        turns += n
    if current:
        groups.append(current)
    return groups
