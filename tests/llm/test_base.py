"""The template method of BaseLLM, driven by an in-process adapter (no HTTP)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from pydantic import BaseModel

from memhub.errors import ProviderOutputError
from memhub.llm import LLM, BaseLLM, ChatMessage, Completion, OutputSchema, Usage


class Facts(BaseModel):
    facts: list[str]


class ListLLM(BaseLLM):
    """Answers from a list and records what it was asked."""

    def __init__(self, *answers: str, temperature: float = 0.0) -> None:
        super().__init__("list-model", temperature=temperature)
        self.answers = list(answers)
        self.calls: list[tuple[list[ChatMessage], float, OutputSchema | None]] = []

    async def _complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        temperature: float,
        output_schema: OutputSchema | None,
    ) -> Completion:
        self.calls.append((list(messages), temperature, output_schema))
        text = self.answers.pop(0)
        return Completion(text, Usage(prompt_tokens=10, completion_tokens=len(text), calls=1))


ASK: list[ChatMessage] = [{"role": "user", "content": "facts please"}]


def test_usage_adds_up() -> None:
    total = Usage(1, 2, 1) + Usage(10, 20, 1)
    assert total == Usage(11, 22, 2)
    assert total.total_tokens == 33
    assert Usage() == Usage(0, 0, 0)


def test_a_base_llm_satisfies_the_protocol() -> None:
    assert isinstance(ListLLM(), LLM)


async def test_schema_is_sent_and_stated_in_a_new_system_message() -> None:
    llm = ListLLM('{"facts": ["a"]}')
    result = await llm.generate_structured(ASK, Facts)
    assert result.value == Facts(facts=["a"])
    assert result.usage == Usage(10, 16, 1)
    sent, _, schema = llm.calls[0]
    assert schema == OutputSchema("Facts", Facts.model_json_schema())
    assert sent[0]["role"] == "system"
    assert '"facts"' in sent[0]["content"]
    assert sent[1:] == ASK


async def test_schema_instruction_joins_an_existing_system_message() -> None:
    llm = ListLLM('{"facts": []}')
    messages: list[ChatMessage] = [{"role": "system", "content": "You extract facts."}, *ASK]
    await llm.generate_structured(messages, Facts)
    sent = llm.calls[0][0]
    assert [m["role"] for m in sent] == ["system", "user"]
    assert sent[0]["content"].startswith("You extract facts.\n\n")
    assert messages[0]["content"] == "You extract facts."  # the caller's list is untouched


async def test_repair_shows_the_bad_output_and_the_error() -> None:
    llm = ListLLM('{"facts": "not a list"}', '{"facts": ["fixed"]}')
    result = await llm.generate_structured(ASK, Facts)
    assert result.value == Facts(facts=["fixed"])
    assert result.usage.calls == 2
    assert result.raw == '{"facts": ["fixed"]}'
    repair = llm.calls[1][0]
    assert repair[-2] == {"role": "assistant", "content": '{"facts": "not a list"}'}
    assert repair[-1]["role"] == "user"
    assert "facts: Input should be a valid list" in repair[-1]["content"]


async def test_two_bad_outputs_raise_with_the_last_one() -> None:
    llm = ListLLM("nope", "still nope")
    with pytest.raises(ProviderOutputError, match="even after a repair") as info:
        await llm.generate_structured(ASK, Facts)
    assert info.value.raw == "still nope"
    assert len(llm.calls) == 2


async def test_temperature_defaults_to_the_client_and_can_be_overridden() -> None:
    llm = ListLLM("one", '{"facts": []}', temperature=0.3)
    assert (await llm.complete(ASK)).text == "one"
    await llm.generate_structured(ASK, Facts, temperature=0.9)
    assert [call[1] for call in llm.calls] == [0.3, 0.9]
    assert llm.calls[0][2] is None  # free text: no schema


async def test_async_context_manager_closes() -> None:
    async with ListLLM() as llm:
        assert llm.model_name == "list-model"
