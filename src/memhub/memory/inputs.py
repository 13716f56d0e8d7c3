"""Check and normalise what callers pass in, before anything is written.

The facade's checks (and the server's, the importer's): the engine below works on the
checked values. Every rejection is a :class:`UsageError` that says what was wrong; nothing
here does I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from memhub.engine.ingest import AddRequest
from memhub.errors import UsageError
from memhub.filters import FilterLimits

if TYPE_CHECKING:
    from memhub.config import MemhubSettings
from memhub.messages import Message, UserMessage, message_class
from memhub.store.records import Scope

__all__ = [
    "Limits",
    "check_add",
    "check_id",
    "check_id_within",
    "check_limit",
    "check_metadata",
    "check_text",
    "normalize_messages",
    "parse_expiration",
    "parse_timestamp",
    "scope_of",
]


@dataclass(frozen=True)
class Limits:
    """Size limits from the settings (each names its ``MEMHUB_*`` variable when it refuses)."""

    max_id_length: int = 255
    max_text_chars: int = 32_000
    max_metadata_bytes: int = 16_384
    max_metadata_depth: int = 8
    max_search_results: int = 1000
    max_page_size: int = 10_000
    filters: FilterLimits = field(default_factory=FilterLimits)

    @classmethod
    def from_settings(cls, settings: MemhubSettings) -> Limits:
        """Every limit as the settings give it."""
        return cls(
            settings.max_id_length,
            settings.max_text_chars,
            max_metadata_bytes=settings.max_metadata_bytes,
            max_metadata_depth=settings.max_metadata_depth,
            max_search_results=settings.max_search_results,
            max_page_size=settings.max_page_size,
            filters=FilterLimits(
                settings.max_filter_depth,
                settings.max_filter_conditions,
                settings.max_filter_in_values,
            ),
        )


_SCOPE_KEYS = frozenset({"user_id", "agent_id", "run_id"})


def check_id(name: str, value: object, limits: Limits) -> str:
    """A user/session/agent/run id: a non-empty string within ARKOS's VARCHAR(255)."""
    return check_id_within(name, value, limits.max_id_length)


def check_id_within(name: str, value: object, max_length: int) -> str:
    """An id of at most ``max_length`` characters, otherwise checked as :func:`check_id` does.

    For an id stored with something before it (a tenant's prefix): ``max_length`` is the room
    the prefix leaves.
    """
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise UsageError(f"{name} must not be empty")
    if len(value) > max_length:
        raise UsageError(f"{name} is {len(value)} characters; the limit is {max_length}")
    if "\x00" in value:
        raise UsageError(f"{name} must not contain NUL characters")
    _check_encodable(name, value)
    return value


def _check_encodable(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:  # lone surrogates from a bad decode
        raise UsageError(f"{name} is not valid UTF-8 text: {exc.reason}") from exc


def check_text(name: str, value: object, limits: Limits, *, allow_empty: bool = False) -> str:
    """Message or memory text: a string PostgreSQL can store, within the size limit."""
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string, got {type(value).__name__}")
    if not allow_empty and not value.strip():
        raise UsageError(f"{name} must not be empty")
    if len(value) > limits.max_text_chars:
        raise UsageError(
            f"{name} is {len(value)} characters; the limit is {limits.max_text_chars}"
            " (MEMHUB_MAX_TEXT_CHARS)"
        )
    if "\x00" in value:
        raise UsageError(f"{name} must not contain NUL characters")
    _check_encodable(name, value)
    return value


def check_metadata(metadata: object, limits: Limits) -> dict[str, Any]:
    """A metadata dict PostgreSQL's jsonb can hold, within the size and depth limits.

    Keys and strings must be NUL-free UTF-8, numbers finite; scope ids cannot be set here.
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise UsageError(f"metadata must be a dict, got {type(metadata).__name__}")
    clash = sorted(_SCOPE_KEYS & set(metadata))
    if clash:
        raise UsageError(
            f"metadata cannot set scope ids ({', '.join(clash)}); pass them as arguments"
        )
    _check_json("metadata", metadata, 1, limits.max_metadata_depth)
    size = len(json.dumps(metadata, ensure_ascii=False).encode("utf-8"))
    if size > limits.max_metadata_bytes:
        raise UsageError(
            f"metadata is {size} bytes as JSON; the limit is {limits.max_metadata_bytes}"
            " (MEMHUB_MAX_METADATA_BYTES)"
        )
    return dict(metadata)


def _check_json(where: str, value: object, depth: int, max_depth: int) -> None:
    if isinstance(value, Mapping | list | tuple) and depth > max_depth:
        raise UsageError(
            f"{where} is nested deeper than {max_depth} levels (MEMHUB_MAX_METADATA_DEPTH)"
        )
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError(f"{where} holds {value!r}; only finite numbers can be stored")
    elif isinstance(value, str):
        if "\x00" in value:
            raise UsageError(f"{where} must not contain NUL characters")
        _check_encodable(where, value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise UsageError(f"{where} keys must be strings, got {key!r}")
            _check_json(f"{where} key", key, depth, max_depth)
            _check_json(f"{where}.{key[:40]}", item, depth + 1, max_depth)
    elif isinstance(value, list | tuple):
        for item in value:
            _check_json(f"{where}[]", item, depth + 1, max_depth)
    else:
        raise UsageError(f"{where} must be JSON, got {type(value).__name__}")


def check_limit(limit: object, *, maximum: int = 1000, setting: str | None = None) -> int:
    """A result count between 1 and ``maximum`` (the ``MEMHUB_*`` ``setting`` named if given)."""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise UsageError(f"limit must be an integer, got {type(limit).__name__}")
    if limit <= 0 or limit > maximum:
        named = f" ({setting})" if setting else ""
        raise UsageError(f"limit must be between 1 and {maximum}{named}, got {limit}")
    return limit


def scope_of(
    limits: Limits,
    user_id: object = None,
    agent_id: object = None,
    run_id: object = None,
) -> Scope:
    """A non-empty scope; every call of the Mem0-style API needs one."""
    scope = Scope(
        user_id=None if user_id is None else check_id("user_id", user_id, limits),
        agent_id=None if agent_id is None else check_id("agent_id", agent_id, limits),
        run_id=None if run_id is None else check_id("run_id", run_id, limits),
    )
    if scope.is_empty():
        raise UsageError("one of user_id, agent_id or run_id is required")
    return scope


def parse_timestamp(value: object) -> datetime | None:
    """A datetime, an ISO 8601 string or a Unix time in seconds; naive values are UTC."""
    if value is None:
        return None
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        ts = _from_unix(value)
    elif isinstance(value, str):
        try:
            ts = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as exc:
            raise UsageError(f"timestamp {value!r} is not ISO 8601") from exc
    else:
        raise UsageError(
            f"timestamp must be a datetime, ISO string or number, got {type(value).__name__}"
        )
    ts = ts if ts.tzinfo else ts.replace(tzinfo=UTC)
    try:
        inside = _EARLIEST <= ts <= _LATEST
    except OverflowError:
        inside = False
    if not inside:
        raise UsageError(f"timestamp {value!r} is outside years 1 to 9999")
    return ts


# Years 1 to 9999 in UTC, both inclusive: what a Python datetime holds. Timestamps are kept
# in UTC (sessions run in UTC), so no conversion to another zone can overflow them.
_EARLIEST = datetime(1, 1, 1, tzinfo=UTC)
_LATEST = datetime(9999, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)


def _from_unix(value: float) -> datetime:
    try:
        if not math.isfinite(value):
            raise ValueError("not a finite number")
        return datetime.fromtimestamp(float(value), tz=UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise UsageError(
            f"timestamp {value!r} is not a Unix time between years 1 and 9999"
        ) from exc


def _from_mapping(item: Mapping[str, Any], limits: Limits) -> Message:
    role = item.get("role", "user")
    if not isinstance(role, str):
        raise UsageError("message role must be a string")
    cls = message_class(role)
    content = check_text("message content", item.get("content"), limits)
    extra = {k: v for k, v in item.items() if k not in ("role", "content")}
    _check_json("message", extra, 1, limits.max_metadata_depth)  # stored with the turn
    try:
        return cls.model_validate({**extra, "content": content, "role": role})
    except ValidationError as exc:
        raise UsageError(f"invalid {role} message: {exc.errors()[0]['msg']}") from exc


def normalize_messages(messages: object, limits: Limits) -> list[Message]:
    """Mem0's accepted shapes: a string, a message dict, a Message, or a list of them."""
    if isinstance(messages, str | Message | Mapping):
        items: Sequence[object] = [messages]
    elif isinstance(messages, Sequence):
        items = messages
    else:
        raise UsageError(
            f"messages must be a string, a message dict, a Message or a list, "
            f"got {type(messages).__name__}"
        )
    if not items:
        raise UsageError("messages must not be empty")
    result: list[Message] = []
    for item in items:
        if isinstance(item, str):
            result.append(UserMessage(content=check_text("message", item, limits)))
        elif isinstance(item, Message):
            check_text("message content", item.content, limits)
            result.append(item)
        elif isinstance(item, Mapping):
            result.append(_from_mapping(item, limits))
        else:
            raise UsageError(
                f"a message must be a string, dict or Message, got {type(item).__name__}"
            )
    return result


def parse_expiration(value: object) -> datetime | None:
    """When a memory given ``expiration_date`` stops being returned.

    A date (``date`` or ``"YYYY-MM-DD"``, Mem0's form) is inclusive: the memory is returned
    through that day (UTC) and expires at the next midnight. A datetime, ISO string with a
    time, or Unix time expires at that instant.
    """
    if isinstance(value, str) and len(value.strip()) == 10:
        try:
            value = date.fromisoformat(value.strip())
        except ValueError as exc:
            raise UsageError(f"expiration_date {value!r} is not YYYY-MM-DD") from exc
    if isinstance(value, date) and not isinstance(value, datetime):
        if value == date.max:
            raise UsageError("expiration_date must be before 9999-12-31")
        return datetime.combine(value + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return parse_timestamp(value)


def check_add(
    limits: Limits,
    messages: object,
    *,
    user_id: object,
    agent_id: object,
    run_id: object,
    metadata: object,
    timestamp: object,
    infer: object,
    memory_type: object = None,
    expiration_date: object = None,
    remember_roles: Collection[str] | None = None,
    idempotency_key: object = None,
) -> AddRequest:
    """``add()``'s arguments (and an imported item's) checked, in the order ``add()`` reports."""
    scope = scope_of(limits, user_id, agent_id, run_id)
    items = normalize_messages(messages, limits)
    meta = check_metadata(metadata, limits)
    said_at = parse_timestamp(timestamp)
    key = None if idempotency_key is None else check_id("idempotency_key", idempotency_key, limits)
    kind = None if memory_type is None else check_id("memory_type", memory_type, limits)
    return AddRequest(
        scope=scope,
        messages=tuple(items),
        metadata=meta,
        said_at=said_at,
        infer=bool(infer),
        memory_type=kind,
        expires_at=parse_expiration(expiration_date),
        remember_roles=None if remember_roles is None else frozenset(remember_roles),
        idempotency_key=key,
    )
