"""memhub as a LangGraph store: ``BaseStore`` over memhub's memories (extra ``langgraph``).

Each item is one memory of the store's scope (``agent_id="langgraph"`` unless told otherwise):
its text, embedded and full-text indexed, is the item's indexed fields; its namespace, key and
value live in the memory's metadata under ``"langgraph"``. Search is memhub's hybrid search.
LangGraph's ``index`` configuration (``dims``, ``fields``, ``embed``) is honoured or refused
with a :class:`~memhub.ConfigurationError` saying what to change; nothing is ignored.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from memhub._portal import portal_loop, run_sync
from memhub.config import MemhubSettings
from memhub.embed.base import check_texts, empty_matrix, normalise_rows
from memhub.embed.factory import DEFAULT_MODEL
from memhub.errors import ConfigurationError, UsageError, install_hint
from memhub.memory import AsyncMemory, Memory
from memhub.memory.core import services_of
from memhub.memory.results import MemoryItem
from memhub.store.records import Scope

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
        TTLConfig,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"memhub.integrations.langgraph needs LangGraph: {install_hint('langgraph')}"
    ) from exc

__all__ = ["CallerEmbedder", "MemhubStore"]

_FIELD = "langgraph"  # the metadata key holding namespace, key and value
_OPERATORS = {"$eq": "eq", "$ne": "ne", "$gt": "gt", "$gte": "gte", "$lt": "lt", "$lte": "lte"}
_MAX_LISTED = 10_000  # list_namespaces reads at most this many items
_TTL_KEYS = frozenset({"refresh_on_read", "default_ttl", "sweep_interval_minutes", "omit_expired"})
_INDEX_KEYS = frozenset({"dims", "embed", "fields", "distance_type", "ann_index_config", "model"})
# Names LangGraph users give memhub's in-process models (LangChain's "provider:model" form too).
_MINILM_NAMES = frozenset(
    {
        "all-minilm-l6-v2",
        "sentence-transformers/all-minilm-l6-v2",
        "huggingface:sentence-transformers/all-minilm-l6-v2",
        "huggingface:all-minilm-l6-v2",
    }
)
_DEFAULT_NAMES = frozenset(
    {
        DEFAULT_MODEL,
        "all-mpnet-base-v2",
        "sentence-transformers/all-mpnet-base-v2",
        "huggingface:sentence-transformers/all-mpnet-base-v2",
        "huggingface:all-mpnet-base-v2",
    }
)


class _Scope(TypedDict):
    user_id: str | None
    agent_id: str | None


class MemhubStore(BaseStore):
    """A LangGraph ``BaseStore`` keeping items as memhub memories.

    Args:
        memory: A :class:`~memhub.Memory` (sync and async use alike), or an
            :class:`~memhub.AsyncMemory` for async use on one event loop. None: the store
            opens a :class:`~memhub.Memory` of ``settings`` (or the environment's) and
            closes it in :meth:`close`.
        index: LangGraph's index configuration. ``fields``: the value fields embedded and
            searched (``"$"``: the whole value); ``dims``: the embedding dimension, checked
            against the embedder's; ``embed``: a LangChain ``Embeddings``, or a function
            (sync or async) from texts to vectors, used as memhub's embedder (the store must
            open its own Memory then), or a model name, which must be the one memhub is
            configured with. ``distance_type`` may only be ``"cosine"``.
        user_id: Scope the items to this user (default: none).
        agent_id: Scope the items to this agent (default ``"langgraph"`` when no user_id).
        index_fields: The same as ``index["fields"]`` (memhub's older name).
        settings: The settings of the Memory the store opens when ``memory`` is None.
        ttl: LangGraph's TTL configuration (``default_ttl`` minutes, ``refresh_on_read``).
            An item past its TTL is never returned (as ``omit_expired=True`` in LangGraph's
            PostgresStore); memhub's worker deletes it within about a minute, whatever
            ``sweep_interval_minutes`` says.

    Writes wait until the item is searchable, as LangGraph code reads its own writes.
    ``delete`` (a put of None) retires the item's memory, as every path a model can reach
    does: restorable, listed by ``model_changes`` and held to the user's
    ``MEMHUB_MODEL_CHANGES_PER_DAY``; the person's erase is the Memory's ``delete``.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: Memory | AsyncMemory | None = None,
        *,
        index: Mapping[str, Any] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        index_fields: Sequence[str] | None = None,
        settings: MemhubSettings | None = None,
        ttl: Mapping[str, Any] | None = None,
    ) -> None:
        config = _index_config(index, index_fields)
        unknown = sorted(set(ttl or {}) - _TTL_KEYS)
        if unknown:
            raise ConfigurationError(
                f"ttl: unknown keys {unknown} (LangGraph's: {sorted(_TTL_KEYS)})"
            )
        self.ttl_config = None if ttl is None else TTLConfig(**ttl)  # type: ignore[typeddict-item]
        embedder = None
        if config.embed is not None and not isinstance(config.embed, str):
            if memory is not None:
                raise ConfigurationError(
                    "index['embed'] is a function or Embeddings: let MemhubStore open its "
                    "Memory with it (pass settings=, not memory=), or give your Memory "
                    "embedder=... yourself"
                )
            if config.dims is None:
                raise ConfigurationError("index['embed'] needs index['dims'], as in LangGraph")
            embedder = CallerEmbedder(config.embed, config.dims, config.model)
            settings = _own_space(settings or MemhubSettings.from_env(), embedder)
        self._owned = memory is None
        if memory is None:
            memory = Memory(settings=settings, embedder=embedder)
        elif settings is not None:
            raise UsageError("pass memory or settings, not both")
        self._on_portal = isinstance(memory, Memory)
        self._memory = memory.async_memory if isinstance(memory, Memory) else memory
        if isinstance(config.embed, str):
            _check_model_name(config.embed, self._memory.settings)
        if user_id is None and agent_id is None:
            agent_id = "langgraph"
        self._scope = _Scope(user_id=user_id, agent_id=agent_id)
        self._stored_scope = Scope(user_id=user_id, agent_id=agent_id)
        self._index_fields = config.fields
        self._dims = config.dims
        self._checked = config.dims is None

    def close(self) -> None:
        """Close the Memory the store opened itself (one passed in stays the caller's)."""
        if self._owned:
            run_sync(self._memory.aclose())

    def __enter__(self) -> MemhubStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- BaseStore --------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return their results (sync)."""
        return run_sync(self._batch(list(ops)))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return their results."""
        work = self._batch(list(ops))
        if self._on_portal:  # a sync Memory's services live on memhub's own loop
            return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, portal_loop()))
        return await work

    async def _batch(self, ops: list[Op]) -> list[Result]:
        if not self._checked:
            await self._check_dimension()
        results: list[Result] = []
        for op in ops:
            if isinstance(op, GetOp):
                found = await self._find(op.namespace, op.key)
                if found is not None and op.refresh_ttl:
                    await self._refresh([found])
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

    async def _check_dimension(self) -> None:
        services = await services_of(self._memory)  # the embedder is known once they are open
        if services.embedder.dimension != self._dims:
            raise ConfigurationError(
                f"index['dims'] is {self._dims}, but memhub's embedder "
                f"{services.embedder.model_name} makes {services.embedder.dimension}: set dims to "
                f"{services.embedder.dimension}, or configure another embedder (docs/embedders.md)"
            )
        self._checked = True

    async def _refresh(self, found: Sequence[MemoryItem]) -> None:
        """Renew the TTL of items read (LangGraph's ``refresh_ttl``), one write per TTL value."""
        by_ttl: dict[float, list[str]] = {}
        for memory in found:
            minutes = memory["metadata"][_FIELD].get("ttl")
            if isinstance(minutes, int | float):
                by_ttl.setdefault(float(minutes), []).append(memory["id"])
        if by_ttl:
            store = (await services_of(self._memory)).store
            for minutes, ids in by_ttl.items():
                await store.set_expiry(
                    self._stored_scope, [uuid.UUID(i) for i in ids], _expiry(minutes)
                )

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
                # An agent's graph deletes on a model's word: retired, restorable and listed
                # (model_changes), within the user's budget; the user's erase is delete().
                where = "/".join(op.namespace)
                await self._memory.retire(
                    existing["id"],
                    actor="langgraph",
                    reason=f"LangGraph store delete of {where}/{op.key}"[:500],
                    **self._scope,
                )
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
                "ttl": op.ttl,
            }
        }
        expires = None if op.ttl is None else _expiry(op.ttl)
        if existing is not None:
            await self._memory.update(existing["id"], text, metadata=metadata, **self._scope)
            if expires is not None or existing["metadata"][_FIELD].get("ttl") is not None:
                store = (await services_of(self._memory)).store
                await store.set_expiry(self._stored_scope, [uuid.UUID(existing["id"])], expires)
        else:
            await self._memory.add(
                text,
                **self._scope,
                metadata=metadata,
                infer=False,
                wait=True,
                expiration_date=expires,
            )

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
        page = found["results"][op.offset : wanted]
        if op.refresh_ttl:
            await self._refresh(page)
        return [_item(m, search=True) for m in page]

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


# -- the index configuration ----------------------------------------------------------------


def _own_space(settings: MemhubSettings, embedder: CallerEmbedder) -> MemhubSettings:
    """The settings with the caller's embedder in a space of its own, named after it (unless
    they name a space already): it sits beside the database's default space."""
    if settings.space is not None:
        return settings
    name = re.sub(r"[^\w.:/@+-]+", "_", embedder.model_name)[:128]
    return settings.model_copy(update={"space": name, "space_prefers_default": True})


class _IndexConfig:
    def __init__(
        self, fields: list[str] | None, dims: int | None, embed: Any, model: str | None
    ) -> None:
        self.fields, self.dims, self.embed, self.model = fields, dims, embed, model


def _index_config(index: Mapping[str, Any] | None, fields: Sequence[str] | None) -> _IndexConfig:
    """LangGraph's ``index`` dict, checked: every key is used or refused."""
    if index is None:
        return _IndexConfig(None if fields is None else list(fields), None, None, None)
    unknown = sorted(set(index) - _INDEX_KEYS)
    if unknown:
        raise ConfigurationError(
            f"index: unknown keys {unknown} (LangGraph's are dims, embed, fields; memhub's "
            "model names what embed computes)"
        )
    if index.get("distance_type", "cosine") != "cosine":
        raise ConfigurationError(
            f"index['distance_type']={index['distance_type']!r}: memhub ranks by cosine "
            "similarity (fused with full-text and recency); drop the key or pass 'cosine'"
        )
    if index.get("ann_index_config") is not None:
        raise ConfigurationError(
            "index['ann_index_config']: memhub keeps its own HNSW index (docs/operations.md); "
            "drop the key"
        )
    given = index.get("fields")
    if given is not None and fields is not None and list(given) != list(fields):
        raise UsageError("index['fields'] and index_fields disagree: pass one")
    chosen = given if given is not None else fields
    if chosen is not None and (
        isinstance(chosen, str) or not all(isinstance(f, str) for f in chosen)
    ):
        raise ConfigurationError("index['fields'] must be a list of field paths, e.g. ['text']")
    whole = chosen is None or list(chosen) == ["$"]
    dims = index.get("dims")
    if dims is not None and (not isinstance(dims, int) or dims < 1):
        raise ConfigurationError(f"index['dims'] must be a positive int, not {dims!r}")
    model = index.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ConfigurationError(f"index['model'] must name the embedding model, not {model!r}")
    chosen_fields = None if whole or chosen is None else list(chosen)
    return _IndexConfig(chosen_fields, dims, index.get("embed"), model)


def _check_model_name(name: str, settings: MemhubSettings) -> None:
    """``embed="provider:model"`` is honoured when it names the model memhub embeds with."""
    wanted = name.strip().lower()
    configured = (settings.embedder_model or "").lower()
    if not configured and settings.embedder in ("minilm", "onnx"):
        configured, known = "all-MiniLM-L6-v2", _MINILM_NAMES
    elif not configured and settings.embedder in ("default", "local"):
        configured, known = DEFAULT_MODEL, _DEFAULT_NAMES
    else:
        known = frozenset()
    if wanted in known or (configured and wanted.split(":", 1)[-1] == configured.lower()):
        return
    raise ConfigurationError(
        f"index['embed']={name!r}: memhub embeds with its configured model, "
        f"{configured or settings.embedder}. Pass embed={configured or 'MODEL'!r} (or leave it "
        "out), a function or a LangChain Embeddings instance, or configure that model: "
        "MEMHUB_EMBEDDER_MODEL=... (docs/embedders.md)"
    )


class CallerEmbedder:
    """A LangChain ``Embeddings`` or an embedding function, as a memhub embedder.

    Its vectors are scaled to unit length (memhub ranks by cosine similarity, which does not
    change); the model name recorded in the database is ``"langgraph:<name>"``, where the
    name is ``model`` (``index["model"]``), else the Embeddings' ``model`` / ``model_name``
    attribute, else the function's qualified name.
    """

    def __init__(self, embed: Any, dims: int, model: str | None = None) -> None:
        if not callable(embed) and not hasattr(embed, "embed_documents"):
            raise ConfigurationError(
                f"index['embed'] must be a model name, a function or an Embeddings, not "
                f"{type(embed).__name__}"
            )
        self._embed = embed
        self._dims = dims
        # What it computes names it: the name given, else the Embeddings' model; only a
        # bare function falls back to its own name (sync and async twins then differ).
        label = model or getattr(embed, "model", None) or getattr(embed, "model_name", None)
        self._name = f"langgraph:{label or getattr(embed, '__qualname__', type(embed).__name__)}"

    @property
    def dimension(self) -> int:
        return self._dims

    @property
    def model_name(self) -> str:
        return self._name

    async def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        items = check_texts(texts)
        if not items:
            return empty_matrix(self._dims)
        vectors = await self._vectors(items)
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.shape != (len(items), self._dims):
            raise ConfigurationError(
                f"index['embed'] returned shape {matrix.shape} for {len(items)} texts; "
                f"index['dims'] says {self._dims}"
            )
        return normalise_rows(matrix)

    async def _vectors(self, items: list[str]) -> Any:
        embed = self._embed
        if hasattr(embed, "aembed_documents"):
            return await embed.aembed_documents(items)
        if hasattr(embed, "embed_documents"):
            return await asyncio.to_thread(embed.embed_documents, items)
        call: Callable[[list[str]], Any] = embed
        if inspect.iscoroutinefunction(call):
            return await call(items)
        return await asyncio.to_thread(call, items)

    async def aclose(self) -> None:
        return None


# -- pure helpers ---------------------------------------------------------------------------


def _expiry(minutes: float) -> datetime:
    return datetime.now(UTC) + timedelta(minutes=minutes)


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
