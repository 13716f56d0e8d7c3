"""``memhub db status | start | stop | url``: the embedded PostgreSQL's lifecycle by hand."""

from __future__ import annotations

import argparse
import json
import sys

from memhub.config import MemhubSettings
from memhub.errors import UsageError

__all__ = ["run_db"]

NOT_RUNNING = 3  # pg_ctl's exit status for "no server running"


def run_db(args: argparse.Namespace, settings: MemhubSettings) -> int:
    """Run one ``memhub db`` action; returns the exit status."""
    from memhub.store.postgres.embedded import (
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
