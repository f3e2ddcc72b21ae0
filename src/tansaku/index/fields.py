"""The indexer's side of front-matter fields: each Markdown file's front matter is read while
its text is in memory (as it is chunked), its fields written in batches, and the update
summary warns of front matter that could not be read (never a failed update)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..fields import frontmatter
from ..fields.lookup import rows
from ..store.backend import fields as store
from ..types import Notice

FRONT_MATTER_INVALID = "FRONT_MATTER_INVALID"
MAX_LISTED = 20  # broken files named one by one in a summary; the rest are counted
# Rows held before they are written: memory stays bounded however many files an update reads
# (the parsed front matter of 5,000 notes of 9 values each took 13 MB when kept until the end).
BATCH_ROWS = 5000


class FieldWriter:
    def __init__(self, broken: list[tuple[str, int | None, str]]) -> None:
        self.broken = broken  # (path, line, problem), the update summary's warnings
        self._rows: list[tuple[Any, ...]] = []

    def add(self, conn: Any, doc_id: int, rel_path: str, text: str) -> None:
        """The fields of a document just inserted (its id is new: nothing to replace)."""
        if not frontmatter.wanted(rel_path):
            return
        front = frontmatter.parse(text)
        if front.problem is not None:
            self.broken.append((rel_path, front.line, front.problem))
        self._rows += [(doc_id, *row) for row in rows(front)]
        if len(self._rows) >= BATCH_ROWS:
            self.flush(conn)

    def flush(self, conn: Any) -> None:
        store.add_fields(conn, self._rows)
        self._rows = []


def field_warnings(broken: Sequence[tuple[str, int | None, str]]) -> list[Notice]:
    notices = [
        Notice(FRONT_MATTER_INVALID, f"{path}:{line}: {problem}; the file is indexed without fields")
        for path, line, problem in sorted(broken)[:MAX_LISTED]
    ]
    if len(broken) > MAX_LISTED:
        more = len(broken) - MAX_LISTED
        notices.append(Notice(FRONT_MATTER_INVALID, f"and {more} more files whose front matter was not read"))
    return notices
