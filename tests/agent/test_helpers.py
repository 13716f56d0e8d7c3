"""Pure parts of the agent package: prompt helpers, tools, config from the environment.

No database here; the model tests use ``ScriptedOpenAIServer`` (no capable model runs here).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memhub import AIMessage, ConfigurationError, SystemMessage, UserMessage
from memhub.agent import (
    Agent,
    OpenAIChatModel,
    ToolContext,
    build_config_from_env,
    create_runtime,
    format_conversation,
    inject_memories,
    tool,
)
from memhub.agent.memory_flow import MEMORY_BLOCK_OPEN, new_turn, recall_query
from memhub.agent.model import ToolSpec
from memhub.telemetry import instruments, operation
from memhub.testing import ScriptedOpenAIServer, tool_call

HIT = {"id": "m1", "memory": "Uses <b>Okta</b> & SSO", "valid_from": "2025-03-04T10:00:00+00:00"}


def test_inject_memories_places_one_block_after_instructions() -> None:
    messages = [SystemMessage(content="Be brief."), UserMessage(content="Hi")]
    once = inject_memories(messages, [HIT], "t-1")
    assert [m.role for m in once] == ["system", "system", "user"]
    block = once[1].content
    assert block.splitlines()[0] == f'{MEMORY_BLOCK_OPEN} thread="t-1">'
    assert (
        '<memory id="m1" date="2025-03-04">Uses &lt;b&gt;Okta&lt;/b&gt; &amp; SSO</memory>' in block
    )
    assert block.endswith("</memhub:memories>")
    twice = inject_memories(once, [HIT], "t-1")
    assert twice == once
    assert inject_memories(once, [], "t-1") == messages  # stale block removed, none added
    assert messages == [SystemMessage(content="Be brief."), UserMessage(content="Hi")]


def test_format_conversation_is_the_add_payload() -> None:
    messages = [
        SystemMessage(content="Be brief."),
        UserMessage(content="Hi"),
        AIMessage(content=""),
        AIMessage(content="Hello!"),
    ]
    assert format_conversation(messages, "t-1") == {
        "messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello!"}],
        "run_id": "t-1",
        "metadata": {"thread_id": "t-1"},
    }


def test_new_turn_and_query() -> None:
    conversation = [
        UserMessage(content="old"),
        AIMessage(content="answer"),
        UserMessage(content="new one"),
        UserMessage(content="and two"),
    ]
    assert [m.content for m in new_turn(conversation)] == ["new one", "and two"]
    assert recall_query(new_turn(conversation), [UserMessage(content="before")]) == (
        "before\nnew one\nand two"
    )


def test_tool_schema_from_signature_and_docstring() -> None:
    @tool
    def lookup(context: ToolContext, order_id: int, verbose: bool = False) -> str:
        """Find an order.

        Args:
            order_id: The order number
                printed on the invoice.
            verbose: Include every line item.
        """
        return f"{context.user_id}:{order_id}:{verbose}"

    assert lookup.takes_context
    assert lookup.spec == ToolSpec(
        "lookup",
        "Find an order.",
        {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "order_id": {
                    "type": "integer",
                    "description": "The order number printed on the invoice.",
                },
                "verbose": {
                    "type": "boolean",
                    "default": False,
                    "description": "Include every line item.",
                },
            },
            "required": ["order_id"],
        },
    )


async def test_tools_validate_arguments() -> None:
    @tool(name="add")
    async def adder(a: int, b: int = 1) -> int:
        """Add numbers."""
        return a + b

    async with create_runtime() as runtime:
        context = ToolContext(runtime=runtime, agent_name="x")
        assert await adder.call(context, {"a": 2}) == 3
        with pytest.raises(Exception, match="invalid arguments for add"):
            await adder.call(context, {"a": "two"})


async def test_tool_loop_streams_and_respects_the_step_limit() -> None:
    def weather(city: str) -> dict[str, Any]:
        """The weather in a city."""
        return {"city": city, "sky": "clear"}

    with ScriptedOpenAIServer(
        tool_call("weather", {"city": "Oslo"}), "Clear in Oslo.", default=tool_call("nope", {})
    ) as server:
        model = OpenAIChatModel("m", base_url=server.base_url, max_retries=0)
        agent = Agent("w", "Weather bot.", model, tools=[weather], max_steps=2)
        kinds = [
            c.kind async for c in agent.stream(messages=[{"role": "user", "content": "Oslo?"}])
        ]
        assert kinds == ["tool_call", "tool_result", "text", "text", "text", "done"]
        tool_message = server.last_messages[-1]
        assert tool_message["role"] == "tool"
        assert tool_message["content"] == '{"city": "Oslo", "sky": "clear"}'
        assert server.chat_requests[0].json["tools"][0]["function"]["name"] == "weather"

        result = await agent.generate(messages=[{"role": "user", "content": "loop"}])
        assert result.finish_reason == "max_steps" and result.steps == 2
        assert result.messages[2].content == "error: there is no tool named 'nope'"
        await model.aclose()


def test_build_config_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "MEMHUB_DATABASE_URL",
        "DB_URL",
        "MEM0__PG_URI",
        "MEMHUB_LLM_MODEL",
        "MEMHUB_EMBEDDER",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MEM0__PROVIDER", "pgvector")
    monkeypatch.setenv("MEM0__PG_HOST", "db.internal")
    monkeypatch.setenv("MEM0__PG_PORT", "6543")
    monkeypatch.setenv("MEM0__PG_USER", "mem")
    monkeypatch.setenv("MEM0__PG_PASSWORD", "p@ss")
    monkeypatch.setenv("MEM0__COLLECTION", "support_memories")
    monkeypatch.setenv("MEM0__DIMENSION", "1536")
    monkeypatch.setenv("MEM0__LLM_MODEL", "gpt-4o-mini")
    monkeypatch.setenv("MEM0__EMBED_MODEL", "text-embedding-3-small")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = build_config_from_env()
    assert settings.database_url == "postgresql://mem:p%40ss@db.internal:6543/postgres"
    assert (settings.embedder, settings.embedder_model) == ("openai", "text-embedding-3-small")
    assert settings.embedder_dimension == 1536 and settings.embedder_api_key is not None
    assert settings.embedder_api_key.get_secret_value() == "sk-test"
    assert settings.llm_model == "gpt-4o-mini" and settings.llm_api_key is not None
    assert settings.llm_api_key.get_secret_value() == "sk-test"

    monkeypatch.setenv("MEMHUB_LLM_MODEL", "qwen2.5")  # memhub's own variables win
    monkeypatch.setenv("MEM0__PG_URI", "postgresql://u@h/db")
    settings = build_config_from_env()
    assert settings.llm_model == "qwen2.5" and settings.database_url == "postgresql://u@h/db"

    monkeypatch.setenv("MEM0__PROVIDER", "mongodb")
    with pytest.raises(ConfigurationError, match="pgvector"):
        build_config_from_env()


def test_telemetry_is_a_no_op_without_an_sdk() -> None:
    with operation("test.op", {"k": "v"}) as span:
        span.set_attribute("n", 1)
    with pytest.raises(ValueError), operation("test.fail"):
        raise ValueError("x")
    instruments().errors.add(1)


def test_importing_the_agent_package_is_lazy() -> None:
    code = (
        "import sys, memhub; assert 'memhub.agent' not in sys.modules;"
        "import memhub.agent; assert 'openai' not in sys.modules;"
        "memhub.agent.OpenAIChatModel; assert 'openai' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_raw_mode_keeps_only_the_users_words_long_term(tmp_path: Path) -> None:
    from memhub import AsyncMemory, MemhubSettings
    from memhub.agent.config import AgentMemoryConfig
    from memhub.agent.memory_session import MemorySession

    plain = MemhubSettings(embedder="minilm", database_url="memory://", data_dir=tmp_path)
    with_llm = plain.model_copy(update={"llm_base_url": "http://127.0.0.1:9/v1", "llm_model": "m"})

    def roles(settings: MemhubSettings, **options: Any) -> dict[str, Any]:
        client = AsyncMemory(settings=settings)  # no I/O until a call
        config = AgentMemoryConfig(client=client, **options)
        session = MemorySession(client, "u", "t", config, "agent", lambda *_: None)
        return session._roles()

    assert roles(plain) == {"remember_roles": ["user"]}  # turns kept as said
    assert roles(with_llm) == {}  # an LLM extracts facts from the whole exchange
    assert roles(with_llm, infer=False) == {"remember_roles": ["user"]}
    assert roles(plain, long_term_roles=["user", "assistant"]) == {
        "remember_roles": ["user", "assistant"]
    }
