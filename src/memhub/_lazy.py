"""Names a package exports from modules it imports only when a name is first used.

``import memhub`` (and ``import memhub.embed``, ``memhub.rerank``, ``memhub.mcp``) stays
fast: a provider class whose module imports a model runtime, an SDK or an HTTP client is
loaded on first attribute access, not with its package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, modules: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``.

    Args:
        package: The package's ``__name__``.
        modules: Each lazily exported name and the module that defines it.
    """

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    def __dir__() -> list[str]:
        namespace = vars(sys.modules[package])
        return sorted(set(namespace) | set(namespace.get("__all__", ())) | set(modules))

    return __getattr__, __dir__
