"""What every command shares: the index option, output format flags, writing and error output."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, TextIO

FORMATS = ("cli", "json", "csv", "md", "xml", "files")


def add_index_option(parser: argparse.ArgumentParser, *, top_level: bool = False) -> None:
    # Accepted before and after the command name; the sub-parser must not reset the top-level value.
    parser.add_argument(
        "--index",
        metavar="NAME",
        default=None if top_level else argparse.SUPPRESS,
        help="use a named index (its own config NAME.toml and index NAME.sqlite); default: index",
    )


def add_format_options(parser: argparse.ArgumentParser, formats: tuple[str, ...] = FORMATS) -> None:
    group = parser.add_argument_group("output")
    group.add_argument("--format", choices=formats, default=None, help="output format (default: cli)")
    for name in formats[1:]:
        group.add_argument(
            f"--{name}", dest="format", action="store_const", const=name, help=f"same as --format {name}"
        )


def api_for(args: argparse.Namespace) -> Any:
    from ..api import Tansaku

    return Tansaku(getattr(args, "index", None), keep_vectors=False)  # one command, then exit


def _wants_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return stream.isatty()


@dataclass
class Output:
    fmt: str
    color: bool
    stdout: TextIO
    stderr: TextIO

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> Output:
        fmt = getattr(args, "format", None) or "cli"
        return cls(fmt=fmt, color=_wants_color(sys.stdout), stdout=sys.stdout, stderr=sys.stderr)

    def render(self, result: object, **options: bool) -> None:
        from ..render import RenderOptions, render

        text = render(result, self.fmt, RenderOptions(color=self.color, **options))
        self.stdout.write(text)
        self.stdout.flush()

    def error(self, exc: Any) -> None:
        from ..render import render_error

        self.stderr.write(render_error(exc, self.fmt))
        self.stderr.flush()

    def error_text(self, message: str) -> None:
        self.stderr.write(f"error: {message}\n")

    def internal_error(self, exc: BaseException) -> None:
        message = f"internal error: {type(exc).__name__}: {exc}"
        if self.fmt == "json":
            payload = {
                "error": {
                    "code": "INTERNAL",
                    "message": message,
                    "hint": "set TANSAKU_DEBUG=1 for a traceback",
                }
            }
            self.stderr.write(json.dumps(payload, ensure_ascii=False) + "\n")
        else:
            self.stderr.write(f"{message}\nhint: set TANSAKU_DEBUG=1 for a traceback, and please report it\n")


class DelayedProgress:
    """A progress bar that appears only on a terminal and only once a run has lasted a second."""

    DELAY_S = 1.0

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._bar: Any = None
        self._task: Any = None
        self._label = ""
        self._started = 0.0

    def __call__(self, name: str) -> Any:
        if not self.enabled:
            return None
        self._label = name
        self._started = time.monotonic()
        self._task = None
        return self._advance

    def _advance(self, done: int, total: int, phase: str = "indexing") -> None:
        if self._bar is None:
            if time.monotonic() - self._started < self.DELAY_S:
                return
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            columns = (
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[rate]}"),
                TimeElapsedColumn(),
                TextColumn("ETA"),
                TimeRemainingColumn(),
            )
            self._bar = Progress(*columns, console=Console(stderr=True), transient=True)
            self._bar.start()
        description = f"{phase} {self._label}"
        if self._task is None:
            self._task = self._bar.add_task(description, total=total, rate="")
        speed = self._bar.tasks[-1].speed
        rate = f"{speed:.1f}/s" if speed else ""
        self._bar.update(self._task, completed=done, total=total, description=description, rate=rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
