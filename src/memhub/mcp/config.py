"""How the MCP server is run: default user, transport, address. Reads no SDK."""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["MCPConfig", "add_mcp_arguments", "config_from_args"]


@dataclass(frozen=True)
class MCPConfig:
    """Options of the MCP server (the database and embedder come from ``MemhubSettings``).

    Attributes:
        default_user_id: The user a tool acts for when the client passes no ``user_id``;
            None makes ``user_id`` required on every call.
        transport: ``stdio`` (a client launches the server) or ``http`` (streamable HTTP).
        host: Address the HTTP transport binds.
        port: Port of the HTTP transport.
        path: URL path of the HTTP endpoint.
        add_wait_seconds: How long ``add_memory`` waits for the new memories to become
            searchable before answering "queued" (they are durable either way).
    """

    default_user_id: str | None = None
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = 8766
    path: str = "/mcp"
    add_wait_seconds: float = 10.0

    @classmethod
    def from_env(cls, **overrides: Any) -> MCPConfig:
        """``MEMHUB_MCP_USER_ID`` as the default user; explicit non-None overrides win."""
        values: dict[str, Any] = {}
        user = os.environ.get("MEMHUB_MCP_USER_ID", "").strip()
        if user:
            values["default_user_id"] = user
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)


def add_mcp_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``memhub mcp`` and ``python -m memhub.mcp``."""
    parser.add_argument(
        "--http", action="store_true", help="serve streamable HTTP instead of stdio"
    )
    parser.add_argument("--host", default=None, help="HTTP bind address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="HTTP port (default 8766)")
    parser.add_argument(
        "--user-id",
        dest="mcp_user_id",
        default=None,
        help="default user when a tool call names none (or MEMHUB_MCP_USER_ID)",
    )


def config_from_args(args: argparse.Namespace) -> MCPConfig:
    """An :class:`MCPConfig` from parsed :func:`add_mcp_arguments` options and the env."""
    return MCPConfig.from_env(
        default_user_id=args.mcp_user_id,
        transport="http" if args.http else "stdio",
        host=args.host,
        port=args.port,
    )
