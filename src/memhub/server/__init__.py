"""memhub's REST API and web page (the ``server`` extra: ``pip install -e '.[server]'``).

``create_app()`` builds the FastAPI application; ``serve()`` runs it under uvicorn.
"""

from __future__ import annotations

from memhub.errors import install_hint

try:
    import fastapi  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(f"memhub.server needs FastAPI and uvicorn: {install_hint('server')}") from exc

from memhub.server.app import create_app
from memhub.server.main import serve
from memhub.server.settings import ServerSettings

__all__ = ["ServerSettings", "create_app", "serve"]
