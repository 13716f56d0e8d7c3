"""The ``memhub`` command line: the parser in :mod:`~memhub.cli.parser`, one module a group.

Command modules are imported when their command runs, so ``memhub --help`` and a search
over HTTP load no database driver and no model.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memhub.cli.parser import parse_args
from memhub.errors import MemhubError
from memhub.logs import configure_logging

if TYPE_CHECKING:
    from memhub.config import MemhubSettings

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memhub`` command."""
    args = parse_args(argv)
    configure_logging(args.verbose)
    try:
        return _run(args)
    except MemhubError as exc:
        print(f"memhub: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        # MEMHUB_* settings: one line, no traceback. pydantic is not imported on every path
        # (a search over HTTP needs no settings), and then this cannot be its error.
        pydantic = sys.modules.get("pydantic")
        if pydantic is None or not isinstance(exc, pydantic.ValidationError):
            raise
        from memhub.config import settings_error_line

        print(settings_error_line(exc), file=sys.stderr)
        return 2


def _settings(args: argparse.Namespace) -> MemhubSettings:
    from memhub.config import MemhubSettings

    return MemhubSettings.from_env(database_url=args.database_url)


def _run(args: argparse.Namespace) -> int:
    if args.command == "search":  # over HTTP it needs no settings (pydantic takes a while)
        from memhub.cli.search import run_search

        return run_search(args, lambda: _settings(args))
    if args.command == "fake-llm":
        from memhub.testing._serve import add_arguments, serve

        return serve(_own_options(args, add_arguments))
    settings = _settings(args)
    command: str = args.command
    if command in ("demo", "serve", "migrate", "worker", "jobs"):
        return _ops(command, args, settings)
    if command in ("get", "list", "delete", "restore"):
        from memhub.cli.records import run_record_command

        return run_record_command(args, settings)
    if command in ("changes", "undo"):
        from memhub.cli.changes import run_changes_command

        return run_changes_command(args, settings)
    if command == "import":
        from memhub.cli.imports import run_import

        return run_import(args, settings)
    if command == "export":
        from memhub.cli.export import run_export

        return run_export(args, settings)
    if command == "reembed":
        from memhub.cli.reembed import run_reembed

        return run_reembed(args, settings)
    if command == "mcp":
        from memhub.mcp import add_mcp_arguments, config_from_args, run

        return run(settings, config_from_args(_own_options(args, add_mcp_arguments)))
    from memhub.cli.db import run_db

    return run_db(args, settings)


def _own_options(
    args: argparse.Namespace, add_arguments: Callable[[argparse.ArgumentParser], None]
) -> argparse.Namespace:
    """The options of a command that defines its own (``mcp``, ``fake-llm``)."""
    parser = argparse.ArgumentParser(prog=f"memhub {args.command}")
    add_arguments(parser)
    return parser.parse_args(args.options)


def _ops(command: str, args: argparse.Namespace, settings: MemhubSettings) -> int:
    import asyncio

    from memhub.cli import ops

    if command == "demo":
        return ops.demo(settings)
    if command == "serve":
        return ops.serve(settings, args)
    if command == "migrate":
        return asyncio.run(ops.migrate(settings))
    if command == "worker":
        from memhub.engine.worker import standalone_concurrency

        concurrency = args.concurrency or standalone_concurrency(settings.worker_concurrency)
        return asyncio.run(ops.worker(settings, max(1, concurrency)))
    return asyncio.run(ops.jobs(settings, args.action, args.ids))


if __name__ == "__main__":
    sys.exit(main())
