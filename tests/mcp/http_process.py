"""A real ``python -m memhub.mcp --http`` process for the MCP HTTP tests."""

from __future__ import annotations

import asyncio
import socket


def free_port() -> int:
    """A TCP port nothing listens on now (the OS's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def until_listening(port: int, attempts: int = 1_200) -> None:
    """Until something accepts connections on ``port`` (polled; fails after ``attempts``)."""
    for _ in range(attempts):
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.05)
            continue
        writer.close()
        return
    raise AssertionError(f"nothing listens on port {port}")
