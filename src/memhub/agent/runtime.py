"""The agent runtime: scoped state, lazily loaded and cached resources, cleanup hooks.

A :class:`Runtime` lives as long as an application (or one request) wants its resources: a
memory client loaded through it is opened once, shared by every agent call, and closed with
the runtime, exactly once, also when a call failed.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Self, TypeAlias

from pydantic import BaseModel

from memhub.errors import UsageError

__all__ = [
    "CleanupHook",
    "ResourceFactory",
    "Runtime",
    "create_runtime",
    "register_resource",
]

log = logging.getLogger("memhub.agent")

ResourceFactory: TypeAlias = Callable[["Runtime", Any], Any]
"""``factory(runtime, config)`` returning the resource (or an awaitable of it). A resource that
holds connections registers its own close with ``runtime.on_cleanup``."""

CleanupHook: TypeAlias = Callable[[], Any]
"""A callable run at cleanup; if it returns an awaitable, that is awaited."""

_registry: dict[str, ResourceFactory] = {}


def register_resource(name: str, factory: ResourceFactory) -> None:
    """Make ``runtime.load(name, config)`` build resources with ``factory`` in every runtime."""
    _registry[name] = factory


def _config_key(config: object) -> str:
    # Equal configs must give equal keys whatever object carries them: a dict, settings, None.
    if isinstance(config, BaseModel):
        return f"{type(config).__qualname__}:{config.model_dump_json()}"
    try:
        return json.dumps(config, sort_keys=True, default=repr)
    except (TypeError, ValueError):
        return f"id:{id(config)}"


class Runtime:
    """Scoped state and resources for agent calls; use as ``async with create_runtime()``.

    Args:
        state: Application values (the current user, a request id...) resolvers can read.
    """

    def __init__(self, state: Mapping[str, Any] | None = None) -> None:
        self.state: dict[str, Any] = dict(state or {})
        self._factories: dict[str, ResourceFactory] = {}
        self._resources: dict[tuple[str, str], Any] = {}
        self._hooks: list[CleanupHook] = []
        self._lock = asyncio.Lock()
        self._closed = False

    def register_resource(self, name: str, factory: ResourceFactory) -> None:
        """Build ``name`` with ``factory`` in this runtime (overrides the global registry)."""
        self._factories[name] = factory

    async def load(self, name: str, config: object = None) -> Any:
        """The resource ``name`` for ``config``, built on first use and then cached.

        Loading the same name with an equal config returns the same object.

        Raises:
            UsageError: No factory is registered under ``name``, or the runtime is closed.
        """
        key = (name, _config_key(config))
        cached = self._resources.get(key)
        if cached is not None:
            return cached
        async with self._lock:
            if self._closed:
                raise UsageError("this runtime is closed; create a new one")
            if key not in self._resources:
                factory = self._factories.get(name) or _registry.get(name)
                if factory is None:
                    raise UsageError(f"no resource factory is registered as {name!r}")
                resource = factory(self, config)
                if inspect.isawaitable(resource):
                    resource = await resource
                self._resources[key] = resource
            return self._resources[key]

    def on_cleanup(self, hook: CleanupHook) -> None:
        """Run ``hook`` once when the runtime closes (hooks run last-registered first)."""
        if self._closed:
            raise UsageError("this runtime is closed; create a new one")
        self._hooks.append(hook)

    @property
    def closed(self) -> bool:
        """True once :meth:`aclose` has run."""
        return self._closed

    async def aclose(self) -> None:
        """Run every cleanup hook once; later calls do nothing. A failing hook is logged."""
        async with self._lock:
            if self._closed:
                return
            self._closed = True
            hooks, self._hooks = self._hooks[::-1], []
            self._resources.clear()
        for hook in hooks:
            await _run_hook(hook)

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def _run_hook(hook: CleanupHook) -> None:
    # The edge of application code: one failing hook must not keep the others from closing
    # their pools, so it is logged and cleanup goes on.
    try:
        result = hook()
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("a runtime cleanup hook failed: %r", hook)


def create_runtime(state: Mapping[str, Any] | None = None) -> Runtime:
    """A new :class:`Runtime`; close it with ``async with`` or :meth:`Runtime.aclose`."""
    return Runtime(state)


async def _load_memory(runtime: Runtime, config: object) -> Any:
    from memhub.config import MemhubSettings
    from memhub.memory import AsyncMemory

    if config is None:
        memory = AsyncMemory()
    elif isinstance(config, MemhubSettings):
        memory = AsyncMemory(settings=config)
    elif isinstance(config, Mapping):
        memory = AsyncMemory.from_config(config)
    else:
        raise UsageError(
            "the memory resource takes MemhubSettings, a Mem0-style config dict or None, "
            f"got {type(config).__name__}"
        )
    runtime.on_cleanup(memory.aclose)
    return memory


register_resource("memory", _load_memory)
