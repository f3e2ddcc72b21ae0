"""The progress protocol between indexing and whoever shows it (the CLI draws a bar)."""

from __future__ import annotations

from collections.abc import Callable

# Called as progress(done, total) while one collection's files are examined.
Progress = Callable[[int, int], None]
# Called once per collection with its name; returns that collection's callback, or None.
ProgressFactory = Callable[[str], Progress | None]
