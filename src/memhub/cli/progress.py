"""A one-line progress display on stderr, with rate and time left; no dependency (no tqdm)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

__all__ = ["Progress", "eta"]


def eta(seconds: float) -> str:
    """``0:42`` / ``1:05:09``: hours only when there are some."""
    whole = max(0, round(seconds))
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Redrawn in place on a terminal; elsewhere (a log file) only the final line is written.

    ``start`` is where a resumed run begins: the rate counts only this run's work.
    """

    def __init__(
        self,
        label: str,
        total: int | None,
        stream: TextIO | None = None,
        unit: str = "lines",
        start: int = 0,
    ) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.live = self.stream.isatty()
        self.start = start
        self.done = start
        self.note = ""
        self._started = time.monotonic()
        self._drawn = 0.0

    def line(self) -> str:
        """The text of the progress line as things stand."""
        elapsed = max(time.monotonic() - self._started, 1e-9)
        rate = (self.done - self.start) / elapsed
        count = f"{self.done}" if self.total is None else f"{self.done}/{self.total}"
        parts = [f"{self.label}: {count} {self.unit}"]
        if self.total:
            parts[0] += f" ({100 * self.done // self.total}%)"
        parts.append(f"{rate:.0f}/s")
        if self.total and rate > 0 and self.done < self.total:
            parts.append(f"ETA {eta((self.total - self.done) / rate)}")
        elif self.total is None or self.done >= self.total:
            parts.append(f"in {eta(elapsed)}")
        if self.note:
            parts.append(self.note)
        return ", ".join(parts)

    def update(self, done: int, note: str | None = None) -> None:
        """Record progress; redraws at most ten times a second."""
        self.done = done
        if note is not None:
            self.note = note
        now = time.monotonic()
        if self.live and now - self._drawn >= 0.1:
            self._drawn = now
            self.stream.write("\r\x1b[K" + self.line())
            self.stream.flush()

    def message(self, text: str) -> None:
        """Print a line of its own (an error, say) without garbling the progress line."""
        self.stream.write(("\r\x1b[K" if self.live else "") + text + "\n")
        self._drawn = 0.0
        self.stream.flush()

    def finish(self) -> None:
        """Print the final state on its own line."""
        self.stream.write(("\r\x1b[K" if self.live else "") + self.line() + "\n")
        self.stream.flush()
