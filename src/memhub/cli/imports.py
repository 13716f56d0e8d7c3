"""``memhub import``: a file's items in batched transactions, resumable, with progress."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path
from typing import TextIO
from urllib.parse import urlsplit, urlunsplit

from memhub.cli.import_file import parse_record, read_items
from memhub.cli.progress import Progress
from memhub.config import MemhubSettings
from memhub.errors import UsageError
from memhub.memory.importer import CheckedItem, Importer, source_identity
from memhub.store.records import ImportCursor

__all__ = ["ImportReport", "database_label", "import_jsonl", "run_import"]


@dataclass
class ImportReport:
    """What an import did: items read, added, skipped as superseded, and bad ones.

    ``resumed_at`` is where a resumed import started (items done by earlier runs);
    ``stopped_at`` names the first item of the batch a bad item stopped (nothing of it
    was written).
    """

    lines: int = 0
    added: int = 0
    superseded: int = 0
    bad: list[tuple[str, str]] = field(default_factory=list)
    scopes: Counter[str] = field(default_factory=Counter)  # "user_id=ada" -> items added
    database: str = ""
    resumed_at: int = 0
    stopped_at: str | None = None


@dataclass
class _Options:
    user_id: str | None
    force_user_id: str | None
    skip_bad: bool
    batch: int


async def import_jsonl(
    settings: MemhubSettings,
    path: str | Path,
    *,
    user_id: str | None = None,
    infer: bool = True,
    batch: int = 2000,
    wait: bool = True,
    stream: TextIO | None = None,
    force_user_id: str | None = None,
    skip_bad: bool = False,
    restart: bool = False,
) -> ImportReport:
    """Import every item of ``path``, ``batch`` items per transaction.

    Each committed batch is keyword-searchable at once and queued for the worker to embed;
    the input's cursor commits with it, so running the same import again after a kill
    continues after the last committed batch. A bad item stops the import before its batch
    (nothing of that batch is written) unless ``skip_bad``: then it is reported and skipped.

    Args:
        settings: Database and embedder settings.
        path: A JSONL file (see :func:`~memhub.cli.import_file.parse_record`), a JSON list
            of Mem0 memories, or "-" for stdin (which cannot resume).
        user_id: The user of items that name no scope.
        infer: Let the LLM (if configured) extract facts from messages; memory items never.
        batch: Items per transaction.
        wait: Once written, run the embedding here until the queue is empty; False leaves
            it to ``memhub worker`` / ``memhub serve``.
        stream: Where progress and bad items are written (default stderr).
        force_user_id: Store everything under this user, whatever the file says.
        skip_bad: Report bad items and go on instead of stopping.
        restart: Forget the cursor of an earlier import of this file and start over.
    """
    total, items = read_items(path)
    report = ImportReport(database=database_label(settings))
    options = _Options(user_id, force_user_id, skip_bad, max(1, batch))
    async with Importer(settings, infer) as importer:
        cursor = await _resume(importer, path, restart, report)
        done = _Digest()
        if cursor is not None and cursor.position:
            done.skip(items, cursor)
            if total is not None and cursor.position >= total:
                message = f"all {total} items of {path} were imported already (--restart: again)"
                print(f"memhub import: {message}", file=stream or sys.stderr)
                return report
        progress = Progress("import", total, stream, unit="items", start=report.resumed_at)
        await _write_all(importer, items, cursor, done, options, report, progress)
        progress.finish()
        if wait and report.stopped_at is None:
            embedding = Progress("embed", await importer.pending_jobs(), stream, unit="jobs")
            await importer.ingest(embedding.update)
            embedding.finish()
    return report


class _Digest:
    """sha256 of the items done so far, in a form independent of the file's whitespace."""

    def __init__(self) -> None:
        self.hash = hashlib.sha256()

    def feed(self, item: object) -> None:
        text = json.dumps(item, sort_keys=True, ensure_ascii=False, default=repr)
        self.hash.update(text.encode() + b"\n")

    def hexdigest(self) -> str:
        return self.hash.hexdigest()

    def skip(self, items: Iterator[tuple[str, object]], cursor: ImportCursor) -> None:
        """Consume the items an earlier run did, checking they are the ones it did."""
        for _, item in islice(items, cursor.position):
            self.feed(item)
        if self.hexdigest() != cursor.digest:
            raise UsageError(
                f"{cursor.path} changed within its first {cursor.position} items since they"
                " were imported; --restart imports the whole file again"
            )


async def _resume(
    importer: Importer, path: str | Path, restart: bool, report: ImportReport
) -> ImportCursor | None:
    if str(path) == "-":
        return None
    source = source_identity(path)
    if restart:
        await importer.forget(source)
        return source
    found = await importer.cursor(source)
    if found is None:
        return source
    report.resumed_at = found.position
    return replace(found, finished=False)


async def _write_all(
    importer: Importer,
    items: Iterator[tuple[str, object]],
    cursor: ImportCursor | None,
    done: _Digest,
    options: _Options,
    report: ImportReport,
    progress: Progress,
) -> None:
    position = report.resumed_at
    while chunk := list(islice(items, options.batch)):
        checked = _check_chunk(importer, chunk, options, report, progress)
        if checked is None:
            report.stopped_at = chunk[0][0]
            progress.message(
                f"memhub import: nothing from {chunk[0][0]} on was written; fix the file and"
                " run the same command again to continue from there"
            )
            return
        for _, item in chunk:
            done.feed(item)
        position += len(chunk)
        report.lines += len(chunk)
        moved = None if cursor is None else replace(cursor, position=position)
        await importer.write(checked, moved and replace(moved, digest=done.hexdigest()))
        progress.update(position, f"{len(report.bad)} bad" if report.bad else None)
    if cursor is not None:  # mark it complete (a rerun says so instead of starting over)
        end = replace(cursor, position=position, digest=done.hexdigest(), finished=True)
        await importer.write([], end)


def _check_chunk(
    importer: Importer,
    chunk: list[tuple[str, object]],
    options: _Options,
    report: ImportReport,
    progress: Progress,
) -> list[CheckedItem] | None:
    """The chunk's good items; None when a bad one stops the import (all its bad ones told)."""
    checked: list[CheckedItem] = []
    added: Counter[str] = Counter()
    superseded = 0
    bad = []
    for where, item in chunk:
        try:
            record = parse_record(item, options.user_id, options.force_user_id)
            if record.superseded:
                superseded += 1
                continue
            checked.append(importer.check(record))
            added[_scope_label(checked[-1])] += 1
        except UsageError as exc:
            bad.append((where, str(exc)))
            progress.message(f"memhub import: {where}: {exc}")
    report.bad += bad
    if bad and not options.skip_bad:
        return None
    report.added += len(checked)
    report.superseded += superseded
    report.scopes.update(added)
    return checked


def database_label(settings: MemhubSettings) -> str:
    """Where the data lives, for people: the URL without its password, or the embedded dir."""
    if not settings.database_url:
        return f"embedded PostgreSQL in {settings.data_dir}"
    parts = urlsplit(settings.database_url)
    if parts.password:
        host = parts.netloc.rsplit("@", 1)[-1]
        parts = parts._replace(netloc=f"{parts.username}:***@{host}")
    return urlunsplit(parts)


def _scope_label(item: CheckedItem) -> str:
    return " ".join(f"{name}={value}" for name, value in item.scope.as_dict().items())


def run_import(args: argparse.Namespace, settings: MemhubSettings) -> int:
    """``memhub import``: run it, print the summary; exit 1 if any item was bad."""
    if args.batch < 1:
        raise UsageError("--batch must be 1 or more")
    report = asyncio.run(
        import_jsonl(
            settings,
            args.file,
            user_id=args.user_id,
            infer=args.infer,
            batch=args.batch,
            wait=args.wait,
            force_user_id=args.force_user,
            skip_bad=args.skip_bad,
            restart=args.restart,
        )
    )
    return _summarise(report)


def _summarise(report: ImportReport) -> int:
    parts = [f"imported {report.added} of {report.lines} items"]
    if report.resumed_at:
        parts[0] += f" (resumed after {report.resumed_at} done before)"
    if report.superseded:
        parts.append(f"skipped {report.superseded} superseded")
    if report.bad:
        where = ", ".join(w for w, _ in report.bad[:10]) + ("..." if len(report.bad) > 10 else "")
        parts.append(f"{len(report.bad)} bad ({where})")
    if report.stopped_at:
        parts.append(f"stopped at {report.stopped_at}")
    print("; ".join(parts), file=sys.stderr)
    if report.scopes:
        shown = sorted(report.scopes.items(), key=lambda kv: (-kv[1], kv[0]))
        into = ", ".join(f"{label} ({n})" for label, n in shown[:10])
        more = f" and {len(shown) - 10} more" if len(shown) > 10 else ""
        print(f"into {into}{more}; database: {report.database}", file=sys.stderr)
    return 1 if report.bad else 0
