"""Rows and column values of the in-process store: what PostgreSQL's columns would accept.

:class:`MemoryRow` is a row of ``memories``, :class:`VectorMatrix` the embedding column (unit
vectors in one growing float32 matrix), and the checks refuse what the SQL schema refuses.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

import numpy as np
import numpy.typing as npt

from memhub.errors import StoreError, UsageError
from memhub.store.protocol import Vector
from memhub.store.records import MemoryRecord, PassageHit, Scope

__all__ = [
    "Key",
    "MemoryRow",
    "VectorMatrix",
    "as_utc",
    "check_text",
    "in_scope",
    "jsonb",
    "utc_now",
]

Key = tuple[str, str, str, str]  # the unique index: coalesce(user, ''), agent, run, hash


def utc_now() -> datetime:
    return datetime.now(UTC)


def as_utc(ts: datetime | None, default: datetime) -> datetime:
    """A ``timestamptz`` value: naive means UTC, as memhub's database sessions run in UTC."""
    if ts is None:
        return default
    return ts.replace(tzinfo=UTC) if ts.tzinfo is None else ts.astimezone(UTC)


def in_scope(scope: Scope | None, ids: Scope) -> bool:
    return scope is None or all(getattr(ids, k) == v for k, v in scope.as_dict().items())


def refused(action: str, reason: str) -> UsageError:
    """The error PostgreSQL's refusal of a value becomes at the store's edge
    (store/postgres/errors.py)."""
    return UsageError(f"{action}: the database refused a value: {reason}")


def check_text(action: str, limit: int | None = None, **fields: str | None) -> None:
    """Refuse what PostgreSQL refuses in a TEXT or ``VARCHAR(limit)`` column."""
    for name, value in fields.items():
        if value is None:
            continue
        if "\x00" in value:
            raise refused(action, "PostgreSQL text fields cannot contain NUL (0x00) bytes")
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise refused(action, f"{name} is not valid UTF-8 ({exc})") from exc
        if limit is not None and len(value) > limit:
            raise refused(action, f"value too long for type character varying({limit})")


def jsonb(value: Any, action: str) -> Any:
    """A fresh copy of ``value`` as ``jsonb`` stores it; refused where PostgreSQL refuses."""
    try:
        stored = json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{action}: cannot store as JSON ({exc})") from exc
    if _has_nul(stored):
        raise refused(action, "unsupported Unicode escape sequence \\u0000 in JSON")
    return stored


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


@dataclass
class MemoryRow:
    """A row of ``memories``; ``unit`` is its normalised embedding until it gets a matrix row."""

    id: UUID
    scope: Scope
    memory: str
    hash: str
    metadata: dict[str, Any]
    memory_type: str | None
    valid_from: datetime
    created_at: datetime
    source_turn_ids: tuple[int, ...]
    terms: Counter[str]
    unit: Vector | None = None
    row: int | None = None
    valid_to: datetime | None = None
    superseded_by: UUID | None = None
    updated_at: datetime | None = None
    role: str | None = None
    retired_at: datetime | None = None  # see memhub.store.postgres.retire
    expires_at: datetime | None = None
    # A long memory's passages with their unit vectors (postgres: memory_passages, 0026).
    passages: tuple[tuple[PassageHit, Vector], ...] = ()

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    @property
    def key(self) -> Key:
        s = self.scope
        return (s.user_id or "", s.agent_id or "", s.run_id or "", self.hash)

    def record(self) -> MemoryRecord:
        return MemoryRecord(
            id=self.id,
            scope=self.scope,
            memory=self.memory,
            hash=self.hash,
            metadata=copy.deepcopy(self.metadata),
            memory_type=self.memory_type,
            valid_from=self.valid_from,
            valid_to=self.valid_to,
            superseded_by=self.superseded_by,
            source_turn_ids=self.source_turn_ids,
            created_at=self.created_at,
            updated_at=self.updated_at,
            role=self.role,
        )

    def columns(self) -> dict[str, Any]:
        """What :func:`memhub.store.inmemory.filters.matches` reads."""
        return {
            "id": self.id,
            **dataclasses.asdict(self.scope),
            "memory_type": self.memory_type,
            "role": self.role,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
            "valid_from": self.valid_from,
            "valid_to": self.valid_to,
            "metadata": self.metadata,
        }


class VectorMatrix:
    """Unit vectors in one growing float32 matrix; rows of deleted memories are reused."""

    def __init__(self) -> None:
        self.dim: int | None = None
        self.clear()

    def clear(self) -> None:
        self._matrix = np.zeros((0, self.dim or 0), dtype=np.float32)
        self._used = 0
        self._free: list[int] = []

    def unit(self, vector: Any, action: str) -> Vector:
        """``vector`` normalised, refused as pgvector refuses a value for ``vector(dim)``."""
        if self.dim is None:
            raise StoreError(f"{action}: no embedding space yet (call ensure_embedding_space)")
        arr = np.asarray(vector, dtype=np.float32)
        if arr.ndim != 1 or arr.shape[0] != self.dim:
            raise refused(action, f"expected {self.dim} dimensions, not {arr.size}")
        if not np.all(np.isfinite(arr)):
            raise refused(action, "NaN and infinite values are not allowed in vector")
        norm = float(np.linalg.norm(arr))
        return arr / np.float32(norm) if norm > 0 else arr  # zero: similarity 0 to everything

    def add(self, unit: Vector) -> int:
        if self._free:
            row = self._free.pop()
        else:
            if self._used == len(self._matrix):
                grown = np.zeros((max(16, 2 * self._used), self.dim or 0), dtype=np.float32)
                grown[: self._used] = self._matrix[: self._used]
                self._matrix = grown
            row = self._used
            self._used += 1
        self._matrix[row] = unit
        return row

    def get(self, row: int) -> Vector:
        unit: Vector = self._matrix[row].copy()
        return unit

    def set(self, row: int, unit: Vector) -> None:
        self._matrix[row] = unit

    def free(self, row: int) -> None:
        self._matrix[row] = 0.0
        self._free.append(row)

    def similarities(self, rows: Sequence[int], query: Vector) -> npt.NDArray[np.float64]:
        """Cosine similarity of each row with the unit ``query``, clamped as pgvector does."""
        everything = self._matrix[: self._used] @ query
        picked = everything[np.asarray(rows, dtype=np.intp)].astype(np.float64)
        return np.clip(picked, -1.0, 1.0)
