"""Names a package exports from modules it imports only when a name is first used.

``import memhub`` (and ``import memhub.embed``, ``memhub.rerank``, ``memhub.mcp``,
``memhub.llm``, ``memhub.agent``, ``memhub.testing``) stays fast: a provider class whose
module imports a model runtime, an SDK or an HTTP client is loaded on first attribute
access, not with its package.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, modules: Mapping[str, str], *, listed: Sequence[str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module-level ``__getattr__`` and ``__dir__`` of ``package``.

    A name, once resolved, is kept in the package's namespace: later reads do not come back.

    Args:
        package: The package's ``__name__``.
        modules: Each lazily exported name and the module that defines it.
        listed: What ``dir()`` lists, if only these names (``memhub``'s ``__all__``); by
            default the package's namespace, its ``__all__`` and ``modules``.
    """

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        if listed is not None:
            return list(listed)
        namespace = vars(sys.modules[package])
        return sorted(set(namespace) | set(namespace.get("__all__", ())) | set(modules))

    return __getattr__, __dir__
