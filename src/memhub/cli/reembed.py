"""``memhub reembed``: confirmation and progress around :func:`memhub.memory.reembed.reembed`."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import TextIO

from memhub.cli.progress import Progress
from memhub.config import MemhubSettings
from memhub.errors import UsageError
from memhub.memory.reembed import ReembedProgress, reembed

__all__ = ["LineProgress", "run_reembed"]


class LineProgress(ReembedProgress):
    """Reports a re-embedding on ``stream``: its lines, and a progress line for the pass."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.bar = Progress("reembed", None, self.stream, unit="memories")

    def say(self, text: str) -> None:
        self.stream.write(text + "\n")

    def start(self, total: int) -> None:
        self.bar = Progress("reembed", total, self.stream, unit="memories")

    def update(self, done: int) -> None:
        self.bar.update(done)

    def finish(self) -> None:
        self.bar.finish()


def run_reembed(args: argparse.Namespace, settings: MemhubSettings) -> int:
    """``memhub reembed``: asks on a terminal unless ``--yes``; ``--space`` names the
    embedding space to move (docs/embedders.md)."""
    if getattr(args, "space", None):
        settings = MemhubSettings.model_validate(settings.model_dump() | {"space": args.space})
    asyncio.run(
        reembed(
            settings,
            batch=max(1, args.batch),
            force=args.force,
            confirm=_ask(args.yes),
            progress=LineProgress(),
        )
    )
    return 0


def _ask(assume_yes: bool) -> Callable[[str], bool] | None:
    if assume_yes:
        return None

    def ask(question: str) -> bool:
        if not sys.stdin.isatty():
            raise UsageError(f"{question} Pass --yes to confirm when not on a terminal")
        return input(f"{question} [y/N] ").strip().lower() in ("y", "yes")

    return ask
