"""``serve()``: run the app under uvicorn (``memhub serve``, ``make run``)."""

from __future__ import annotations

import logging
import signal
import threading
from types import FrameType

from memhub.config import MemhubSettings
from memhub.server.settings import ServerSettings

__all__ = ["serve"]

log = logging.getLogger("memhub.server")

LOOPBACK = "127.0.0.1"


def listen_address(server: ServerSettings) -> tuple[str, int]:
    """Where to listen: with authentication off, never beyond this machine."""
    if server.auth == "off":
        log.warning(
            "MEMHUB_AUTH=off: every caller is admin; listening on %s only (local development)",
            LOOPBACK,
        )
        if server.host != LOOPBACK:
            log.warning("ignoring MEMHUB_HOST=%s because authentication is off", server.host)
        return LOOPBACK, server.port
    return server.host, server.port


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def serve(
    settings: MemhubSettings | None = None,
    server: ServerSettings | None = None,
    *,
    log_level: str = "info",
) -> None:
    """Run the REST API and web page until interrupted (blocks).

    Args:
        settings: memhub's settings; default ``MemhubSettings.from_env()``.
        server: Host, port and authentication; default ``ServerSettings.from_env()``.
        log_level: uvicorn's log level.
    """
    import uvicorn

    from memhub.doors.h11 import JsonH11Protocol
    from memhub.server.app import create_app

    settings = settings or MemhubSettings.from_env()
    server = server or ServerSettings.from_env()
    host, port = listen_address(server)
    app = create_app(settings, server=server)
    log.info("memhub server on http://%s:%s (API docs at /docs)", host, port)
    if threading.current_thread() is threading.main_thread():
        # uvicorn shuts down gracefully on SIGTERM, restores the handler it found and raises
        # the signal again: with Python's default one the process would die without running
        # its exit handlers, leaving the embedded PostgreSQL running. Ours exits normally.
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        proxy_headers=False,
        # Malformed requests answered in memhub's JSON (memhub.doors.h11); no WebSocket.
        http=JsonH11Protocol,
        ws="none",
    )
    runner = uvicorn.Server(config)

    def stop() -> None:  # a start that failed after the port opened (app._started_in_background)
        runner.should_exit = True

    app.state.stop_server = stop
    runner.run()
    if not runner.started or getattr(app.state, "memhub_failed", None) is not None:
        raise SystemExit(3)  # uvicorn.run's exit status for a start that failed
