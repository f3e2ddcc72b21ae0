"""Turning a stored document and its score into a result, the same way for every search mode."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..config.contexts import contexts_for
from ..paths import virtual_path
from ..store.documents import StoredDocument
from ..types import Collection, Hit, Snippet
from .pages import page_at


def disk_path(collection: Collection, rel_path: str) -> str:
    return os.path.join(collection.path, *rel_path.split("/"))


def is_stale(path: str, size: int, mtime_ns: int) -> bool:
    """The file changed (or vanished) since it was indexed."""
    try:
        st = os.stat(path)
    except OSError:
        return True
    return st.st_size != size or st.st_mtime_ns != mtime_ns


def make_hit(
    doc: StoredDocument,
    score: float,
    snippet: Snippet,
    body: str | None,
    collections: Mapping[str, Collection],
    contexts: Mapping[str, str],
    pages: Mapping[str, tuple[int, ...]] | None = None,
    **mode_fields: Any,
) -> Hit:
    """``body`` is the whole text for --full, else None; ``mode_fields`` are the fields one mode
    adds (matched terms for keyword search, the chunk's lines for vector search); ``pages`` the
    page starts of the PDFs among the results (search/pages.py)."""
    path = disk_path(collections[doc.collection], doc.path)
    chunk = mode_fields.get("chunk_lines")
    return Hit(
        docid=doc.hash[:6],
        score=score,
        collection=doc.collection,
        path=doc.path,
        virtual_path=virtual_path(doc.collection, doc.path),
        disk_path=path,
        title=doc.title,
        contexts=contexts_for(contexts, doc.collection, doc.path),
        snippet=snippet,
        stale=is_stale(path, doc.size, doc.mtime_ns),
        body=body,
        page=hit_page((pages or {}).get(doc.hash, ()), snippet, chunk),
        **mode_fields,
    )


def hit_page(starts: tuple[int, ...], snippet: Snippet, chunk: tuple[int, int] | None) -> int | None:
    """The page of the snippet's first line, else of the matching chunk's; None without pages."""
    if not starts:
        return None
    line = snippet.start_line if snippet.lines else (chunk[0] if chunk else 0)
    return page_at(starts, line)
