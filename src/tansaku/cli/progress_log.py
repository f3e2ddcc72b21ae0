"""Progress as plain lines, for a run whose stderr is not a terminal (a log file, a pipe, a CI job).

A bar redrawn in place means nothing there: a log would get either nothing for the length of the
run or every redraw. Instead one line every few seconds says how far it is (done, total, rate,
time left); a run shorter than that prints none, so quick commands stay quiet.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from ..errors import UsageError

if TYPE_CHECKING:  # index.progress is imported by a run that shows progress, not at start-up
    from ..index.progress import Progress

INTERVAL_ENV = "TANSAKU_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 5.0


def progress_interval() -> float:
    """Seconds between lines: ``TANSAKU_PROGRESS_INTERVAL``, else 5."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise UsageError(
            f"{INTERVAL_ENV}={raw!r} is not a number of seconds above 0",
            hint=f"for example {INTERVAL_ENV}=30, or unset it for a line every {DEFAULT_INTERVAL_S:g} s",
        )
    return value


class LineProgress:
    """A ProgressFactory that writes a line to ``stream`` at most every ``interval`` seconds: the
    first once a collection's work has lasted that long, then one per interval, and a last one
    when a collection that printed any is done."""

    def __init__(self, stream: TextIO, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._stream, self._interval, self._clock = stream, interval, clock
        self._label = ""
        self._started = self._last = 0.0
        self._printed = False

    def __call__(self, name: str) -> Progress:
        self._label = name
        self._started = self._last = self._clock()
        self._printed = False
        return self._advance

    def _advance(self, done: int, total: int, phase: str = "indexing") -> None:
        now = self._clock()
        finished = done >= total
        if now - self._last < self._interval and not (finished and self._printed):
            return
        from ..index.progress import Pace, progress_line

        pace = Pace(done, total, now - self._started)
        self._stream.write(progress_line(f"{phase} {self._label}", pace) + "\n")
        self._stream.flush()
        self._last, self._printed = now, not finished

    def close(self) -> None:
        """Nothing to take down (the factory protocol's counterpart of a bar's close)."""
