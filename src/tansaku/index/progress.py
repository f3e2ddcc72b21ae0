"""The progress protocol between indexing and whoever shows it (the CLI draws a bar or prints
lines), and the arithmetic of a progress report (rate, time left), kept pure so it is tested
without a clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

# Called as progress(done, total, phase) while one collection is worked on; phase is "reading"
# (files examined), "writing" (rows stored), "chunking" (texts cut into chunks) or "embedding"
# (chunks given their vectors).
Progress = Callable[[int, int, str], None]
# Called once per collection with its name; returns that collection's callback, or None.
ProgressFactory = Callable[[str], Progress | None]


@dataclass(frozen=True)
class Pace:
    """How far one phase is: ``done`` of ``total`` after ``elapsed`` seconds."""

    done: int
    total: int
    elapsed: float

    @property
    def rate(self) -> float:
        """Items per second since the phase started (0 before any time has passed)."""
        return self.done / self.elapsed if self.elapsed > 0 else 0.0

    @property
    def seconds_left(self) -> float | None:
        """At the rate so far; None until there is a rate."""
        if self.done >= self.total:
            return 0.0
        return (self.total - self.done) / self.rate if self.rate > 0 else None

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100


def duration(seconds: float | None) -> str:
    """``1h 02m``, ``3m 07s``, ``42s``; ``?`` when unknown."""
    if seconds is None:
        return "?"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"


def progress_line(label: str, pace: Pace) -> str:
    """One line for a log: ``embedding notes: 320/4000 (8%), 12.3/s, elapsed 26s, ETA 4m 59s``."""
    return (
        f"{label}: {pace.done}/{pace.total} ({pace.percent}%), {pace.rate:.1f}/s,"
        f" elapsed {duration(pace.elapsed)}, ETA {duration(pace.seconds_left)}"
    )
