"""Turning a stored document and its score into a result, the same way for every search mode."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ..config.contexts import contexts_for
from ..paths import virtual_path
from ..store.documents import StoredDocument
from ..types import Collection, Hit, Snippet


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
    **mode_fields: Any,
) -> Hit:
    """``body`` is the whole text for --full, else None; ``mode_fields`` are the fields one mode
    adds (matched terms for keyword search, the chunk's lines for vector search)."""
    path = disk_path(collections[doc.collection], doc.path)
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
        **mode_fields,
    )
