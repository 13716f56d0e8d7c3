"""``Agent``: instructions, a chat model, tools, and (optionally) long-term memory.

``generate`` and ``stream`` share one loop: recall, model call, tools until the model answers
(or the step limit), persist. Memory failures never fail a call; model failures do.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Literal

from memhub import telemetry
from memhub.agent.config import AgentMemoryConfig, CallContext, memory_switched_on, resolve
from memhub.agent.memory_flow import inject_memories, new_turn, strip_memories
from memhub.agent.memory_session import MemorySession
from memhub.agent.model import ChatModel, ModelResponse, ToolCall, ToolSpec, Usage
from memhub.agent.runtime import Runtime, create_runtime
from memhub.agent.text_tool_calls import looks_like_tool_call_start
from memhub.agent.tools import Tool, ToolContext, ToolError
from memhub.errors import MemhubError, UsageError
from memhub.messages import Message, SystemMessage, ToolMessage, message_class

__all__ = ["Agent", "AgentChunk", "AgentResult"]

log = logging.getLogger("memhub.agent")

MessageInput = Message | Mapping[str, Any]


@dataclass
class AgentResult:
    """What a call produced.

    Attributes:
        text: The answer.
        messages: The conversation as passed (without injected memories) plus the new
            assistant and tool messages; pass it back in for the next turn.
        memories: The memories injected into the prompt.
        usage: Tokens over all model calls.
        steps: Model calls made.
        finish_reason: The model's last finish reason, or ``"max_steps"``.
        user_id: The resolved user, None when memory was off for the call.
        thread_id: The resolved thread, None when memory was off for the call.
        persisted: The exchange was stored in memory.
    """

    text: str
    messages: list[Message]
    memories: list[Mapping[str, Any]] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    finish_reason: str | None = None
    user_id: str | None = None
    thread_id: str | None = None
    persisted: bool = False


@dataclass(frozen=True)
class AgentChunk:
    """One event of ``Agent.stream``: text as it arrives, tool activity, then ``done``."""

    kind: Literal["text", "tool_call", "tool_result", "done"]
    text: str = ""
    tool_call: ToolCall | None = None
    result: AgentResult | None = None


@dataclass
class _Call:
    """The mutable state of one call."""

    conversation: list[Message]
    prompt: list[Message]
    memories: list[Mapping[str, Any]]
    session: MemorySession | None
    context: ToolContext
    tools: dict[str, Tool]
    new: list[Message] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    steps: int = 0
    persisted: bool = False


def _to_message(item: MessageInput) -> Message:
    if isinstance(item, Message):
        return item
    if not isinstance(item, Mapping) or "role" not in item:
        raise UsageError(f"a message must be a Message or a dict with a role, got {item!r}")
    fields = {**item, "content": item.get("content") or ""}
    return message_class(str(item["role"])).model_validate(fields)


class Agent:
    """An LLM agent with tools and optional long-term memory.

    Args:
        name: The agent's name (in logs, traces and persisted metadata).
        instructions: The system prompt.
        model: Any :class:`~memhub.agent.ChatModel`, e.g. ``OpenAIChatModel``.
        tools: Tools or plain typed functions the model may call.
        memory: Long-term memory; None (or ``enable=False``) means none.
        max_steps: Model calls per request at most (each tool round is one).
    """

    def __init__(
        self,
        name: str,
        instructions: str,
        model: ChatModel,
        *,
        tools: Sequence[Tool | Callable[..., Any]] = (),
        memory: AgentMemoryConfig | None = None,
        max_steps: int = 8,
    ) -> None:
        if max_steps < 1:
            raise UsageError(f"max_steps must be at least 1, got {max_steps}")
        self.name = name
        self.instructions = instructions
        self.model = model
        self.tools = [t if isinstance(t, Tool) else Tool(t) for t in tools]
        self.memory = memory
        self.max_steps = max_steps
        self.memory_errors = 0
        """Memory failures this agent survived (also the ``memhub.agent.memory.errors`` metric)."""
        self._warned_missing_scope = False

    def __repr__(self) -> str:
        return f"Agent({self.name!r}, model={self.model!r})"

    async def generate(
        self,
        *,
        messages: Sequence[MessageInput],
        runtime: Runtime | None = None,
        thread_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AgentResult:
        """Answer ``messages``; memories are recalled before and the exchange persisted after.

        Args:
            messages: The conversation, or just the newest user message.
            runtime: Where resources (the memory client) are loaded and cached; a temporary
                one, closed before returning, when None.
            thread_id: The conversation's id (needed for memory, with a user).
            metadata: Call metadata the resolvers read (e.g. ``{"user_id": ...}``).

        Raises:
            ProviderError: The chat model failed (memory failures never raise).
        """
        events = self._run(messages, runtime, thread_id, metadata, streaming=False)
        async with aclosing(events):
            async for chunk in events:
                if chunk.result is not None:
                    return chunk.result
        raise AssertionError("the agent loop ended without a result")  # pragma: no cover

    def stream(
        self,
        *,
        messages: Sequence[MessageInput],
        runtime: Runtime | None = None,
        thread_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> AsyncGenerator[AgentChunk, None]:
        """Like :meth:`generate`, chunk by chunk; the last chunk (``done``) has the result.

        The exchange is persisted when the stream completes. A stream closed early (wrap it in
        ``contextlib.aclosing`` to close it at once) or failing persists what was said so far,
        with ``metadata.partial = True``.
        """
        return self._run(messages, runtime, thread_id, metadata, streaming=True)

    async def _run(
        self,
        messages: Sequence[MessageInput],
        runtime: Runtime | None,
        thread_id: str | None,
        metadata: Mapping[str, Any] | None,
        *,
        streaming: bool,
    ) -> AsyncGenerator[AgentChunk, None]:
        own_runtime = runtime is None
        active = runtime or create_runtime()
        try:
            call = await self._start(messages, active, thread_id, dict(metadata or {}))
            try:
                async for chunk in self._loop(call, streaming):
                    yield chunk
            finally:
                # Abandoned or failed: keep what was said. Nothing said, nothing stored, so a
                # retried call does not store the question twice.
                said = "".join(call.said)
                if call.session is not None and not call.persisted and said.strip():
                    await call.session.persist(call.conversation, said, True)
        finally:
            if own_runtime:
                await active.aclose()

    async def _start(
        self,
        messages: Sequence[MessageInput],
        runtime: Runtime,
        thread_id: str | None,
        metadata: dict[str, Any],
    ) -> _Call:
        conversation = strip_memories([_to_message(m) for m in messages])
        if not conversation:
            raise UsageError("messages must not be empty")
        session = await self._open_memory(
            runtime, CallContext(self.name, thread_id, metadata, conversation)
        )
        if session is not None:  # what the forget tool may act on: the user's own words
            session.user_turn = "\n".join(m.content for m in new_turn(conversation))
        prompt = [SystemMessage(content=self.instructions), *conversation]
        memories = await session.recall(conversation) if session else []
        prompt = inject_memories(prompt, memories, session.thread_id if session else None)
        tools = [*self.tools, *(self._memory_tools() if session else ())]
        context = ToolContext(
            runtime=runtime,
            agent_name=self.name,
            thread_id=session.thread_id if session else thread_id,
            user_id=session.user_id if session else None,
            metadata=metadata,
            memory=session,
        )
        by_name = {t.name: t for t in tools}
        return _Call(conversation, prompt, memories, session, context, by_name)

    def _memory_tools(self) -> tuple[Tool, ...]:
        if self.memory is None or not self.memory.tools:
            return ()
        from memhub.agent.memory_tools import MEMORY_TOOLS

        return MEMORY_TOOLS

    async def _open_memory(self, runtime: Runtime, call: CallContext) -> MemorySession | None:
        config = self.memory
        if config is None or not memory_switched_on(config):
            return None
        try:
            user = await resolve(config.resolve_user, runtime, call)
            thread = await resolve(config.resolve_thread_id, runtime, call)
        except Exception as exc:  # application resolvers: a bug there must not fail the call
            self._memory_failed("resolve", exc)
            return None
        if user is None or thread is None:
            if not self._warned_missing_scope:
                self._warned_missing_scope = True
                log.warning(
                    "agent %s: no %s resolved, so this call runs without memory "
                    "(warned once per agent)",
                    self.name,
                    "user" if user is None else "thread id",
                )
            return None
        try:
            client = config.client
            if client is None:
                client = await runtime.load("memory", config.provider_config)
        except Exception as exc:  # a broken memory config costs memory, not the answer
            self._memory_failed("load", exc)
            return None
        return MemorySession(client, user, thread, config, self.name, self._memory_failed)

    def _memory_failed(self, operation: str, error: BaseException) -> None:
        self.memory_errors += 1
        telemetry.record_memory_error(operation, {"memhub.agent": self.name})
        log.warning(
            "agent %s: memory %s failed, continuing without it: %s: %s",
            self.name,
            operation,
            type(error).__name__,
            error,
            exc_info=log.isEnabledFor(logging.DEBUG),
        )

    async def _loop(self, call: _Call, streaming: bool) -> AsyncGenerator[AgentChunk, None]:
        response = ModelResponse()
        offered = [t.spec for t in call.tools.values()]
        for _ in range(self.max_steps):
            call.steps += 1
            if call.steps == self.max_steps:
                offered = []  # the last step must answer: a call now could not be answered
            async for event in self._ask(call, offered, streaming):
                if isinstance(event, ModelResponse):
                    response = event
                else:
                    yield event
            call.usage += response.usage
            empty = not response.tool_calls and not response.content.strip()
            if empty and offered and call.steps < self.max_steps:
                # Small models answer a tool round with nothing (Qwen2.5-Coder-1.5B through
                # llama.cpp, issue 25): once, ask again with the tools withheld, so the user
                # gets an answer written from what the tools returned.
                offered = []
                continue
            message = response.as_message()
            call.prompt.append(message)
            call.new.append(message)
            if not response.tool_calls:
                break
            for tool_call in response.tool_calls:
                yield AgentChunk("tool_call", tool_call=tool_call)
                output = await self._call_tool(call, tool_call)
                result = ToolMessage(content=output, tool_call_id=tool_call.id)
                call.prompt.append(result)
                call.new.append(result)
                yield AgentChunk("tool_result", text=output, tool_call=tool_call)
        yield AgentChunk("done", text=response.content, result=await self._finish(call, response))

    async def _ask(
        self, call: _Call, offered: Sequence[ToolSpec], streaming: bool
    ) -> AsyncGenerator[AgentChunk | ModelResponse, None]:
        """One model call: its text as chunks when streaming, then its response."""
        call.said.append("")
        response = ModelResponse()
        attributes: dict[str, str | int] = {"memhub.agent": self.name, "memhub.step": call.steps}
        # Not activated: the span stays open across yields to the caller (see telemetry).
        with telemetry.operation("agent.model", attributes, activate=False):
            if streaming:
                held = ""  # text that may be a tool call written as text: not shown yet
                async for chunk in self.model.stream(call.prompt, offered):
                    if chunk.text:
                        held += chunk.text
                        # only an answer's beginning can be a call: then show as it comes
                        if call.said[-1] or not looks_like_tool_call_start(held):
                            call.said[-1] += held
                            yield AgentChunk("text", text=held)
                            held = ""
                    if chunk.response is not None:
                        response = chunk.response
                if held and not response.tool_calls:
                    call.said[-1] += held
                    yield AgentChunk("text", text=held)
            else:
                response = await self.model.complete(call.prompt, offered)
                call.said[-1] = response.content
        yield response

    async def _finish(self, call: _Call, response: ModelResponse) -> AgentResult:
        finish = response.finish_reason
        if response.tool_calls:
            finish = "max_steps"
            log.warning("agent %s stopped after %d steps (max_steps)", self.name, call.steps)
        stored = False
        if call.session is not None:
            partial = finish == "interrupted"  # the server broke off: what was said, marked
            stored = await call.session.persist(call.conversation, response.content, partial)
            call.persisted = True  # attempted: a failure was counted, not to be redone as partial
        return AgentResult(
            text=response.content,
            messages=[*call.conversation, *call.new],
            memories=call.memories,
            usage=call.usage,
            steps=call.steps,
            finish_reason=finish,
            user_id=call.context.user_id,
            thread_id=call.context.thread_id if call.session else None,
            persisted=stored,
        )

    async def _call_tool(self, call: _Call, tool_call: ToolCall) -> str:
        tool = call.tools.get(tool_call.name)
        if tool is None:
            return f"error: there is no tool named {tool_call.name!r}"
        try:
            with telemetry.operation("agent.tool", {"memhub.tool": tool.name}):
                value = await tool.call(call.context, tool_call.parsed_arguments())
        except (ToolError, MemhubError) as exc:
            return f"error: {exc}"
        except Exception as exc:  # application tool code: report to the model, keep going
            log.exception("agent %s: tool %s failed", self.name, tool.name)
            return f"error: the tool failed ({type(exc).__name__})"
        return value if isinstance(value, str) else json.dumps(value, default=str)
