"""``memhub db status | start | stop | url``: the embedded PostgreSQL's lifecycle by hand."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memhub.config import MemhubSettings
from memhub.errors import UsageError

__all__ = ["add_db_command", "run_db"]

NOT_RUNNING = 3  # pg_ctl's exit status for "no server running"


def add_db_command(commands: Any) -> None:
    """Register ``memhub db`` on the top-level sub-parser collection."""
    db = commands.add_parser(
        "db", help="the embedded PostgreSQL: status, start, stop, url (for psql and other tools)"
    )
    actions = db.add_subparsers(dest="db_action", required=True)
    status = actions.add_parser("status", help="is it running, its PID and the processes using it")
    status.add_argument("--json", action="store_true", help="print JSON")
    actions.add_parser("start", help="start it and keep it running until `memhub db stop`")
    actions.add_parser("stop", help="stop it now, even while other memhub processes use it")
    actions.add_parser("url", help="print its connection URL (exit 3 when it is not running)")


def run_db(args: argparse.Namespace, settings: MemhubSettings) -> int:
    """Run one ``memhub db`` action; returns the exit status."""
    from memhub.store.embedded import (
        embedded_database_url,
        embedded_status,
        pin_embedded_server,
        stop_embedded_server,
    )

    if settings.database_url is not None:
        raise UsageError(
            "memhub db manages the embedded server; MEMHUB_DATABASE_URL (or --database-url) "
            "points at another one"
        )
    action = args.db_action
    if action == "start":
        pin_embedded_server(settings.data_dir, True)
        embedded_database_url(settings.data_dir, settings.database_name)
        action = "status"
    elif action == "stop":
        pin_embedded_server(settings.data_dir, False)
        stop_embedded_server(settings.data_dir, force=True)
        action = "status"
    status = embedded_status(settings.data_dir, settings.database_name)
    if action == "url":
        if status.url is None:
            print(f"memhub: no PostgreSQL running in {status.pgdata}", file=sys.stderr)
            return NOT_RUNNING
        print(status.url)
        return 0
    if getattr(args, "json", False):
        print(json.dumps({**vars(status), "pgdata": str(status.pgdata)}))
    elif status.running:
        print(f"running (pid {status.pid}) in {status.pgdata}")
        print(f"url: {status.url}")
        print(f"used by: {', '.join(map(str, status.processes)) or 'no memhub process'}")
        if status.pinned:
            print("kept running by `memhub db start` until `memhub db stop`")
    else:
        print(f"stopped ({status.pgdata})")
    return 0 if status.running or args.db_action == "stop" else NOT_RUNNING
