"""The indexer's side of front-matter fields: storing what ``plan`` parsed, and the update
summary's warnings for front matter that could not be read (never a failed update)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..fields.frontmatter import FrontMatter
from ..fields.lookup import rows
from ..store.backend import fields as store
from ..types import Notice

FRONT_MATTER_INVALID = "FRONT_MATTER_INVALID"
MAX_LISTED = 20  # broken files named one by one in a summary; the rest are counted


def store_fields(conn: Any, collection: str, parsed: Mapping[str, FrontMatter]) -> None:
    """The fields of the texts read, by content hash, onto the documents now holding them."""
    if parsed:
        store.put_fields(
            conn, collection, {content_hash: rows(front) for content_hash, front in parsed.items()}
        )


def field_warnings(broken: Sequence[tuple[str, FrontMatter]]) -> list[Notice]:
    notices = [
        Notice(
            FRONT_MATTER_INVALID, f"{path}:{front.line}: {front.problem}; the file is indexed without fields"
        )
        for path, front in sorted(broken, key=lambda pair: pair[0])[:MAX_LISTED]
    ]
    if len(broken) > MAX_LISTED:
        more = len(broken) - MAX_LISTED
        notices.append(Notice(FRONT_MATTER_INVALID, f"and {more} more files whose front matter was not read"))
    return notices
