"""Chat messages as ARKOS defines them: Pydantic models with a role, stored as JSON.

The stored form is exactly ARKOS's: ``json.dumps`` of the message's fields (``content`` first,
``role`` second) in the ``message`` column, with the role repeated in its own column.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from memhub.errors import UsageError

__all__ = [
    "AIMessage",
    "Message",
    "Role",
    "SystemMessage",
    "ToolMessage",
    "UserMessage",
    "deserialize",
    "message_class",
    "serialize",
]

Role = Literal["user", "assistant", "system", "tool"]


class Message(BaseModel):
    """A chat message. Subclasses fix the role."""

    model_config = ConfigDict(extra="allow", frozen=False)

    content: str
    role: str

    def to_dict(self) -> dict[str, Any]:
        """The message as an OpenAI-style chat dict (``{"role", "content", ...}``)."""
        return self.model_dump(exclude_none=True)


class UserMessage(Message):
    """What the user said."""

    role: Literal["user"] = "user"


class AIMessage(Message):
    """What the assistant answered; ``tool_calls`` in OpenAI's shape when it called tools."""

    role: Literal["assistant"] = "assistant"
    tool_calls: list[dict[str, Any]] | None = None


class SystemMessage(Message):
    """An instruction or injected context."""

    role: Literal["system"] = "system"


class ToolMessage(Message):
    """A tool's result."""

    role: Literal["tool"] = "tool"
    tool_call_id: str | None = None


_BY_ROLE: dict[str, type[Message]] = {
    "user": UserMessage,
    "assistant": AIMessage,
    "system": SystemMessage,
    "tool": ToolMessage,
}


def message_class(role: str) -> type[Message]:
    """The message class for ``role``; an unknown role is a :class:`UsageError`."""
    try:
        return _BY_ROLE[role]
    except KeyError:
        known = ", ".join(_BY_ROLE)
        raise UsageError(f"unknown message role {role!r}; expected one of {known}") from None


def serialize(message: Message) -> str:
    """ARKOS's stored form: ``'{"content": "Hello", "role": "user"}'``."""
    if not isinstance(message, Message):
        raise UsageError(f"expected a memhub Message, got {type(message).__name__}")
    return json.dumps(message.model_dump(exclude_none=True))


def deserialize(data: str, role: str | None = None) -> Message:
    """Parse a stored message back into the class of its role.

    Args:
        data: The JSON text of the ``message`` column.
        role: The ``role`` column; when None, the role inside the JSON decides.
    """
    try:
        fields = json.loads(data)
    except (TypeError, json.JSONDecodeError) as exc:
        raise UsageError(f"stored message is not JSON: {exc}") from exc
    if not isinstance(fields, dict):
        raise UsageError("stored message is not a JSON object")
    actual_role = role if role is not None else str(fields.get("role", ""))
    cls = message_class(actual_role)
    fields["role"] = actual_role
    try:
        return cls.model_validate(fields)
    except ValidationError as exc:
        raise UsageError(f"stored message is not a valid {cls.__name__}: {exc}") from exc
