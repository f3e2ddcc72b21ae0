"""``get REF:page=N``: the lines of one page of a PDF, from the page starts its extraction recorded."""

from __future__ import annotations

import re
from typing import Any

from ..errors import PageOutOfRange, UsageError
from ..paths import virtual_path
from ..store import documents as store
from ..store.backend import extractions

_PAGE_SUFFIX = re.compile(r"^(?P<ref>.+?):page=(?P<page>[0-9]+)$")


def split_page(ref: str) -> tuple[str, int | None]:
    """``docs/a.pdf:page=3`` -> ``("docs/a.pdf", 3)``; a ref without it -> ``(ref, None)``."""
    found = _PAGE_SUFFIX.match(ref.strip())
    if found is None:
        return ref, None
    return found["ref"], int(found["page"])


def page_lines(conn: Any, doc: store.StoredDocument, page: int, total_lines: int) -> tuple[int, int]:
    """The first line of ``page`` and how many lines it has."""
    shown = virtual_path(doc.collection, doc.path)
    starts = extractions.pages_of(conn, [doc.hash]).get(doc.hash, ())
    if not starts:
        raise UsageError(
            f"{shown} has no pages", hint="page= is for PDF files; read lines instead: REF:LINE or --from"
        )
    if not 1 <= page <= len(starts):
        raise PageOutOfRange(
            f"{shown} has {len(starts)} pages: there is no page {page}",
            hint=f"give a page from 1 to {len(starts)}",
            pages=len(starts),
            page=page,
        )
    # The blank line between two pages is not part of either.
    end = starts[page] - 1 if page < len(starts) else total_lines + 1
    return starts[page - 1], max(1, end - starts[page - 1])
