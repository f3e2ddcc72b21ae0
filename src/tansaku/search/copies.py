"""Exact copies: documents with the same text (one content hash) reached by several paths (a
symlinked or copied file, a folder added as two collections). A result list shows each text once,
at its best-ranked path, with the other paths in ``Hit.also_at``; ``--all-copies`` shows them all.

The collapse runs on the ranked document ids before the limit, so ``-n 5`` gives five distinct
texts. It only reads documents (store/: ``documents_by_ids``, ``documents_with_hashes``), the
same on both backends.
"""

from __future__ import annotations

from collections.abc import Collection as Names
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..paths import virtual_path
from ..store.backend import documents as store
from ..store.documents import StoredDocument
from ..types import Hit

# Documents read per round while looking for ``limit`` distinct texts: a few copies among the
# first results cost one more small read, not a read of every candidate.
_BATCH = 50
_BATCH_ALL = 1000


def first_copies(conn: Any, doc_ids: Sequence[int], limit: int | None) -> tuple[list[int], int]:
    """The positions in ``doc_ids`` (best first) of the first document of each text, at most
    ``limit`` of them (None: all), and how many copies were passed over on the way (a result's
    total less these counts texts, exactly when the walk saw every id). An id with no document
    row is kept as it is (its caller decides)."""
    kept: list[int] = []
    seen: set[str] = set()
    docs: dict[int, StoredDocument] = {}
    hidden = 0
    step = _BATCH_ALL if limit is None else max(_BATCH, 2 * limit)
    start = 0
    while start < len(doc_ids) and (limit is None or len(kept) < limit):
        batch = list(doc_ids[start : start + step])
        docs.update(store.documents_by_ids(conn, batch))
        for offset, doc_id in enumerate(batch):
            doc = docs.get(doc_id)
            if doc is not None:
                if doc.hash in seen:
                    hidden += 1
                    continue
                seen.add(doc.hash)
            kept.append(start + offset)
            if limit is not None and len(kept) >= limit:
                break
        start += step
    return kept, hidden


def other_paths(
    conn: Any, shown: Sequence[StoredDocument], collections: Names[str]
) -> dict[int, tuple[str, ...]]:
    """For each shown document (by id), the virtual paths of the other documents of the searched
    ``collections`` with the same text, sorted; documents without copies are left out."""
    if not shown:
        return {}
    same: dict[str, list[StoredDocument]] = {}
    for doc in store.documents_with_hashes(conn, sorted({d.hash for d in shown})):
        if doc.collection in collections:
            same.setdefault(doc.hash, []).append(doc)
    out: dict[int, tuple[str, ...]] = {}
    for doc in shown:
        paths = sorted(virtual_path(d.collection, d.path) for d in same.get(doc.hash, ()) if d.id != doc.id)
        if paths:
            out[doc.id] = tuple(paths)
    return out


def with_other_paths(
    conn: Any, hits: Sequence[Hit], docs: Sequence[StoredDocument], collections: Names[str]
) -> list[Hit]:
    """``hits`` (one per document of ``docs``, in order) with their copies' paths in ``also_at``."""
    others = other_paths(conn, docs, collections)
    return [
        replace(hit, also_at=others[doc.id]) if doc.id in others else hit
        for hit, doc in zip(hits, docs, strict=True)
    ]


def merged_copies(conn: Any, hits: Sequence[Hit]) -> list[Hit]:
    """Hits of a fused list (`query`) with each text once: the first hit of a text keeps its place
    and gains the later ones' paths (and their own ``also_at``). The lists fused were collapsed
    already; two lists may still have chosen different copies of one text."""
    hashes: dict[str, str] = {}
    for hit in hits:
        doc = store.document_at(conn, hit.collection, hit.path)
        if doc is not None:
            hashes[hit.virtual_path] = doc.hash
    first: dict[str, int] = {}
    out: list[Hit] = []
    for hit in hits:
        text = hashes.get(hit.virtual_path)
        if text is None or text not in first:
            if text is not None:
                first[text] = len(out)
            out.append(hit)
            continue
        kept = out[first[text]]
        paths = {*kept.also_at, hit.virtual_path, *hit.also_at} - {kept.virtual_path}
        out[first[text]] = replace(kept, also_at=tuple(sorted(paths)))
    return out
