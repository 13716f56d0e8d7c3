"""A memory record for tests of pure logic: every field set, any of them given."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from memhub.store.records import MemoryRecord, Scope

AT = datetime(2025, 1, 1, tzinfo=UTC)


def memory_record(**fields: Any) -> MemoryRecord:
    """A current memory of user ``u`` stored at :data:`AT`, with ``fields`` replacing those."""
    at = fields.pop("at", AT)
    defaults: dict[str, Any] = {
        "id": uuid.uuid4(),
        "scope": Scope(user_id="u"),
        "memory": "m",
        "hash": "h",
        "metadata": {},
        "memory_type": None,
        "valid_from": at,
        "valid_to": None,
        "superseded_by": None,
        "source_turn_ids": (),
        "created_at": at,
        "updated_at": None,
    }
    return MemoryRecord(**{**defaults, **fields})
