"""memhub as a LangGraph store: ``BaseStore`` over memhub's memories (extra ``langgraph``).

Each item is one memory of the store's scope (``agent_id="langgraph"`` unless told otherwise):
its text, embedded and full-text indexed, is the item's indexed fields; its namespace, key and
value live in the memory's metadata under ``"langgraph"``. Search is memhub's hybrid search.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, TypedDict

from memhub._portal import portal_loop, run_sync
from memhub.errors import UsageError, install_hint
from memhub.memory import AsyncMemory, Memory
from memhub.memory.results import MemoryItem

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"memhub.integrations.langgraph needs LangGraph: {install_hint('langgraph')}"
    ) from exc

__all__ = ["MemhubStore"]

_FIELD = "langgraph"  # the metadata key holding namespace, key and value
_OPERATORS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
_MAX_LISTED = 10_000  # list_namespaces reads at most this many items


class _Scope(TypedDict):
    user_id: str | None
    agent_id: str | None


class MemhubStore(BaseStore):
    """A LangGraph ``BaseStore`` keeping items as memhub memories.

    Args:
        memory: A :class:`~memhub.Memory` (sync and async use alike), or an
            :class:`~memhub.AsyncMemory` for async use on one event loop.
        user_id: Scope the items to this user (default: none).
        agent_id: Scope the items to this agent (default ``"langgraph"`` when no user_id).
        index_fields: Value fields whose text is embedded and searched (``"a.b"`` reaches into
            objects); None: the whole value as JSON. A ``put(..., index=[...])`` overrides it.

    TTLs are not supported (``supports_ttl`` is False). Writes wait until the item is
    searchable, as LangGraph code reads its own writes.
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory | AsyncMemory,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        index_fields: Sequence[str] | None = None,
    ) -> None:
        self._on_portal = isinstance(memory, Memory)
        self._memory = memory.async_memory if isinstance(memory, Memory) else memory
        if user_id is None and agent_id is None:
            agent_id = "langgraph"
        self._scope = _Scope(user_id=user_id, agent_id=agent_id)
        self._index_fields = None if index_fields is None else list(index_fields)

    # -- BaseStore --------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return their results (sync)."""
        return run_sync(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return their results."""
        work = self._batch(list(ops))
        if self._on_portal:  # a sync Memory's engine lives on memhub's own loop
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, portal_loop()))
        return await work

    async def _batch(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                found = await self._find(op.namespace, op.key)
                results.append(None if found is None else _item(found))
            elif isinstance(op, PutOp):
                await self._put(op)
                results.append(None)
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(await self._namespaces(op))
            else:
                raise UsageError(f"unknown store operation {type(op).__name__}")
        return results

    # -- operations -------------------------------------------------------------------------
    async def _find(self, namespace: tuple[str, ...], key: str) -> MemoryItem | None:
        filters = {**_namespace_filter(namespace, exact=True), f"{_FIELD}.key": key}
        found = await self._memory.get_all(**self._scope, filters=filters, limit=1)
        return found["results"][0] if found["results"] else None

    async def _put(self, op: PutOp) -> None:
        _check_namespace(op.namespace)
        existing = await self._find(op.namespace, op.key)
        if op.value is None:
            if existing is not None:
                await self._memory.delete(existing["id"], **self._scope)
            return
        # index=False still embeds the whole value: memhub indexes every memory.
        fields = self._index_fields if op.index is None else (op.index or None)
        text = _text(op.value, fields)
        metadata = {
            _FIELD: {
                "ns": {str(n): part for n, part in enumerate(op.namespace)},
                "depth": len(op.namespace),
                "key": op.key,
                "value": op.value,
            }
        }
        if existing is not None:
            await self._memory.update(existing["id"], text, metadata=metadata, **self._scope)
        else:
            await self._memory.add(text, **self._scope, metadata=metadata, infer=False, wait=True)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        filters = {
            **_namespace_filter(op.namespace_prefix, exact=False),
            **_value_filter(op.filter),
        }
        wanted = op.offset + op.limit
        if wanted <= 0:
            return []
        if op.query:
            found = await self._memory.search(
                op.query, **self._scope, filters=filters, limit=min(wanted, 1000)
            )
        else:
            found = await self._memory.get_all(
                **self._scope, filters=filters, limit=min(wanted, _MAX_LISTED)
            )
        return [_item(m, search=True) for m in found["results"][op.offset : wanted]]

    async def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = await self._memory.get_all(**self._scope, limit=_MAX_LISTED)
        seen: set[tuple[str, ...]] = set()
        for memory in found["results"]:
            namespace = _namespace(memory)
            if namespace is None or not all(
                _matches(c, namespace) for c in op.match_conditions or ()
            ):
                continue
            seen.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(seen)[op.offset : op.offset + op.limit]


# -- pure helpers ---------------------------------------------------------------------------


def _check_namespace(namespace: tuple[str, ...]) -> None:
    if not namespace or any(not isinstance(p, str) or not p or "." in p for p in namespace):
        raise UsageError(f"namespace {namespace!r}: non-empty strings without dots")


def _namespace_filter(namespace: tuple[str, ...], *, exact: bool) -> dict[str, Any]:
    levels: dict[str, Any] = {f"{_FIELD}.ns.{n}": part for n, part in enumerate(namespace)}
    if exact:
        levels[f"{_FIELD}.depth"] = len(namespace)
    else:
        levels[f"{_FIELD}.depth"] = {"gte": max(1, len(namespace))}
    return levels


def _value_filter(raw: Mapping[str, Any] | None) -> dict[str, Any]:
    """LangGraph's ``{"field": v}`` / ``{"field": {"$gt": v}}`` as memhub metadata filters."""
    filters: dict[str, Any] = {}
    for field, condition in (raw or {}).items():
        path = f"{_FIELD}.value.{field}"
        if isinstance(condition, Mapping) and condition and all(k in _OPERATORS for k in condition):
            filters[path] = {_OPERATORS[k]: v for k, v in condition.items()}
        else:
            filters[path] = condition
    return filters


def _text(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    if not fields:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    parts = []
    for field in fields:
        found: Any = value
        for step in field.split("."):
            found = found.get(step) if isinstance(found, Mapping) else None
        if found is not None:
            parts.append(found if isinstance(found, str) else json.dumps(found, ensure_ascii=False))
    return "\n".join(parts) or json.dumps(value, ensure_ascii=False, sort_keys=True)


def _namespace(memory: MemoryItem) -> tuple[str, ...] | None:
    stored = memory["metadata"].get(_FIELD)
    if not isinstance(stored, Mapping):
        return None
    levels = stored.get("ns", {})
    return tuple(str(levels[str(n)]) for n in range(int(stored.get("depth", 0))))


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=True))


def _item(memory: MemoryItem, *, search: bool = False) -> Any:
    stored = memory["metadata"][_FIELD]
    created = datetime.fromisoformat(memory["created_at"])
    updated = datetime.fromisoformat(memory["updated_at"] or memory["created_at"])
    namespace = _namespace(memory) or ()
    if search:
        return SearchItem(
            namespace, stored["key"], stored["value"], created, updated, memory.get("score")
        )
    return Item(
        value=stored["value"],
        key=stored["key"],
        namespace=namespace,
        created_at=created,
        updated_at=updated,
    )
