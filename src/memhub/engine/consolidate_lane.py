"""The consolidation lane: claimed ``consolidate`` jobs grouped per owner into LLM calls.

An owner's jobs go in the order their turns were said, as few calls as the turn budget
allows (:func:`call_groups`); each call is prepared with nothing held open and applied in one
short transaction. A failure backs off that owner's remaining calls only, keeping its order;
other owners of the claim go on.
"""

from __future__ import annotations

import asyncio
import logging

from memhub.engine.consolidate import Consolidator, fact_scope
from memhub.engine.leases import JobReturns
from memhub.errors import Conflict
from memhub.store.protocol import Store
from memhub.store.records import Job

__all__ = ["ConsolidationLane", "call_groups"]

log = logging.getLogger("memhub.worker")


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


class ConsolidationLane:
    """Draws facts from claimed turns, one owner at a time."""

    def __init__(
        self,
        store: Store,
        consolidator: Consolidator,
        returns: JobReturns,
        *,
        holder: str,
        max_turns_per_call: int,
        stopping: asyncio.Event,
    ) -> None:
        self.store = store
        self.consolidator = consolidator
        self.returns = returns
        self.holder = holder
        self.max_turns_per_call = max_turns_per_call
        self.stopping = stopping  # set: no new call starts, the rest goes back

    async def work(self, jobs: list[Job]) -> int:
        """Consolidate ``jobs``; returns how many finished."""
        by_owner: dict[tuple[str | None, ...], list[Job]] = {}
        for job in sorted(jobs, key=lambda j: j.id):
            scope = fact_scope(job.scope)
            by_owner.setdefault((scope.user_id, scope.agent_id, scope.run_id), []).append(job)
        done = 0
        for owner_jobs in by_owner.values():
            done += await self._owner(owner_jobs)
        return done

    async def _owner(self, jobs: list[Job]) -> int:
        """One owner's calls in order; a failure backs off this owner's remaining calls only."""
        groups = call_groups(jobs, self.max_turns_per_call)
        done = 0
        for n, group in enumerate(groups):
            later = [job for g in groups[n + 1 :] for job in g]
            if self.stopping.is_set():
                await self.returns.give_back(group + later)
                break
            try:
                plan = await self.consolidator.prepare(self.store, group)
                async with self.store.apply_jobs(group, self.holder, plan.read_set) as batch:
                    await self.consolidator.apply(batch, plan)
            except Conflict as exc:
                log.info("worker: consolidation lost a race (%s); giving the jobs back", exc)
                await self.returns.give_back(group + later)
                break
            except Exception as exc:  # any failure counts toward parking this group
                retry_at = await self.returns.failed_attempt(group, exc)
                await self.returns.give_back(later, retry_at)  # keep the owner's order
                break
            done += len(group)
        return done
