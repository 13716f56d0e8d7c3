"""Tools as typed functions: the JSON schema comes from the signature, descriptions from the
docstring; a first parameter annotated :class:`ToolContext` receives the runtime and scope.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, get_type_hints, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from memhub.agent.model import ToolSpec
from memhub.errors import MemhubError, UsageError

if TYPE_CHECKING:
    from memhub.agent.memory_session import MemorySession
    from memhub.agent.runtime import Runtime

__all__ = ["Tool", "ToolContext", "ToolError", "tool"]


@dataclass(frozen=True)
class ToolContext:
    """What a runtime-aware tool knows about the call it serves."""

    runtime: Runtime
    agent_name: str
    thread_id: str | None = None
    user_id: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    memory: MemorySession | None = None
    """The call's memory, bound to ``user_id``; None when memory is off for the call."""


class ToolError(MemhubError):
    """Raise in a tool to tell the model what went wrong; the message is shown to it."""


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """The summary (text before ``Args:``) and per-argument descriptions, Google style."""
    if not doc:
        return "", {}
    doc = inspect.cleandoc(doc)
    head, _, rest = doc.partition("\nArgs:\n")
    described: dict[str, str] = {}
    current: str | None = None
    for line in rest.splitlines():
        if line and not line.startswith(" "):
            break  # the next section (Returns:, Raises:...)
        match = _ARG_LINE.match(line)
        if match and len(line) - len(line.lstrip()) <= 4:
            current = match.group(1)
            described[current] = match.group(2).strip()
        elif current and line.strip():
            described[current] += " " + line.strip()
    return head.strip(), described


class Tool:
    """A function the model may call.

    Args:
        function: A sync or async function with annotated parameters. If its first
            parameter is annotated :class:`ToolContext`, it receives the call's context.
        name: The name the model sees; the function's name by default.
        description: What the tool does; the docstring's summary by default.
    """

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
    ) -> None:
        self.function = function
        self.name = name or function.__name__
        summary, described = _parse_docstring(function.__doc__)
        self.description = description or summary or self.name
        self.takes_context, self._arguments = _arguments_model(function, described)
        schema = self._arguments.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        self.spec = ToolSpec(self.name, self.description, schema)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    async def call(self, context: ToolContext, arguments: Mapping[str, Any]) -> Any:
        """Validate ``arguments`` and run the function.

        Raises:
            ToolError: The arguments do not fit the signature.
        """
        try:
            parsed = self._arguments.model_validate(dict(arguments))
        except ValidationError as exc:
            raise ToolError(f"invalid arguments for {self.name}: {exc}") from exc
        kwargs = {key: getattr(parsed, key) for key in type(parsed).model_fields}
        result = self.function(context, **kwargs) if self.takes_context else self.function(**kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


def _arguments_model(
    function: Callable[..., Any], described: Mapping[str, str]
) -> tuple[bool, type[BaseModel]]:
    hints = get_type_hints(function)
    params = list(inspect.signature(function).parameters.values())
    takes_context = bool(params) and hints.get(params[0].name) is ToolContext
    fields: dict[str, Any] = {}
    for param in params[1:] if takes_context else params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise UsageError(f"tool {function.__name__} cannot take *args or **kwargs")
        if param.name not in hints:
            raise UsageError(f"tool {function.__name__}: parameter {param.name} needs a type")
        default = ... if param.default is param.empty else param.default
        fields[param.name] = (
            hints[param.name],
            Field(default, description=described.get(param.name)),
        )
    model = create_model(
        f"{function.__name__}_arguments",
        __config__=ConfigDict(extra="forbid"),
        **fields,
    )
    return takes_context, model


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...
@overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a :class:`Tool` of a function; use as ``@tool`` or ``@tool(name=...)``."""
    if function is not None:
        return Tool(function, name=name, description=description)
    return lambda fn: Tool(fn, name=name, description=description)
