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
        default_user_id: Pins the server to this user: tools act for it only and take no
            ``user_id`` at all. None makes ``user_id`` required on every call.
        transport: ``stdio`` (a client launches the server) or ``http`` (streamable HTTP).
        host: Address the HTTP transport binds.
        port: Port of the HTTP transport.
        path: URL path of the HTTP endpoint.
        add_wait_seconds: How long ``add_memory`` waits for the new memories to become
            searchable before answering "queued" (they are durable either way).
        require_key: The HTTP transport answers 401 without a memhub API key (``Bearer``);
            a tenant key confines every call to its tenant. Off only with
            ``--no-auth`` (a loopback-only development server).
        host_check: Refuse requests whose ``Host`` / ``Origin`` is not this server's
            (DNS rebinding); ``allowed_hosts`` adds names a proxy uses.
        allowed_hosts: Extra ``host:port`` values accepted in ``Host`` (and as origins).
        max_messages: Messages ``add_memory`` accepts in one call.
        forget_limit: Memories ``delete_memory`` may retire per user per minute.
    """

    default_user_id: str | None = None
    transport: Literal["stdio", "http"] = "stdio"
    host: str = "127.0.0.1"
    port: int = 8766
    path: str = "/mcp"
    add_wait_seconds: float = 10.0
    require_key: bool = True
    host_check: bool = True
    allowed_hosts: tuple[str, ...] = ()
    max_messages: int = 100
    forget_limit: int = 3

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
        help="pin the server to this user: tools take no user id (or MEMHUB_MCP_USER_ID)",
    )
    parser.add_argument(
        "--allowed-host",
        dest="allowed_hosts",
        action="append",
        default=None,
        help="HTTP: a further host:port accepted in Host/Origin (repeatable; e.g. a proxy's)",
    )
    parser.add_argument(
        "--no-host-check",
        action="store_true",
        help="HTTP: accept any Host/Origin header (only behind a proxy that checks them)",
    )
    parser.add_argument(
        "--no-auth",
        action="store_true",
        help="HTTP: no API key (development only; binds 127.0.0.1 whatever --host says)",
    )


def config_from_args(args: argparse.Namespace) -> MCPConfig:
    """An :class:`MCPConfig` from parsed :func:`add_mcp_arguments` options and the env."""
    no_auth = bool(getattr(args, "no_auth", False))
    return MCPConfig.from_env(
        default_user_id=args.mcp_user_id,
        transport="http" if args.http else "stdio",
        # Without keys, never beyond this machine (as `memhub serve` with MEMHUB_AUTH=off).
        host="127.0.0.1" if no_auth else args.host,
        port=args.port,
        require_key=not no_auth,
        host_check=not getattr(args, "no_host_check", False),
        allowed_hosts=tuple(getattr(args, "allowed_hosts", None) or ()),
    )
