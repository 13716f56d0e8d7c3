"""Read your own writes, per caller: the turns a caller queued, which its searches wait for.

A memory object remembers the turns it queued itself, and a search by it waits (briefly) for
their vectors. A server serves many callers from one object, so there the caller's own
writes are named per request instead (:func:`caller_writes`): a search then waits for what
that caller says it added (a REST causal token), never for anyone else's queue.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from memhub.store.records import Scope

__all__ = ["QueuedTurns", "caller_writes", "current_writes"]


class QueuedTurns:
    """Turns queued for ingestion, by the job's scope: the last ``scopes`` scopes, the last
    ``per_scope`` turns of each (a caller that never searches holds a bounded list)."""

    def __init__(self, scopes: int = 100, per_scope: int = 100) -> None:
        self._turns: dict[Scope, list[int]] = {}
        self._scopes = scopes
        self._per_scope = per_scope

    def note(self, scope: Scope, turn_ids: Sequence[int]) -> None:
        """Remember ``turn_ids`` queued in ``scope``."""
        held = self._turns.pop(scope, [])
        self._turns[scope] = [*held, *turn_ids][-self._per_scope :]
        while len(self._turns) > self._scopes:
            del self._turns[next(iter(self._turns))]

    def note_ids(
        self,
        turn_ids: Sequence[int],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> None:
        """:meth:`note` for scope ids as the memory methods take them (a server's)."""
        self.note(Scope(user_id=user_id, agent_id=agent_id, run_id=run_id), turn_ids)

    def seen_by(self, scope: Scope) -> list[Scope]:
        """The scopes of queued turns a read of ``scope`` sees (those with its ids)."""
        wanted = scope.as_dict()
        return [
            s
            for s in self._turns
            if all(getattr(s, name) == value for name, value in wanted.items())
        ]

    def take(self, scope: Scope) -> list[int]:
        """Forget ``scope``'s turns, returning them (a read waits for them once)."""
        return self._turns.pop(scope, [])

    def items(self) -> list[tuple[Scope, list[int]]]:
        """Every scope's remembered turns, oldest scope first."""
        return [(scope, list(turns)) for scope, turns in self._turns.items()]


_CALLER: ContextVar[QueuedTurns | None] = ContextVar("memhub_caller_writes", default=None)


def current_writes() -> QueuedTurns | None:
    """The caller's writes :func:`caller_writes` set for this task, if any."""
    return _CALLER.get()


@contextmanager
def caller_writes(turns: QueuedTurns) -> Iterator[QueuedTurns]:
    """Within the block, a memory object's adds note their turns in ``turns`` and its reads
    wait only for the turns in ``turns``, instead of the object's own list.

    For a server: one memory object serves every client, and each request names its own
    caller's writes (an add collects them for its token; a search is given the token's).
    The setting is the running task's (a ``ContextVar``), so concurrent requests never see
    each other's.
    """
    token = _CALLER.set(turns)
    try:
        yield turns
    finally:
        _CALLER.reset(token)
