"""memhub's REST API and web page (the ``server`` extra: ``pip install memhub[server]``).

``create_app()`` builds the FastAPI application; ``serve()`` runs it under uvicorn.
"""

from __future__ import annotations

try:
    import fastapi  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        "memhub.server needs FastAPI and uvicorn: pip install 'memhub[server]'"
    ) from exc

from memhub.server.app import create_app
from memhub.server.main import serve
from memhub.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "serve"]
