"""Build and run memhub's MCP server over stdio or streamable HTTP."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from memhub.config import MemhubSettings
from memhub.mcp._sdk import MCPServer
from memhub.mcp.config import MCPConfig
from memhub.mcp.tools import TOOLS, ServerState
from memhub.memory import AsyncMemory

__all__ = ["create_server", "serve"]

log = logging.getLogger("memhub.mcp")

INSTRUCTIONS = (
    "Long-term memory of the user. Search it before answering questions that may depend on "
    "what the user said before; add durable facts the user shares (preferences, plans, "
    "people, corrections). Every tool acts for one user_id."
)


def create_server(
    settings: MemhubSettings | None = None, config: MCPConfig | None = None
) -> MCPServer[ServerState]:
    """An MCP server exposing memhub's memory tools; nothing is opened until it runs.

    Args:
        settings: Database, embedder and LLM settings; default ``MemhubSettings.from_env()``.
        config: Server options; default :meth:`MCPConfig.from_env`.

    Returns:
        The server. Its lifespan opens one :class:`AsyncMemory` and closes it at exit.
    """
    resolved = settings if settings is not None else MemhubSettings.from_env()
    options = config if config is not None else MCPConfig.from_env()

    @asynccontextmanager
    async def lifespan(_: MCPServer[ServerState]) -> AsyncIterator[ServerState]:
        # add_memory waits (never works) for its own turns up to the configured time
        waiting = resolved.model_copy(update={"wait_timeout": options.add_wait_seconds})
        async with AsyncMemory(settings=waiting) as memory:
            log.info("memhub MCP server ready (default user: %s)", options.default_user_id)
            yield ServerState(memory=memory, config=options)

    server: MCPServer[ServerState] = MCPServer(
        "memhub",
        instructions=INSTRUCTIONS,
        version=_version(),
        lifespan=lifespan,
        log_level="WARNING",
    )
    for tool in TOOLS:
        server.add_tool(tool)
    return server


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("memhub")
    except PackageNotFoundError:
        return "0"


async def serve(
    settings: MemhubSettings | None = None, config: MCPConfig | None = None, **http: Any
) -> None:
    """Run the server until the client disconnects (stdio) or the process is stopped (HTTP).

    Args:
        settings: As for :func:`create_server`.
        config: As for :func:`create_server`; ``transport`` picks stdio or HTTP.
        **http: Extra options of the SDK's streamable HTTP transport (``json_response``...).
    """
    options = config if config is not None else MCPConfig.from_env()
    server = create_server(settings, options)
    if options.transport == "stdio":
        await server.run_stdio_async()
        return
    log.warning("memhub MCP server on http://%s:%s%s", options.host, options.port, options.path)
    await server.run_streamable_http_async(
        host=options.host, port=options.port, streamable_http_path=options.path, **http
    )
