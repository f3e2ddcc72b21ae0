"""Which page of a PDF a hit is on: the page starts its extraction recorded (``store/extractions``)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Any

from ..store.documents import StoredDocument


def page_starts(conn: Any, docs: Iterable[StoredDocument]) -> dict[str, tuple[int, ...]]:
    """Content hash -> first line of each page, for the PDFs among ``docs`` (no query without one)."""
    hashes = [doc.hash for doc in docs if doc.path.lower().endswith(".pdf")]
    if not hashes:
        return {}
    from ..store.backend import extractions

    return extractions.pages_of(conn, hashes)


def page_at(starts: tuple[int, ...], line: int) -> int | None:
    """The 1-based page holding ``line``; None for a text without pages."""
    if not starts or line < 1:
        return None
    return max(1, bisect_right(starts, line))
