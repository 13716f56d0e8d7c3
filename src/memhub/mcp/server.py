"""Build and run memhub's MCP server over stdio or streamable HTTP."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from memhub.config import MemhubSettings
from memhub.errors import ConfigurationError
from memhub.mcp._sdk import MCPServer
from memhub.mcp.config import MCPConfig
from memhub.mcp.tools import TOOLS, ServerState, pinned
from memhub.memory import AsyncMemory
from memhub.memory.admin import AsyncAdmin

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
        async with AsyncMemory(settings=_served(resolved, options)) as memory:
            log.info("memhub MCP server ready (default user: %s)", options.default_user_id)
            yield ServerState(memory=memory, config=options)

    server: MCPServer[ServerState] = MCPServer(
        "memhub",
        instructions=INSTRUCTIONS,
        version=_version(),
        lifespan=lifespan,
        log_level="WARNING",
        middleware=[] if options.default_user_id is None else [_refuse_user_ids],
    )
    for tool in TOOLS:
        server.add_tool(pinned(tool) if options.default_user_id is not None else tool)
    return server


# JSON-RPC's "invalid params"; the SDK drops unknown arguments silently, so a pinned server
# refuses a user_id here, before the tool runs, instead of quietly ignoring it.
_INVALID_PARAMS = -32602


async def _refuse_user_ids(ctx: Any, call_next: Any) -> Any:
    params = ctx.params if isinstance(ctx.params, dict) else {}
    arguments = params.get("arguments")
    if ctx.method == "tools/call" and isinstance(arguments, dict) and "user_id" in arguments:
        from mcp.shared.exceptions import MCPError

        raise MCPError(_INVALID_PARAMS, "this server is pinned to one user: tools take no user_id")
    return await call_next(ctx)


def _served(settings: MemhubSettings, options: MCPConfig) -> MemhubSettings:
    """The settings the server's memory runs with (equal settings share one engine and pool)."""
    # add_memory waits (never works) for its own turns up to the configured time
    return settings.model_copy(update={"wait_timeout": options.add_wait_seconds})


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

    Over HTTP every request needs a memhub API key (``Authorization: Bearer <key>``) unless
    ``config.require_key`` is off, and ``Host`` / ``Origin`` must name this server unless
    ``config.host_check`` is off.

    Args:
        settings: As for :func:`create_server`.
        config: As for :func:`create_server`; ``transport`` picks stdio or HTTP.
        **http: Extra options of the SDK's streamable HTTP app (``json_response``...).
    """
    resolved = settings if settings is not None else MemhubSettings.from_env()
    options = config if config is not None else MCPConfig.from_env()
    server = create_server(resolved, options)
    if options.transport == "stdio":
        await server.run_stdio_async()
        return
    import uvicorn

    from memhub.doors.h11 import JsonH11Protocol

    # Keys are checked on the engine the tools use: same settings, so one shared pool.
    async with AsyncMemory(settings=_served(resolved, options)) as memory:
        admin = None
        if options.require_key:
            await memory.open()
            admin = AsyncAdmin(memory)
        app = http_app(server, options, admin, **http)
        log.info(
            "memhub MCP server on http://%s:%s%s (API key %s)",
            options.host,
            options.port,
            options.path,
            "required" if options.require_key else "NOT required",
        )
        config_ = uvicorn.Config(
            app,
            host=options.host,
            port=options.port,
            log_level="warning",
            # Malformed requests answered in memhub's JSON, as `memhub serve` does.
            http=JsonH11Protocol,
            ws="none",
        )
        from memhub.mcp.auth import KeyAuth

        try:
            if isinstance(app, KeyAuth):  # follow revocations before the first request, as REST
                await app.access.start(wait=memory.settings.connect_timeout)
            await uvicorn.Server(config_).serve()
        finally:
            if isinstance(app, KeyAuth):  # the key check's session listening for revocations
                await app.access.aclose()


def http_app(
    server: MCPServer[ServerState], options: MCPConfig, admin: AsyncAdmin | None, **http: Any
) -> Any:
    """The streamable HTTP ASGI app: the SDK's, with Host/Origin checks and API keys."""
    from mcp.server.transport_security import TransportSecuritySettings

    from memhub.mcp.auth import KeyAuth

    hosts = [f"{name}:{options.port}" for name in ("127.0.0.1", "localhost", options.host)]
    hosts += list(options.allowed_hosts)
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=options.host_check,
        allowed_hosts=hosts,
        allowed_origins=[f"{scheme}://{host}" for host in hosts for scheme in ("http", "https")],
    )
    app = server.streamable_http_app(
        streamable_http_path=options.path, transport_security=security, host=options.host, **http
    )
    if not options.require_key:
        return app
    if admin is None:
        raise ConfigurationError("the MCP HTTP transport needs the database to check API keys")
    return KeyAuth(app, admin)
