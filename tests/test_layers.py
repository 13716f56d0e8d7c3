"""memhub's layers import downwards only (docs/architecture.md draws them)."""

from __future__ import annotations

import ast
from pathlib import Path

import memhub

SRC = Path(memhub.__file__).parent

# Lower number = lower layer. A module may import its own layer and the ones below.
LAYERS: dict[str, int] = {
    "errors": 0,
    "config": 0,
    "messages": 0,
    "filters": 0,
    "telemetry": 0,
    "_loops": 0,
    "testing": 0,
    "store": 1,
    "embed": 1,
    "llm": 1,
    "engine": 2,
    "memory": 3,
    "_portal": 3,
    "agent": 4,
    "server": 4,
    "mcp": 4,
    "cli": 5,
}


def _layer_of(module: str) -> str:
    return module.split(".")[1] if module.count(".") >= 1 else ""


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text("utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.startswith("memhub.")}


def test_no_module_reaches_up_a_layer() -> None:
    violations = []
    for path in SRC.rglob("*.py"):
        relative = path.relative_to(SRC)
        own = relative.parts[0].removesuffix(".py")
        if own == "__init__" or own not in LAYERS:
            continue
        for imported in _imports(path):
            target = _layer_of(imported)
            if target in LAYERS and LAYERS[target] > LAYERS[own]:
                violations.append(f"{relative} imports {imported}")
    assert violations == []


def test_every_package_folder_has_a_layer() -> None:
    folders = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("__")}
    modules = {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    assert folders | modules <= set(LAYERS)
