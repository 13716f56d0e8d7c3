"""The FastAPI application: the REST API under ``/v1``, ``/healthz``, and the web page at ``/``."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib.util
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from memhub.config import MemhubSettings
from memhub.errors import MemhubError, install_hint
from memhub.memory.admin import AsyncAdmin
from memhub.memory.async_memory import AsyncMemory
from memhub.memory.services import builds_a_model
from memhub.server import routes_admin, routes_memories
from memhub.server.errors import install_error_handlers
from memhub.server.gate import TenantGate
from memhub.server.health import WriteHealth, WriteWatch
from memhub.server.limits import BodyLimit
from memhub.server.settings import ServerSettings
from memhub.server.state import ServerState

__all__ = ["create_app"]

log = logging.getLogger("memhub.server")

STATIC = Path(__file__).with_name("static")
# The page loads only its own files: no CDN, no inline script, nothing to inject into.
_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _announce_bootstrap_key(secret: str, server: ServerSettings) -> None:
    # stdout, not the log: it is meant for the person starting the server, once.
    print(
        "\n"
        "memhub: no API keys existed, so an admin key was created. It is shown only now:\n\n"
        f"    {secret}\n\n"
        f"Store it safely. Paste it into http://{server.host}:{server.port}/ or send it as\n"
        "'Authorization: Bearer <key>'; create tenant keys with POST /v1/keys. Only its hash\n"
        "is stored; set MEMHUB_ADMIN_KEY to use an admin key of your own instead.\n",
        flush=True,
    )


async def _bootstrap(state: ServerState) -> None:
    if state.server.auth != "on" or state.server.admin_key is not None:
        return
    secret = await state.admin.bootstrap_admin_key()
    if secret is not None:
        _announce_bootstrap_key(secret, state.server)


class _TrailingSlashes:
    """Serve ``/v1/memories/`` as ``/v1/memories``: Mem0's clients add the slash."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] == "http" and path.startswith("/v1/") and path.endswith("/"):
            scope = {**scope, "path": path.rstrip("/"), "raw_path": path.rstrip("/").encode()}
        await self.app(scope, receive, send)


class _GatedApp(FastAPI):
    """The FastAPI application with the tenant gate in front of all of it.

    Starlette's middleware run inside its own error handler and FastAPI's layers; the gate
    runs before them, so a request over its key's quota costs the HTTP parse and the gate.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._gate = TenantGate(functools.partial(FastAPI.__call__, self), self._state)

    def _state(self) -> ServerState | None:
        return getattr(self.state, "memhub", None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._gate(scope, receive, send)


def _lifespan(
    settings: MemhubSettings | None,
    memory: AsyncMemory | None,
    server: ServerSettings,
    writes: WriteHealth,
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """Open the facade (or use the caller's) and the server's state around the app's life."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = memory is None
        facade = memory or AsyncMemory(settings=settings or MemhubSettings.from_env())
        try:
            if own and builds_a_model(facade.settings):
                async with _started_in_background(app, facade, server, writes):
                    yield
            else:
                async with _started(app, facade, server, writes):
                    yield
        finally:
            if own:
                await facade.aclose()

    return lifespan


@asynccontextmanager
async def _started(
    app: FastAPI, facade: AsyncMemory, server: ServerSettings, writes: WriteHealth
) -> AsyncIterator[None]:
    """The server's state, ready, for as long as the context lasts."""
    # Now, not on the first request: the worker drains jobs queued before a restart,
    # and a broken database or embedder fails the start.
    await facade.open()
    state = ServerState(memory=facade, admin=AsyncAdmin(facade), server=server, writes=writes)
    await state.admin.ping()  # keys and tenants need PostgreSQL: refuse memory:// now
    await _bootstrap(state)
    # Revocations by other processes are pushed from the first request on.
    await state.access.start(wait=facade.settings.connect_timeout)
    app.state.memhub = state
    try:
        yield
    finally:
        app.state.memhub = None
        await state.access.aclose()


@asynccontextmanager
async def _started_in_background(
    app: FastAPI, facade: AsyncMemory, server: ServerSettings, writes: WriteHealth
) -> AsyncIterator[None]:
    """Start while already listening: the first start builds the embedding model (about a
    minute), and meanwhile ``/healthz`` answers 503 with the build's progress.

    A start that fails is logged and, under ``memhub serve``, stops the server
    (``app.state.stop_server``); ``/healthz`` says "failed" until then.
    """
    held = AsyncExitStack()

    async def start() -> None:
        try:
            await held.enter_async_context(_started(app, facade, server, writes))
        except Exception as exc:
            # memhub's own errors say what to do (a missing model names its install command):
            # one line, which a traceback would bury; anything else keeps its traceback.
            trace = None if isinstance(exc, MemhubError) else exc
            log.error("memhub could not start: %s", exc, exc_info=trace)
            app.state.memhub_failed = f"{exc.__class__.__name__}: {exc}"
            stop: Callable[[], None] | None = getattr(app.state, "stop_server", None)
            if stop is not None:
                stop()
            return
        app.state.memhub_starting = None
        log.info("memhub is ready")

    log.info("memhub is starting: building its embedding model first (GET /healthz shows how far)")
    app.state.memhub_failed = None
    app.state.memhub_starting = asyncio.create_task(start())
    try:
        yield
    finally:
        task = app.state.memhub_starting
        if task is not None:
            # A build in its thread runs to its end (a thread cannot be stopped), and the
            # process exits after it: the next start finds the model built.
            log.info("stopping while starting: the model being built is finished first")
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        app.state.memhub_starting = None
        await held.aclose()


def create_app(
    settings: MemhubSettings | None = None,
    memory: AsyncMemory | None = None,
    *,
    server: ServerSettings | None = None,
) -> FastAPI:
    """The memhub server application.

    Args:
        settings: memhub's settings; default ``MemhubSettings.from_env()`` (or ``memory``'s).
        memory: A facade to serve; its owner closes it. By default the app opens its own
            from ``settings`` at startup (running the in-process worker) and closes it at
            shutdown.
        server: Authentication and listening settings; default ``ServerSettings.from_env()``.
    """

    server_settings = server or ServerSettings.from_env()
    writes = WriteHealth()
    app = _GatedApp(
        title="memhub",
        summary="Memory for LLM agents on PostgreSQL + pgvector, Mem0-style.",
        version="1",
        lifespan=_lifespan(settings, memory, server_settings, writes),
        # FastAPI's own pages load Swagger UI and ReDoc from a CDN: /docs is served below
        # from the fastapi-offline package's assets instead, so it works offline.
        docs_url=None,
        redoc_url=None,
    )
    install_error_handlers(app)
    # Inside the slash rewrite, the body limit and the gate: it sees the routes' own paths.
    app.add_middleware(WriteWatch, health=writes, serving=lambda: app._state() is not None)
    app.add_middleware(_TrailingSlashes)
    # An oversized body is refused before routing, parsing or authentication (and a tenant
    # over its quota before that, by _GatedApp, before its body is even read).
    app.add_middleware(BodyLimit, max_bytes=server_settings.max_body_bytes)
    app.include_router(routes_memories.router)
    app.include_router(routes_admin.router)
    app.include_router(routes_admin.health_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers=_PAGE_HEADERS)

    _mount_docs(app)
    return app


def _mount_docs(app: FastAPI) -> None:
    """Swagger UI at ``/docs`` from the assets of the fastapi-offline package (server extra).

    Only its files are used (a current Swagger UI, which reads OpenAPI 3.1): found by path,
    the package itself is never imported.
    """
    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or not spec.submodule_search_locations:  # pragma: no cover
        log.warning("fastapi-offline is missing: /docs is off (%s)", install_hint("server"))
        return
    assets = Path(next(iter(spec.submodule_search_locations))) / "static"
    app.mount("/docs-static", StaticFiles(directory=assets), name="docs-static")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title="memhub API",
            swagger_js_url="/docs-static/swagger-ui-bundle.js",
            swagger_css_url="/docs-static/swagger-ui.css",
            swagger_favicon_url="/static/favicon.svg",
            # No validator badge: it would send the spec to a public validator.
            swagger_ui_parameters={"validatorUrl": None},
        )
