"""The progress protocol between indexing and whoever shows it (the CLI draws a bar)."""

from __future__ import annotations

from collections.abc import Callable

# Called as progress(done, total, phase) while one collection is worked on; phase is "reading"
# (files examined), "writing" (rows stored) or "chunking" (texts cut into chunks).
Progress = Callable[[int, int, str], None]
# Called once per collection with its name; returns that collection's callback, or None.
ProgressFactory = Callable[[str], Progress | None]
