"""Opaque cursors for paging memory lists (newest first, ties by id)."""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memhub.errors import UsageError

__all__ = ["after", "cursor_of"]


def cursor_of(item: Mapping[str, Any]) -> str:
    """The cursor pointing after ``item`` (its ``created_at`` and ``id``)."""
    raw = json.dumps([item["created_at"], item["id"]]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def after(cursor: str) -> dict[str, Any]:
    """The filter selecting what follows ``cursor`` in the list's order.

    The list is ordered by ``created_at`` descending, then ``id`` ascending: a batch of
    memories shares one ``created_at``, so the id breaks the tie and no memory is skipped.
    """
    try:
        created, memory_id = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        stamp = datetime.fromisoformat(created)
        ident = uuid.UUID(memory_id)
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise UsageError("invalid cursor: pass next_cursor from the previous page") from exc
    return {
        "OR": [
            {"created_at": {"lt": stamp}},
            {"AND": [{"created_at": {"eq": stamp}}, {"id": {"gt": ident}}]},
        ]
    }
