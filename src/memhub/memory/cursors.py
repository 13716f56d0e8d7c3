"""Keyset cursors: the opaque string a page hands out to say where the next page starts.

One codec for every paged list (the memories of a scope, the users of a database, a scope's
model changes), used by
the facade, the admin API, the REST server and the CLI: a cursor is the JSON list of the
last item's sort key, in URL-safe base64 without padding, so it travels in a query string
as it is. A cursor that does not decode to the list's key is the caller's mistake
(:class:`UsageError`, 422 over REST), never a server error.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from memhub.errors import UsageError

__all__ = [
    "after_memory",
    "before_change",
    "change_cursor",
    "decode_cursor",
    "encode_cursor",
    "memory_cursor",
]

_INVALID = "invalid cursor: pass next_cursor from the previous page"


def encode_cursor(*key: str) -> str:
    """The cursor of a sort key (strings, in the list's sort order)."""
    # UTF-8, not \u escapes: a 255-character id stays under the REST API's 1,500-character cap.
    raw = json.dumps(list(key), ensure_ascii=False).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, fields: int) -> tuple[str, ...]:
    """The sort key ``cursor`` holds, ``fields`` strings long.

    Raises:
        UsageError: ``cursor`` is not a cursor of this list.
    """
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (ValueError, TypeError, binascii.Error, UnicodeDecodeError) as exc:
        raise UsageError(_INVALID) from exc
    if not isinstance(key, list) or len(key) != fields or not all(isinstance(v, str) for v in key):
        raise UsageError(_INVALID)
    return tuple(key)


def memory_cursor(item: Mapping[str, Any]) -> str:
    """The cursor after ``item`` in a list of memories (its ``created_at`` and ``id``)."""
    return encode_cursor(str(item["created_at"]), str(item["id"]))


def after_memory(cursor: str) -> dict[str, Any]:
    """The filter selecting the memories after ``cursor`` in ``get_all``'s order.

    The list is ordered by ``created_at`` descending, then ``id`` ascending: a batch of
    memories shares one ``created_at``, so the id breaks the tie and no memory is skipped.

    Raises:
        UsageError: ``cursor`` is not a cursor of a list of memories.
    """
    created, memory_id = decode_cursor(cursor, 2)
    try:
        stamp = datetime.fromisoformat(created)
        ident = uuid.UUID(memory_id)
    except ValueError as exc:
        raise UsageError(_INVALID) from exc
    return {
        "OR": [
            {"created_at": {"lt": stamp}},
            {"AND": [{"created_at": {"eq": stamp}}, {"id": {"gt": ident}}]},
        ]
    }


def change_cursor(change_id: int) -> str:
    """The cursor after the change ``change_id`` in a list of model changes (newest first)."""
    return encode_cursor(str(change_id))


def before_change(cursor: str) -> int:
    """The id the next page of model changes starts below.

    Raises:
        UsageError: ``cursor`` is not a cursor of a list of changes.
    """
    (change_id,) = decode_cursor(cursor, 1)
    if not change_id.isdigit():
        raise UsageError(_INVALID)
    return int(change_id)
