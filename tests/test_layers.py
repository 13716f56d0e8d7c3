"""memhub's layers import downwards only, SQL lives in store/, and only store/ names its
PostgreSQL back end (docs/architecture.md).

The checker reads source with ``ast``: every import form counts (``import memhub.x``,
``from memhub.x import y``, ``from memhub import x``, relative imports, imports inside
functions), and so does every string that reads as SQL outside ``store/``. Its own tests
plant violations in a temporary tree and expect each one to be reported.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

import memhub

SRC = Path(memhub.__file__).parent

# Lower number = lower layer. A module may import the layers below its own. Inside one layer
# only the vocabulary (layer 0) may import a sibling: the packages of a higher layer are
# independent of each other (store, embed and llm do not know each other; nor do agent,
# server and mcp).
LAYERS: dict[str, int] = {
    "errors": 0,
    "config": 0,
    "messages": 0,
    "filters": 0,
    "telemetry": 0,
    "logs": 0,
    "_loops": 0,
    "_cpu": 0,
    "_fair": 0,
    "_lazy": 0,
    "store": 1,
    "embed": 1,
    "rerank": 1,
    "llm": 1,
    "engine": 2,
    "testing": 2,
    "memory": 3,
    "_portal": 3,
    "doors": 4,
    "agent": 5,
    "server": 5,
    "mcp": 5,
    "integrations": 5,
    "cli": 6,
}
SIBLINGS_ALLOWED = {0}
# memory/ and _portal are one layer by design: Memory runs on the portal's loop, and the
# portal closes memory's engines at exit.
# rerank's cross-encoder runs on the embedders' ONNX helpers (tokenizer, session, batches):
# rerank may import embed, never the other way.
SIBLING_PAIRS_ALLOWED = {("memory", "_portal"), ("_portal", "memory"), ("rerank", "embed")}

SQL_HOME = "store"
# Uppercase keywords, as memhub writes SQL; prose ("select the facts") does not match.
_SQL = re.compile(
    r"\bSELECT\b.+\bFROM\b|\bINSERT\s+INTO\b|\bUPDATE\s+\w+\s+SET\b|\bDELETE\s+FROM\b"
    r"|\b(CREATE|DROP|ALTER|TRUNCATE)\s+(TABLE|INDEX|EXTENSION|DATABASE|SCHEMA)\b"
    r"|\bpg_advisory\w*\(",
    re.DOTALL,
)
# Known SQL outside store/ (file: strings), each removed by the work that moved it behind the
# facade. None is left; the test fails on any SQL text found outside store/.
KNOWN_SQL_OUTSIDE_STORE: dict[str, int] = {}


# The back ends' packages (store/postgres/, store/inmemory/). Above store/ the data is reached
# through the protocol (store/protocol.py: Store, OpsStore, BulkStore), its records and the
# factory (memhub.store.open_store); nothing names a back end, in an import or a module-name
# string.
BACKEND_MODULE = re.compile(r"memhub\.store\.(postgres|inmemory)(?=\.\w|$)")
# ``memhub db`` starts and stops the embedded PostgreSQL server itself: a process, not data.
EMBEDDED_SERVER = {"cli/db.py": "memhub.store.postgres.embedded"}


# Entry points that reach the data only through the facade or its admin API (memory/), never
# the store itself: they share one engine and pool per process.
THROUGH_FACADE = {"doors", "server", "mcp"}


def _package(relative: Path) -> str:
    return relative.parts[0].removesuffix(".py")


def _absolute(node: ast.ImportFrom, module_path: tuple[str, ...]) -> str | None:
    """The absolute module an ImportFrom names; ``module_path`` is the importer's package."""
    if node.level == 0:
        return node.module
    base = module_path[: len(module_path) - (node.level - 1)]
    if not base:
        return None  # reaches above memhub itself
    return ".".join((*base, *([node.module] if node.module else [])))


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every ``memhub.*`` module ``path`` imports, in any form, resolved to absolute names."""
    relative = path.relative_to(root)
    package = ("memhub", *relative.parts[:-1])
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, package)
            if module is None:
                found.add("<relative import above memhub>")
                continue
            found.add(module)
            if module == "memhub":  # from memhub import memory: the name may be a package
                found.update(f"memhub.{alias.name}" for alias in node.names)
    return {m for m in found if m.startswith(("memhub.", "<"))}


def import_violations(root: Path) -> list[str]:
    """Imports that reach up a layer, or across to a sibling package of layers above 0."""
    violations = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        own = _package(relative)
        if own == "__init__":  # memhub/__init__.py is the curated surface over everything
            continue
        if own not in LAYERS:
            violations.append(f"{relative}: package {own!r} has no layer")
            continue
        for imported in sorted(imported_modules(path, root)):
            target = imported.split(".")[1] if imported.count(".") else imported
            if target not in LAYERS:
                if target.startswith("<"):
                    violations.append(f"{relative} has a {target[1:-1]}")
                continue
            mine, theirs = LAYERS[own], LAYERS[target]
            sibling = (
                target != own
                and theirs == mine
                and mine not in SIBLINGS_ALLOWED
                and (own, target) not in SIBLING_PAIRS_ALLOWED
            )
            if theirs > mine:
                violations.append(f"{relative} imports {imported} (layer {theirs} > {mine})")
            elif sibling:
                violations.append(f"{relative} imports {imported} (a sibling in layer {mine})")
    return violations


def facade_bypasses(root: Path) -> list[str]:
    """Imports of ``memhub.store`` by the packages that must go through memory/."""
    return [
        f"{path.relative_to(root)} imports {imported}"
        for path in sorted(root.rglob("*.py"))
        if _package(path.relative_to(root)) in THROUGH_FACADE
        for imported in sorted(imported_modules(path, root))
        if imported == "memhub.store" or imported.startswith("memhub.store.")
    ]


def imported_names(path: Path, root: Path) -> set[str]:
    """:func:`imported_modules`, plus ``package.name`` for every ``from package import name``
    (the name may be a module: ``from memhub.store.postgres import jobs``)."""
    relative = path.relative_to(root)
    package = ("memhub", *relative.parts[:-1])
    found = imported_modules(path, root)
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and (module := _absolute(node, package)):
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def backend_outside_store(root: Path) -> list[str]:
    """Every module outside ``store/`` that names a PostgreSQL back-end module: in an import of
    any form, or as a string (``importlib.import_module("memhub.store.postgres")``)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if _package(relative) == SQL_HOME:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        skip = _docstrings(tree)
        strings = {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip
        }
        allowed = EMBEDDED_SERVER.get(relative.as_posix(), "<none>")
        named = {
            m[0]
            for name in imported_names(path, root) | strings
            if (m := BACKEND_MODULE.match(name)) and not name.startswith(allowed)
        }
        found += [f"{relative} names {module}" for module in sorted(named)]
    return found


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def sql_outside_store(root: Path) -> set[str]:
    """``path:line`` of every string outside ``store/`` that reads as SQL (docstrings aside)."""
    found = set()
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if _package(relative) == SQL_HOME:
            continue
        tree = ast.parse(path.read_text("utf-8"))
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skip
                and _SQL.search(node.value)
            ):
                found.add(f"{relative}:{node.lineno}")
    return found


def test_no_module_reaches_up_a_layer_or_across_to_a_sibling() -> None:
    assert import_violations(SRC) == []


def test_sql_lives_in_store_only() -> None:
    per_file = Counter(place.split(":")[0] for place in sql_outside_store(SRC))
    assert dict(per_file) == KNOWN_SQL_OUTSIDE_STORE, sorted(sql_outside_store(SRC))


def test_server_and_mcp_go_through_the_facade() -> None:
    assert facade_bypasses(SRC) == []


def test_only_store_names_its_postgresql_back_end() -> None:
    assert backend_outside_store(SRC) == []


def test_every_package_folder_has_a_layer() -> None:
    folders = {p.name for p in SRC.iterdir() if p.is_dir() and not p.name.startswith("__")}
    modules = {p.stem for p in SRC.glob("*.py") if p.stem != "__init__"}
    assert folders | modules <= set(LAYERS)


# -- the checker's own tests: planted violations in a temporary tree -----------------------


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "memhub"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, "utf-8")
    return root


@pytest.mark.parametrize(
    ("planted", "reported"),
    [
        ("from memhub import memory\n", "store/bad.py imports memhub.memory (layer 3 > 1)"),
        ("import memhub.memory.shared\n", "store/bad.py imports memhub.memory.shared"),
        ("from memhub.engine.worker import Worker\n", "imports memhub.engine.worker (layer 2"),
        ("from ..memory import shared\n", "store/bad.py imports memhub.memory (layer 3 > 1)"),
        ("from ...outside import x\n", "store/bad.py has a relative import above memhub"),
        ("def late():\n    from memhub.cli import main\n", "imports memhub.cli (layer 6 > 1)"),
        ("from memhub.embed import Embedder\n", "imports memhub.embed (a sibling in layer 1)"),
        ("from memhub import llm\n", "imports memhub.llm (a sibling in layer 1)"),
    ],
)
def test_the_checker_reports_a_planted_import(tmp_path: Path, planted: str, reported: str) -> None:
    root = _tree(tmp_path, {"store/__init__.py": "", "store/bad.py": planted})
    violations = import_violations(root)
    assert any(reported in v for v in violations), violations


def test_the_checker_accepts_downward_and_own_package_imports(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "memory/__init__.py": "from .shared import Engine\n",
            "memory/shared.py": "from memhub import errors\nfrom memhub.store import x\n"
            "from . import results\nfrom .results import y\n",
            "memory/results.py": "import memhub.config\n",
            "filters.py": "from memhub.errors import UsageError\n",  # vocabulary siblings
        },
    )
    assert import_violations(root) == []


def test_the_checker_finds_sql_outside_store(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "store/ok.py": 'Q = "SELECT id FROM memories WHERE user_id = %s"\n',
            "server/queries.py": '"""Says SELECT x FROM y in its docstring: prose."""\n\n'
            'def users():\n    return "SELECT user_id, count(*) FROM memories GROUP BY 1"\n',
            "cli/data.py": 'Q = "UPDATE memories SET embedding = NULL"\nP = "select a topic"\n',
            "engine/lock.py": 'Q = f"SELECT pg_advisory_lock({1})"\n',
        },
    )
    assert sql_outside_store(root) == {"server/queries.py:4", "cli/data.py:1", "engine/lock.py:1"}


def test_the_checker_finds_a_server_reaching_around_the_facade(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "server/ok.py": "from memhub.memory.admin import AsyncAdmin\n",
            "server/bad.py": "from memhub.store.postgres import keys\n",
            "mcp/bad.py": "def late():\n    from memhub import store\n",
            "cli/fine.py": "from memhub.store.postgres import keys\n",  # not (yet) held to it
        },
    )
    assert facade_bypasses(root) == [
        "mcp/bad.py imports memhub.store",
        "server/bad.py imports memhub.store.postgres",
    ]


@pytest.mark.parametrize("package", ["memory", "server", "mcp", "cli", "agent", "engine"])
@pytest.mark.parametrize(
    ("planted", "named"),
    [
        ("from memhub.store.postgres import bulk_import\n", "memhub.store.postgres"),
        ("from memhub.store.postgres.store import PostgresStore\n", "memhub.store.postgres"),
        ("import memhub.store.postgres.jobs as jobs\n", "memhub.store.postgres"),
        ("from ..store import postgres\n", "memhub.store.postgres"),
        ("from ..store.postgres.reembed import swap\n", "memhub.store.postgres"),
        ("def late():\n    from memhub.store.postgres import users\n", "memhub.store.postgres"),
        ("from memhub.store import open_store, inmemory\n", "memhub.store.inmemory"),
        ("from memhub.store.inmemory.store import InMemoryStore\n", "memhub.store.inmemory"),
        (
            "import importlib\nM = importlib.import_module('memhub.store.postgres.store')\n",
            "memhub.store.postgres",
        ),
    ],
)
def test_the_checker_finds_a_planted_back_end_import(
    tmp_path: Path, package: str, planted: str, named: str
) -> None:
    root = _tree(tmp_path, {f"{package}/__init__.py": "", f"{package}/bad.py": planted})
    assert backend_outside_store(root) == [f"{package}/bad.py names {named}"]


def test_the_checker_lets_store_name_its_back_end_and_others_the_protocol(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "store/__init__.py": "def open_store():\n    from memhub.store.postgres import P\n",
            "store/postgres/store.py": "from memhub.store.postgres import jobs, bulk_import\n",
            "memory/ok.py": '"""Over :mod:`memhub.store.postgres.bulk_import`\'s bulk path."""\n'
            "from memhub.store import open_store\n"
            "from memhub.store.protocol import BulkStore, OpsStore\n"
            "from memhub.store.records import ImportCursor\n"
            "from memhub.store.api_keys import ApiKey\n"
            "NOTE = 'the postgres back end, memhub.store.postgresql, memhub.store.'\n",
        },
    )
    assert backend_outside_store(root) == []


def test_only_memhub_db_names_the_embedded_server(tmp_path: Path) -> None:
    planted = "from memhub.store.postgres.embedded import embedded_status\n"
    root = _tree(
        tmp_path,
        {
            "cli/__init__.py": "",
            "cli/db.py": planted,
            "cli/other.py": planted,
            "cli/store.py": "from memhub.store.postgres.store import PostgresStore\n",
        },
    )
    assert backend_outside_store(root) == [
        "cli/other.py names memhub.store.postgres",
        "cli/store.py names memhub.store.postgres",
    ]
