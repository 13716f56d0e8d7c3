"""The ``memhub`` argument parser: every command's options, with no memhub module imported.

Kept apart from the commands so ``memhub --help`` (and ``memhub search`` over HTTP) start
without loading settings, the database driver or the embedder.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

__all__ = ["OWN_OPTIONS", "build_parser", "parse_args"]

OWN_OPTIONS = ("mcp", "fake-llm")  # commands that parse their own options

if TYPE_CHECKING:
    Commands: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``memhub`` command."""
    parser = argparse.ArgumentParser(prog="memhub", description="Memory for LLM agents.")
    parser.add_argument("--database-url", help="PostgreSQL URL (default: embedded server)")
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log at INFO level (-vv: DEBUG, with the embedded server's commands)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    _ops(commands)
    _records(commands)
    _search(commands)
    _imports(commands)
    _export_reembed(commands)
    _others(commands)
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv``; what ``mcp`` and ``fake-llm`` take is left in ``options``."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if rest and args.command not in OWN_OPTIONS:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    args.options = rest
    return args


def _ops(commands: Commands) -> None:
    commands.add_parser("demo", help="store a short conversation and print it back")
    serve = commands.add_parser("serve", help="run the REST API and the web page")
    serve.add_argument("--host", help="interface to bind (default 127.0.0.1, MEMHUB_HOST)")
    serve.add_argument("--port", type=int, help="port (default 8765, MEMHUB_PORT)")
    serve.add_argument("--auth", choices=["on", "off"], help="API keys (default on)")
    commands.add_parser("migrate", help="apply database migrations")
    worker = commands.add_parser("worker", help="process queued jobs until stopped")
    worker.add_argument(
        "--concurrency",
        type=int,
        help="batches in flight (default MEMHUB_WORKER_CONCURRENCY, else one per CPU)",
    )
    jobs = commands.add_parser("jobs", help="inspect the job queue")
    jobs.add_argument("action", choices=["stats", "parked", "retry"])
    jobs.add_argument("ids", nargs="*", type=int, help="job ids for retry (default: all)")


def _records(commands: Commands) -> None:
    get = commands.add_parser("get", help="print one memory (JSON)")
    get.add_argument("memory_id")
    get.add_argument("--user-id", help="only if it belongs to this user")
    listing = commands.add_parser("list", help="list a user's memories with their ids")
    listing.add_argument("--user-id", required=True)
    listing.add_argument("--limit", type=int, default=50)
    listing.add_argument("--include-superseded", action="store_true", help="also outdated facts")
    listing.add_argument(
        "--retired", action="store_true", help="only what a model retired (restore takes them)"
    )
    delete = commands.add_parser("delete", help="delete one memory (history keeps it)")
    delete.add_argument("memory_id")
    delete.add_argument("--user-id", help="only if it belongs to this user")
    restore = commands.add_parser(
        "restore", help="bring back a memory a model retired or superseded"
    )
    restore.add_argument("memory_id")
    restore.add_argument("--user-id", help="only if it belongs to this user")
    changes = commands.add_parser(
        "changes", help="what models retired, superseded and reworded for a user, newest first"
    )
    changes.add_argument("--user-id", required=True)
    changes.add_argument("--limit", type=int, default=50)
    changes.add_argument("--before", type=int, help="only changes with a smaller id (paging)")
    changes.add_argument("--json", action="store_true", help="one JSON object per change")
    undo = commands.add_parser(
        "undo", help="undo one model change (an id from 'memhub changes') under the same memory id"
    )
    undo.add_argument("change_id", type=int)
    undo.add_argument("--user-id", required=True)


def _search(commands: Commands) -> None:
    search = commands.add_parser(
        "search", help="search a user's memories (through a running server when given one)"
    )
    search.add_argument("query")
    search.add_argument("--user-id", required=True)
    search.add_argument("--limit", type=int, default=10)
    search.add_argument("--as-of", help="only what was true then (ISO 8601)")
    search.add_argument(
        "--max-tokens", type=int, help="cap the results' total length (about 4 characters a token)"
    )
    search.add_argument(
        "--excerpt-tokens",
        type=int,
        help="the longest text one result returns (about 4 characters a token; 0: whole)",
    )
    search.add_argument(
        "--min-score-ratio",
        type=float,
        help="leave out results scoring below this share of the best one (0 to 1)",
    )
    search.add_argument(
        "--rerank",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="rerank with MEMHUB_RERANKER (default: when one is set)",
    )
    search.add_argument(
        "--server", metavar="URL", help="a memhub serve to ask (default MEMHUB_SERVER_URL)"
    )
    search.add_argument("--api-key", help="its API key (default MEMHUB_API_KEY)")
    search.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for it")


def _imports(commands: Commands) -> None:
    imp = commands.add_parser("import", help="add memories from a JSONL file (or Mem0 export)")
    imp.add_argument("file", help="JSONL file, a JSON list of Mem0 memories, or - for stdin")
    imp.add_argument("--user-id", help="user of lines that name no user_id/agent_id/run_id")
    imp.add_argument(
        "--force-user", metavar="ID", help="store every line under this user_id (overrides)"
    )
    imp.add_argument(
        "--infer",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="extract facts with the configured LLM (default); memory items never are",
    )
    imp.add_argument("--batch", type=int, default=2000, help="items per transaction")
    imp.add_argument(
        "--no-wait", dest="wait", action="store_false", help="leave embedding to a worker"
    )
    imp.add_argument("--skip-bad", action="store_true", help="report bad lines and go on")
    imp.add_argument("--restart", action="store_true", help="ignore an earlier import of this file")


def _export_reembed(commands: Commands) -> None:
    exp = commands.add_parser("export", help="write a user's memories as JSONL")
    exp.add_argument("--user-id", required=True)
    exp.add_argument("--include-superseded", action="store_true", help="also outdated facts")
    exp.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    ree = commands.add_parser("reembed", help="re-embed every memory with the configured embedder")
    ree.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    ree.add_argument("--batch", type=int, default=256, help="memories per embedding call")
    ree.add_argument("--force", action="store_true", help="even if the model is unchanged")
    ree.add_argument(
        "--space", help="the embedding space to move (default: MEMHUB_SPACE, else the default)"
    )


def _others(commands: Commands) -> None:
    # mcp and fake-llm parse their own options (memhub.mcp.config, memhub.testing._serve)
    # when they run: importing those modules here would slow every other command's start.
    for name, text in (  # the same order as OWN_OPTIONS
        ("mcp", "run the MCP server (stdio, or --http); memhub mcp --help for options"),
        ("fake-llm", "serve a scripted OpenAI-compatible endpoint (try agents without an LLM)"),
    ):
        commands.add_parser(name, help=text, add_help=False)  # see parse_args
    db = commands.add_parser(
        "db", help="the embedded PostgreSQL: status, start, stop, url (for psql and other tools)"
    )
    actions = db.add_subparsers(dest="db_action", required=True)
    status = actions.add_parser("status", help="is it running, its PID and the processes using it")
    status.add_argument("--json", action="store_true", help="print JSON")
    actions.add_parser("start", help="start it and keep it running until `memhub db stop`")
    actions.add_parser("stop", help="stop it now, even while other memhub processes use it")
    actions.add_parser("url", help="print its connection URL (exit 3 when it is not running)")
