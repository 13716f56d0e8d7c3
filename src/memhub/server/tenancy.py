"""Who is calling, and how a tenant's ids map to stored ids.

A tenant key's every ``user_id``, ``agent_id`` and ``run_id`` is stored as
``"<tenant>:<id>"`` and shown back without the prefix, so two tenants can both have a user
``alice`` and never meet: every scope a tenant can express lies inside its namespace, and
by-id calls check the memory's stored ids before acting (see :func:`owns`). Admin keys see
and pass ids exactly as stored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict, TypeVar

from memhub.errors import UsageError
from memhub.memory.inputs import Limits, check_id_within

__all__ = ["SCOPE_FIELDS", "Principal", "ScopeIds"]

SCOPE_FIELDS = ("user_id", "agent_id", "run_id")

_Item = TypeVar("_Item", bound=Mapping[str, Any])


class ScopeIds(TypedDict):
    """Keyword arguments for :class:`~memhub.AsyncMemory`'s scope parameters, as stored."""

    user_id: str | None
    agent_id: str | None
    run_id: str | None


@dataclass(frozen=True)
class Principal:
    """The caller: an admin (``tenant`` None) or one tenant."""

    name: str
    tenant: str | None
    key_id: int | None = None

    @property
    def is_admin(self) -> bool:
        return self.tenant is None

    @property
    def _prefix(self) -> str:
        return f"{self.tenant}:"

    def stored_id(self, name: str, value: str | None, limits: Limits) -> str | None:
        """The id as stored for this caller (checked first, so ``""`` never becomes ``"t:"``)."""
        if value is None or self.tenant is None:
            return value
        check_id_within(name, value, limits.max_id_length - len(self._prefix))
        return self._prefix + value

    def scope(
        self,
        limits: Limits,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> ScopeIds:
        """The scope ids as stored for this caller."""
        return ScopeIds(
            user_id=self.stored_id("user_id", user_id, limits),
            agent_id=self.stored_id("agent_id", agent_id, limits),
            run_id=self.stored_id("run_id", run_id, limits),
        )

    def owns(self, item: Mapping[str, Any]) -> bool:
        """True if every scope id of the stored ``item`` lies in this caller's namespace."""
        if self.tenant is None:
            return True
        ids = [item[field] for field in SCOPE_FIELDS if item.get(field) is not None]
        return bool(ids) and all(
            isinstance(value, str) and value.startswith(self._prefix) for value in ids
        )

    def shown_id(self, value: str) -> str:
        """A stored id as this caller passes it."""
        if self.tenant is None:
            return value
        return value.removeprefix(self._prefix)

    def present(self, item: _Item) -> _Item:
        """``item`` with its scope ids as this caller knows them."""
        if self.tenant is None:
            return item
        shown = dict(item)
        for field in SCOPE_FIELDS:
            value = shown.get(field)
            if isinstance(value, str):
                shown[field] = self.shown_id(value)
        return shown  # type: ignore[return-value]

    def check_filters(self, filters: object) -> None:
        """Tenants filter by scope ids through the parameters, which are namespaced."""
        if self.tenant is not None and _mentions_scope_field(filters):
            raise UsageError(
                "filters cannot name user_id, agent_id or run_id with a tenant key;"
                " pass them as parameters"
            )


def _mentions_scope_field(node: object) -> bool:
    if isinstance(node, Mapping):
        return any(
            key in SCOPE_FIELDS or _mentions_scope_field(value) for key, value in node.items()
        )
    if isinstance(node, list | tuple):
        return any(_mentions_scope_field(value) for value in node)
    return False
