"""The one place memhub imports the ``mcp`` SDK; its absence names the extra to install."""

from __future__ import annotations

from memhub.errors import ConfigurationError, install_hint

try:
    from mcp.server.mcpserver import Context, MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
except ImportError as exc:  # not installed, or mcp 1.x (FastMCP, before MCPServer)
    raise ConfigurationError(
        f"memhub's MCP server needs the MCP Python SDK 2.x: {install_hint('mcp')}"
    ) from exc

__all__ = ["Context", "MCPServer", "ToolError"]
