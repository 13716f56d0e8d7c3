"""``memhub import | export | reembed | mcp``: moving memories in, out, and to a new embedder.

Each command is an async function usable from Python (``import_jsonl``, ``export_jsonl``,
``reembed``); :func:`add_subcommands` and :func:`dispatch` plug them into the CLI's parser.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import urlsplit, urlunsplit

from memhub.config import MemhubSettings
from memhub.errors import UsageError
from memhub.memory import AsyncMemory

if TYPE_CHECKING:
    from memhub.store.database import AsyncConn
    from memhub.store.pg_reembed import Embed

__all__ = [
    "ImportRecord",
    "ImportReport",
    "Progress",
    "add_subcommands",
    "dispatch",
    "export_jsonl",
    "import_jsonl",
    "parse_record",
    "reembed",
]

_SOURCES = ("messages", "content", "text", "memory")


# -- progress -------------------------------------------------------------------------------
class Progress:
    """A one-line progress display on stderr: redrawn in place on a terminal, else only
    the final line (logs stay readable). No dependency; ``tqdm`` is not one of memhub's."""

    def __init__(
        self, label: str, total: int | None, stream: TextIO | None = None, unit: str = "lines"
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty()
        self.done = 0
        self.note = ""
        self._started = time.monotonic()
        self._drawn = 0.0

    def _line(self) -> str:
        elapsed = max(time.monotonic() - self._started, 1e-9)
        count = f"{self.done}" if self.total is None else f"{self.done}/{self.total}"
        percent = f" ({100 * self.done // self.total}%)" if self.total else ""
        note = f", {self.note}" if self.note else ""
        return f"{self.label}: {count} {self.unit}{percent}, {self.done / elapsed:.0f}/s{note}"

    def update(self, done: int, note: str | None = None) -> None:
        """Record progress; redraws at most ten times a second."""
        self.done = done
        if note is not None:
            self.note = note
        now = time.monotonic()
        if self.live and now - self._drawn >= 0.1:
            self._drawn = now
            self.stream.write("\r\x1b[K" + self._line())
            self.stream.flush()

    def message(self, text: str) -> None:
        """Print a line of its own (an error, say) without garbling the progress line."""
        self.stream.write(("\r\x1b[K" if self.live else "") + text + "\n")
        self._drawn = 0.0
        self.stream.flush()

    def finish(self) -> None:
        """Print the final state on its own line."""
        self.stream.write(("\r\x1b[K" if self.live else "") + self._line() + "\n")
        self.stream.flush()


# -- import ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImportRecord:
    """One line of an import file, checked and ready for ``AsyncMemory.add``.

    ``infer`` is None when the command's ``--infer`` decides; Mem0-shaped memory items
    (``memory`` key) are facts already and are stored as they are.
    """

    messages: Any
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    metadata: Any
    timestamp: Any
    infer: bool | None
    superseded: bool = False


@dataclass
class ImportReport:
    """What an import did: lines read, added, skipped as superseded, and bad ones."""

    lines: int = 0
    added: int = 0
    superseded: int = 0
    bad: list[tuple[str, str]] = field(default_factory=list)
    scopes: Counter[str] = field(default_factory=Counter)  # "user_id=ada" -> items added
    database: str = ""


def parse_record(
    item: object, default_user_id: str | None = None, force_user_id: str | None = None
) -> ImportRecord:
    """Check one item of an import file.

    Accepted keys: ``user_id``/``agent_id``/``run_id`` (else ``default_user_id``), exactly one
    of ``messages`` (Mem0's forms), ``content`` or ``text`` (with ``role``), or ``memory`` (a
    Mem0 / ``memhub export`` item: stored without inference, its ``created_at`` as timestamp);
    ``metadata``, ``timestamp``. Other keys (``id``, ``hash``, ``score``...) are ignored.
    ``force_user_id`` replaces every item's user id (agent and run ids are kept).

    Raises:
        UsageError: The item cannot be imported; the message says why.
    """
    if not isinstance(item, dict):
        raise UsageError(f"expected a JSON object, got {type(item).__name__}")
    sources = [key for key in _SOURCES if item.get(key) is not None]
    if len(sources) != 1:
        found = f" (found {', '.join(sources)})" if sources else ""
        raise UsageError(f"needs exactly one of {', '.join(_SOURCES)}{found}")
    key = sources[0]
    role = item.get("role") or "user"
    messages: Any = item[key]
    if key != "messages":
        messages = {"role": role, "content": item[key]}
    scope = {name: item.get(name) for name in ("user_id", "agent_id", "run_id")}
    if force_user_id is not None:
        scope["user_id"] = force_user_id
    if all(value is None for value in scope.values()):
        if default_user_id is None:
            raise UsageError("names no user_id, agent_id or run_id (pass --user-id)")
        scope["user_id"] = default_user_id
    is_memory = key == "memory"
    timestamp = item.get("timestamp")
    if timestamp is None and is_memory:
        timestamp = item.get("created_at")
    return ImportRecord(
        messages=messages,
        user_id=scope["user_id"],
        agent_id=scope["agent_id"],
        run_id=scope["run_id"],
        metadata=item.get("metadata"),
        timestamp=timestamp,
        infer=False if is_memory else None,
        superseded=is_memory and item.get("valid_to") is not None,
    )


@dataclass(frozen=True)
class _Unreadable:
    reason: str


def _read_items(path: str | Path) -> tuple[int | None, Iterator[tuple[str, object]]]:
    """The items of a JSONL file, a JSON list, or a ``{"results": [...]}`` document."""
    if str(path) == "-":
        return None, _jsonl_items(sys.stdin)
    with open(path, encoding="utf-8") as probe:
        first = next((line for line in probe if line.strip()), "")
    whole: object = None
    if first.lstrip().startswith(("[", "{")) and not _is_json(first):
        # A pretty-printed document (Mem0's get_all / export dump), not one item per line.
        try:
            whole = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            whole = None
    elif first.lstrip().startswith("["):
        whole = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(whole, dict) and isinstance(whole.get("results"), list):
        whole = whole["results"]
    if isinstance(whole, list):
        items = whole
        return len(items), ((f"item {n}", item) for n, item in enumerate(items, start=1))
    with open(path, encoding="utf-8") as counting:
        total = sum(1 for line in counting if line.strip())
    return total, _file_items(path)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def _file_items(path: str | Path) -> Iterator[tuple[str, object]]:
    with open(path, encoding="utf-8") as stream:
        yield from _jsonl_items(stream)


def _jsonl_items(stream: TextIO) -> Iterator[tuple[str, object]]:
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            continue
        try:
            yield f"line {number}", json.loads(line)
        except json.JSONDecodeError as exc:
            yield f"line {number}", _Unreadable(f"not valid JSON: {exc.msg} (column {exc.colno})")


async def import_jsonl(
    settings: MemhubSettings,
    path: str | Path,
    *,
    user_id: str | None = None,
    infer: bool = True,
    batch: int = 500,
    wait: bool = True,
    stream: TextIO | None = None,
    force_user_id: str | None = None,
) -> ImportReport:
    """Add every item of ``path`` through ``AsyncMemory.add`` (durable, queued).

    Bad items are reported on ``stream`` with their line (or item) number and skipped.

    Args:
        settings: Database and embedder settings.
        path: A JSONL file (see :func:`parse_record`), a JSON list of Mem0 memories, or "-".
        user_id: The user of items that name no scope.
        infer: Let the LLM (if configured) extract facts from messages; memory items never.
        batch: With ``wait``, let ingestion catch up after every ``batch`` items (0: only at
            the end), so the queue stays short and progress means "searchable".
        wait: Return once everything is ingested; False leaves the jobs queued for
            ``memhub worker`` (or the next memhub process).
        stream: Where progress and bad items are written (default stderr).
        force_user_id: Store everything under this user, whatever the file says.
    """
    total, items = _read_items(path)
    progress = Progress("import", total, stream)
    report = ImportReport(database=database_label(settings))
    run_settings = settings if wait else settings.model_copy(update={"worker": "off"})
    async with AsyncMemory(settings=run_settings) as memory:
        since_drain = 0
        for where, item in items:
            report.lines += 1
            try:
                if isinstance(item, _Unreadable):
                    raise UsageError(item.reason)
                record = parse_record(item, user_id, force_user_id)
                if record.superseded:
                    report.superseded += 1
                else:
                    await _add(memory, record, infer)
                    report.added += 1
                    report.scopes[_scope_label(record)] += 1
                    since_drain += 1
            except UsageError as exc:
                report.bad.append((where, str(exc)))
                progress.message(f"memhub import: {where}: {exc}")
            progress.update(report.lines, f"{len(report.bad)} bad" if report.bad else None)
            if wait and batch > 0 and since_drain >= batch:
                since_drain = 0
                await memory.wait_idle()
        progress.finish()
        if wait:
            await _wait_ingested(memory, settings, stream)
    return report


def database_label(settings: MemhubSettings) -> str:
    """Where the data lives, for people: the URL without its password, or the embedded dir."""
    if not settings.database_url:
        return f"embedded PostgreSQL in {settings.data_dir}"
    parts = urlsplit(settings.database_url)
    if parts.password:
        host = parts.netloc.rsplit("@", 1)[-1]
        parts = parts._replace(netloc=f"{parts.username}:***@{host}")
    return urlunsplit(parts)


def _scope_label(record: ImportRecord) -> str:
    ids = (("user_id", record.user_id), ("agent_id", record.agent_id), ("run_id", record.run_id))
    return " ".join(f"{name}={value}" for name, value in ids if value is not None)


async def _add(memory: AsyncMemory, record: ImportRecord, infer: bool) -> None:
    await memory.add(
        record.messages,
        user_id=record.user_id,
        agent_id=record.agent_id,
        run_id=record.run_id,
        metadata=record.metadata,
        infer=infer if record.infer is None else record.infer,
        timestamp=record.timestamp,
    )


async def _wait_ingested(
    memory: AsyncMemory, settings: MemhubSettings, stream: TextIO | None
) -> None:
    from memhub.store.postgres import PostgresStore

    store = await PostgresStore.open(settings)
    task = asyncio.ensure_future(memory.wait_idle())
    try:
        first = await store.pending_jobs()
        progress = Progress("ingest", first, stream, unit="jobs")
        while not task.done():
            progress.update(max(0, first - await store.pending_jobs()))
            await asyncio.wait({task}, timeout=0.5)
        await task
        progress.update(first)
        progress.finish()
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await store.aclose()


# -- export ---------------------------------------------------------------------------------
async def export_jsonl(
    settings: MemhubSettings,
    user_id: str,
    out: TextIO,
    *,
    include_superseded: bool = False,
    page_size: int = 1000,
) -> int:
    """Write the user's memories to ``out`` as JSONL of Mem0-shaped items, newest first.

    ``memhub import`` reads the file back (text, metadata and ``created_at`` kept; superseded
    items are skipped there). Returns how many memories were written.
    """
    written = 0
    async with AsyncMemory(settings=settings.model_copy(update={"worker": "off"})) as memory:
        filters: dict[str, Any] | None = None
        while True:
            found = await memory.get_all(
                user_id=user_id,
                filters=filters,
                limit=page_size,
                include_superseded=include_superseded,
            )
            page = found["results"]
            for item in page:
                out.write(json.dumps(item, ensure_ascii=False) + "\n")
            written += len(page)
            if len(page) < page_size:
                return written
            # Keyset pagination in get_all's order (created_at DESC, id ASC).
            at = datetime.fromisoformat(page[-1]["created_at"])
            last = uuid.UUID(page[-1]["id"])
            filters = {"OR": [{"created_at": {"lt": at}}, {"created_at": at, "id": {"gt": last}}]}


# -- reembed --------------------------------------------------------------------------------
async def reembed(
    settings: MemhubSettings,
    *,
    batch: int = 256,
    force: bool = False,
    confirm: Callable[[str], bool] | None = None,
    stream: TextIO | None = None,
) -> int:
    """Re-embed every memory with the configured embedder and record it as the database's.

    Stop servers and workers that use the old embedder first: after the swap they are refused
    (or, with an equal dimension, would write vectors of the wrong model). An interrupted run
    resumes. Returns how many memories were embedded.

    Args:
        settings: The database, and the embedder to move to.
        batch: Memories per embedding call and update.
        force: Re-embed even when the recorded model already is the configured one.
        confirm: Asked once with a description of the change; False cancels (UsageError).
        stream: Where progress goes (default stderr).
    """
    from memhub.memory.shared import embedder_from_settings
    from memhub.store import pg_reembed
    from memhub.store.database import acquire_database, release_database
    from memhub.store.errors import translate_errors
    from memhub.store.pg_memories import ensure_embedding_space

    out = stream if stream is not None else sys.stderr
    embedder = embedder_from_settings(settings)
    database = await acquire_database(settings)
    try:
        dimension = int((await embedder.embed(["dimension probe"])).shape[1])
        model = embedder.model_name
        async with database.connection() as conn:
            with translate_errors("re-embedding memories"):
                old = await pg_reembed.recorded_space(conn)
                if old.model is None:
                    await ensure_embedding_space(conn, model, dimension)
                    out.write(f"no embeddings recorded yet; the database now uses {model}\n")
                    return 0
                if old == pg_reembed.EmbeddingSpace(model, dimension) and not force:
                    out.write(f"memories are already embedded with {model} ({dimension})\n")
                    return 0
                cur = await conn.execute("SELECT count(*) FROM memories")
                row = await cur.fetchone()
                question = (
                    f"re-embed {row[0] if row else 0} memories from {old.model} "
                    f"({old.dimension} dimensions) to {model} ({dimension} dimensions)?"
                )
                if confirm is not None and not confirm(question):
                    raise UsageError("reembed cancelled; nothing was changed")
                if await pg_reembed.prepare(conn, model, dimension):
                    out.write("resuming an interrupted re-embedding\n")
                done = await _fill(conn, embedder.embed, batch, Progress("reembed", None, out))
                out.write("building the vector index...\n")
                await pg_reembed.build_index(conn)
                done += await pg_reembed.swap(conn, model, dimension, embedder.embed)
        out.write(f"re-embedded {done} memories; the database now uses {model} ({dimension})\n")
        return done
    finally:
        await release_database(database)
        await embedder.aclose()


async def _fill(conn: AsyncConn, embed: Embed, batch: int, progress: Progress) -> int:
    from memhub.store import pg_reembed

    progress.total = await pg_reembed.count_pending(conn)
    done = await pg_reembed.catch_up(conn, embed, batch, progress.update)
    progress.finish()
    return done


# -- command line ---------------------------------------------------------------------------
def add_subcommands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``import``, ``export``, ``reembed`` and ``mcp`` to the CLI's subparsers."""
    from memhub.mcp.config import add_mcp_arguments

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
    imp.add_argument("--batch", type=int, default=500, help="let ingestion catch up every N")
    imp.add_argument(
        "--no-wait", dest="wait", action="store_false", help="leave jobs for `memhub worker`"
    )
    exp = commands.add_parser("export", help="write a user's memories as JSONL")
    exp.add_argument("--user-id", required=True)
    exp.add_argument("--include-superseded", action="store_true", help="also outdated facts")
    exp.add_argument("-o", "--output", default="-", help="file to write (default: stdout)")
    ree = commands.add_parser("reembed", help="re-embed every memory with the configured embedder")
    ree.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    ree.add_argument("--batch", type=int, default=256, help="memories per embedding call")
    ree.add_argument("--force", action="store_true", help="even if the model is unchanged")
    mcp = commands.add_parser("mcp", help="run the MCP server (stdio, or --http)")
    add_mcp_arguments(mcp)


def dispatch(args: argparse.Namespace, settings: MemhubSettings) -> int | None:
    """Run the command if it is one of :func:`add_subcommands`'s; None otherwise."""
    if args.command == "import":
        if args.batch < 0:
            raise UsageError("--batch must be 0 or more")
        report = asyncio.run(
            import_jsonl(
                settings,
                args.file,
                user_id=args.user_id,
                infer=args.infer,
                batch=args.batch,
                wait=args.wait,
                force_user_id=args.force_user,
            )
        )
        return _summarise(report)
    if args.command == "export":
        return _export_command(settings, args)
    if args.command == "reembed":
        asyncio.run(
            reembed(settings, batch=max(1, args.batch), force=args.force, confirm=_ask(args.yes))
        )
        return 0
    if args.command == "mcp":
        from memhub.mcp import config_from_args, run

        return run(settings, config_from_args(args))
    return None


def _summarise(report: ImportReport) -> int:
    parts = [f"imported {report.added} of {report.lines} items"]
    if report.superseded:
        parts.append(f"skipped {report.superseded} superseded")
    if report.bad:
        where = ", ".join(w for w, _ in report.bad[:10]) + ("..." if len(report.bad) > 10 else "")
        parts.append(f"{len(report.bad)} bad ({where})")
    print("; ".join(parts), file=sys.stderr)
    if report.scopes:
        shown = sorted(report.scopes.items(), key=lambda kv: (-kv[1], kv[0]))
        into = ", ".join(f"{label} ({n})" for label, n in shown[:10])
        more = f" and {len(shown) - 10} more" if len(shown) > 10 else ""
        print(f"into {into}{more}; database: {report.database}", file=sys.stderr)
    return 1 if report.bad else 0


def _export_command(settings: MemhubSettings, args: argparse.Namespace) -> int:
    if args.output == "-":
        count = asyncio.run(
            export_jsonl(
                settings, args.user_id, sys.stdout, include_superseded=args.include_superseded
            )
        )
    else:
        # Written beside the target and renamed, so a failed export leaves no partial file.
        target = Path(args.output)
        partial = target.with_name(target.name + ".partial")
        try:
            with open(partial, "w", encoding="utf-8") as out:
                count = asyncio.run(
                    export_jsonl(
                        settings, args.user_id, out, include_superseded=args.include_superseded
                    )
                )
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
        os.replace(partial, target)
    print(f"exported {count} memories of {args.user_id}", file=sys.stderr)
    return 0


def _ask(assume_yes: bool) -> Callable[[str], bool] | None:
    if assume_yes:
        return None

    def ask(question: str) -> bool:
        if not sys.stdin.isatty():
            raise UsageError(f"{question} Pass --yes to confirm when not on a terminal")
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")

    return ask
