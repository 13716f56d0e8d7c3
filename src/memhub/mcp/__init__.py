"""memhub's MCP server: search, add, list, delete and history tools for any MCP client.

Needs the ``mcp`` extra (``pip install -e '.[mcp]'`` in a checkout). The options and the entry
points import without it; :func:`create_server` and :func:`serve` load the SDK when first used, and
raise :class:`~memhub.ConfigurationError` naming that command if it is missing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from pydantic import ValidationError

from memhub._lazy import lazy_names
from memhub.config import MemhubSettings, settings_error_line
from memhub.errors import MemhubError
from memhub.logs import configure_logging, show_info
from memhub.mcp.config import MCPConfig, add_mcp_arguments, config_from_args

if TYPE_CHECKING:
    from memhub.mcp.server import create_server, serve
    from memhub.mcp.tools import TOOLS, ChatMessage, ServerState

__all__ = [
    "TOOLS",
    "ChatMessage",
    "MCPConfig",
    "ServerState",
    "add_mcp_arguments",
    "config_from_args",
    "create_server",
    "main",
    "run",
    "serve",
]

_LAZY = {
    "create_server": "memhub.mcp.server",
    "serve": "memhub.mcp.server",
    "TOOLS": "memhub.mcp.tools",
    "ChatMessage": "memhub.mcp.tools",
    "ServerState": "memhub.mcp.tools",
}


# The SDK is imported on first use of a name that needs it, not by `import memhub.mcp`.
__getattr__, __dir__ = lazy_names(__name__, _LAZY)


def run(settings: MemhubSettings, config: MCPConfig) -> int:
    """Serve until stopped (blocking); the ``memhub mcp`` command. Returns an exit code."""
    from memhub.mcp.server import serve

    if config.transport != "stdio":  # a server says where it listens, as `memhub serve` does
        show_info()
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how an HTTP server stops
        asyncio.run(serve(settings, config))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m memhub.mcp``."""
    parser = argparse.ArgumentParser(
        prog="python -m memhub.mcp", description="memhub's MCP server (stdio or HTTP)."
    )
    parser.add_argument("--database-url", help="PostgreSQL URL (default: embedded server)")
    parser.add_argument(
        "-v", "--verbose", action="count", default=0, help="log at INFO level (-vv: DEBUG)"
    )
    add_mcp_arguments(parser)
    args = parser.parse_args(argv)
    # On stdio, stdout carries the protocol: every log line goes to stderr.
    configure_logging(args.verbose, sys.stderr)
    try:
        settings = MemhubSettings.from_env(database_url=args.database_url)
        return run(settings, config_from_args(args))
    except MemhubError as exc:
        print(f"memhub mcp: {exc}", file=sys.stderr)
        return 1
    except ValidationError as exc:  # MEMHUB_* settings: one line, no traceback
        print(settings_error_line(exc), file=sys.stderr)
        return 2
