"""Messages serialise exactly as ARKOS stores them and come back as the right class."""

import json

import pytest

from memhub import AIMessage, SystemMessage, ToolMessage, UsageError, UserMessage
from memhub.messages import deserialize, serialize


def test_serialized_form_is_arkos_json() -> None:
    assert serialize(UserMessage(content="Hello")) == '{"content": "Hello", "role": "user"}'


@pytest.mark.parametrize(
    ("message", "role"),
    [
        (UserMessage(content="hi"), "user"),
        (AIMessage(content="hello"), "assistant"),
        (SystemMessage(content="be brief"), "system"),
        (ToolMessage(content='{"result": "success"}'), "tool"),
    ],
)
def test_round_trip_keeps_class_and_content(message: UserMessage, role: str) -> None:
    back = deserialize(serialize(message), role=role)
    assert type(back) is type(message)
    assert back.role == role
    assert back.content == message.content


def test_role_column_decides_class() -> None:
    back = deserialize(json.dumps({"content": "x"}), role="assistant")
    assert isinstance(back, AIMessage)


def test_unknown_role_is_a_clear_error() -> None:
    with pytest.raises(UsageError, match="unknown message role 'wizard'"):
        deserialize('{"content": "x"}', role="wizard")


def test_garbage_is_a_clear_error() -> None:
    with pytest.raises(UsageError, match="not JSON"):
        deserialize("{nope", role="user")


def test_serialize_refuses_non_messages() -> None:
    with pytest.raises(UsageError):
        serialize("hello")  # type: ignore[arg-type]
