"""Generate ``memory/sync_memory.py`` (the sync ``Memory``) from ``AsyncMemory``'s source.

Run ``python tools/gen_sync.py`` after changing ``AsyncMemory``; ``--check`` exits 1 when the
checked-in file differs from what would be generated (``tests/test_sync_twins.py`` runs it).

Every public method of ``AsyncMemory`` gets a twin with the same signature and docstring: a
coroutine runs through ``run_sync`` on memhub's portal loop, a plain method is forwarded, a
classmethod builds a ``Memory`` around what the async one builds, a staticmethod is shared.
The lifecycle (``close``, the context manager, the bound ids) is written out below, once.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# AsyncMemory and its bases, most derived first: a name defined in an earlier class wins, as
# Python's method resolution order has it.
SOURCES = (
    (ROOT / "src/memhub/memory/async_memory.py", "AsyncMemory"),
    (ROOT / "src/memhub/memory/retirement.py", "RetirementMethods"),
    (ROOT / "src/memhub/memory/core.py", "MemoryCore"),
)
NAME = "src/memhub/memory/sync_memory.py"
TARGET = ROOT / NAME
COMMAND = "python tools/gen_sync.py"

# Written by hand: the async side has aclose() / async context manager and plain attributes.
SKIPPED = {"aclose", "__init__"}

HEAD = '''"""``Memory``: the synchronous face of :class:`AsyncMemory`, one line per method.

GENERATED from ``AsyncMemory`` and its bases by ``tools/gen_sync.py``: do not edit; run
``{command}``. Each call runs on memhub's process-wide event loop thread,
so every thread shares one connection pool.
"""

from __future__ import annotations

{imports}
from memhub._portal import run_sync
from memhub.memory.async_memory import AsyncMemory

__all__ = ["Memory"]


class Memory:
    """{summary}

{details}
    """

'''

LIFECYCLE = '''
    @property
    def async_memory(self) -> AsyncMemory:
        """The async object every call goes to."""
        return self._async

    @property
    def user_id(self) -> str | None:
        """The user ARKOS's methods act for (None: pass ``user_id`` per call)."""
        return self._async.user_id

    @property
    def session_id(self) -> str:
        """The conversation ARKOS's methods store into and read from."""
        return self._async.session_id

    @session_id.setter
    def session_id(self, value: str) -> None:
        self._async.session_id = value

    @property
    def settings(self) -> MemhubSettings:
        """The settings this object runs with."""
        return self._async.settings

    def close(self) -> None:
        """Release this object's share of the pool, the embedder and the worker."""
        run_sync(self._async.aclose())

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
'''


def _call_arguments(args: ast.arguments) -> str:
    """How a wrapper passes its own parameters on (``self``/``cls`` left out)."""
    positional = [a.arg for a in (*args.posonlyargs, *args.args)][1:]
    parts = positional.copy()
    if args.vararg is not None:
        parts.append(f"*{args.vararg.arg}")
    parts += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    if args.kwarg is not None:
        parts.append(f"**{args.kwarg.arg}")
    return ", ".join(parts)


def _decorators(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    return {ast.unparse(d) for d in node.decorator_list}


def _docstring(source: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    first = node.body[0]
    if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)):
        raise SystemExit(f"AsyncMemory.{node.name} has no docstring; write one, then regenerate")
    segment = ast.get_source_segment(source, first, padded=False)
    assert segment is not None
    return segment


def _twin(source: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """The sync twin of one public member of AsyncMemory."""
    decorators = _decorators(node)
    if "staticmethod" in decorators:
        return f"    {node.name} = staticmethod(AsyncMemory.{node.name})\n"
    signature = ast.unparse(node.args)
    returns = f" -> {ast.unparse(node.returns)}" if node.returns is not None else ""
    doc = _docstring(source, node)
    call = f"{node.name}({_call_arguments(node.args)})"
    if "classmethod" in decorators:
        returns = returns.replace("AsyncMemory", "Memory")
        body = f"memory = cls.__new__(cls)\nmemory._async = AsyncMemory.{call}\nreturn memory"
        head = "@classmethod\n"
    elif "property" in decorators:
        body, head = f"return self._async.{node.name}", "@property\n"
    elif decorators:
        raise SystemExit(f"AsyncMemory.{node.name}: no twin rule for {sorted(decorators)}")
    elif isinstance(node, ast.AsyncFunctionDef):
        if any(isinstance(n, ast.Yield | ast.YieldFrom) for n in ast.walk(node)):
            raise SystemExit(f"AsyncMemory.{node.name} is an async generator: no twin rule")
        body, head = f"return run_sync(self._async.{call})", ""
    else:
        body, head = f"return self._async.{call}", ""
    body = textwrap.indent(body, "    ")
    code = f"{head}def {node.name}({signature}){returns}:\n    {doc}\n{body}"
    return textwrap.indent(code, "    ") + "\n"


def _init(node: ast.FunctionDef) -> str:
    call = _call_arguments(node.args)
    code = (
        f"def __init__({ast.unparse(node.args)}) -> None:\n    self._async = AsyncMemory({call})\n"
    )
    return textwrap.indent(code, "    ")


Member = tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]


def _read_sources() -> tuple[list[str], ast.ClassDef, list[Member]]:
    """The imports of every source, AsyncMemory's class node, and every member with its source."""
    imports: dict[str, None] = {}
    members: dict[str, Member] = {}
    classes: list[ast.ClassDef] = []
    for path, name in SOURCES:
        source = path.read_text("utf-8")
        tree = ast.parse(source)
        for node in tree.body:
            if isinstance(node, ast.Import) or (
                isinstance(node, ast.ImportFrom) and node.module != "__future__"
            ):
                imports[ast.unparse(node)] = None
        (cls,) = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
        classes.append(cls)
        for node in cls.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                members.setdefault(node.name, (source, node))
    return list(imports), classes[0], list(members.values())


def generate() -> str:
    """The sync module's text, formatted as ruff formats the project."""
    imports, cls, members = _read_sources()
    doc = ast.get_docstring(cls, clean=True) or ""
    details = doc.partition("\n\n")[2]
    (init,) = [n for _, n in members if n.name == "__init__" and isinstance(n, ast.FunctionDef)]
    parts = [
        HEAD.format(
            command=COMMAND,
            imports="\n".join(imports),
            summary="Synchronous memory; every method means what it means on :class:`AsyncMemory`.",
            details=textwrap.indent(details, "    "),
        ),
        _init(init),
        LIFECYCLE,
    ]
    for source, node in members:
        if node.name.startswith("_") or node.name in SKIPPED:
            continue
        parts.append("\n" + _twin(source, node))
    return _ruff("".join(parts))


def _ruff(code: str) -> str:
    """Drop the async module's imports the twins do not use, sort the rest, format."""
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        raise SystemExit("ruff is needed to format the generated code: pip install ruff")
    name = NAME
    fixed = subprocess.run(
        [ruff, "check", "--select", "F401,I", "--fix", "--quiet", "--stdin-filename", name, "-"],
        input=code,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    if fixed.returncode not in (0, 1):
        raise SystemExit(f"ruff check failed on the generated code:\n{fixed.stderr}")
    formatted = subprocess.run(
        [ruff, "format", "--quiet", "--stdin-filename", name, "-"],
        input=fixed.stdout,
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return formatted.stdout


def stale(target: Path = TARGET) -> bool:
    """True when ``target`` differs from what would be generated now."""
    return not target.exists() or target.read_text("utf-8") != generate()


def main(argv: list[str] | None = None) -> int:
    """Write the sync module, or with ``--check`` say whether it is up to date."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args(argv)
    if args.check:
        if stale():
            print(f"{NAME} is stale: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(generate(), "utf-8")
    print(f"wrote {NAME}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
