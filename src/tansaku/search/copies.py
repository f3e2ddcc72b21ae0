"""Exact copies: documents with the same text (one content hash) reached by several paths (a
symlinked or copied file, a folder added as two collections). A result list shows each text once,
at its best-ranked path, with the other paths in ``Hit.also_at``; ``--all-copies`` shows them all.
Translations of a page (paths that differ only by a language segment, search/languages.py) are
one result too, the others' languages in ``Hit.also_in``.

The collapse runs on the ranked document ids before the limit, so ``-n 5`` gives five distinct
texts. It only reads documents (store/: ``documents_by_ids``, ``documents_with_hashes``), the
same on both backends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection as Names
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..paths import split_virtual_path, virtual_path
from ..store.backend import documents as store
from ..store.documents import StoredDocument
from ..types import Hit
from .languages import in_language, neutral

# Documents read per round while looking for ``limit`` distinct texts: a few copies among the
# first results cost one more small read, not a read of every candidate.
_BATCH = 50
_BATCH_ALL = 1000


@dataclass
class Distinct:
    """What ``first_copies`` found: the positions kept, how many copies and translations were
    passed over on the way (a result's total less these counts distinct results, exactly when the
    walk saw every id), and the languages of the translations of each kept document (by id)."""

    kept: list[int] = field(default_factory=list)
    hidden: int = 0
    languages: dict[int, tuple[str, ...]] = field(default_factory=dict)
    docs: dict[int, StoredDocument] = field(default_factory=dict)  # the documents read, by id


def first_copies(conn: Any, doc_ids: Sequence[int], limit: int | None) -> Distinct:
    """The positions in ``doc_ids`` (best first) of the first document of each text, and of each
    page in several languages (its best language: search/languages.py), at most ``limit`` of them
    (None: all). An id with no document row is kept as it is (its caller decides)."""
    found = Distinct()
    kept = found.kept
    seen: set[str] = set()
    pages: dict[tuple[str, str], int] = {}  # (collection, path without its language) -> kept id
    docs = found.docs
    step = _BATCH_ALL if limit is None else max(_BATCH, 2 * limit)
    start = 0
    while start < len(doc_ids) and (limit is None or len(kept) < limit):
        batch = list(doc_ids[start : start + step])
        docs.update(store.documents_by_ids(conn, batch))
        for offset, doc_id in enumerate(batch):
            doc = docs.get(doc_id)
            if doc is not None:
                if doc.hash in seen:
                    found.hidden += 1
                    continue
                seen.add(doc.hash)
                translated = neutral(doc.path)
                if translated is not None:
                    page, code = (doc.collection, translated[0]), translated[1]
                    if page in pages:
                        found.hidden += 1
                        first = pages[page]
                        known = found.languages.get(first, ())
                        if code not in known:
                            found.languages[first] = (*known, code)
                        continue
                    pages[page] = doc_id
            kept.append(start + offset)
            if limit is not None and len(kept) >= limit:
                break
        start += step
    return found


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


def with_languages(
    hits: Sequence[Hit], doc_ids: Sequence[int], languages: dict[int, tuple[str, ...]]
) -> list[Hit]:
    """``hits`` (one per id of ``doc_ids``, in order) with their translations' languages in
    ``also_in``."""
    return [
        replace(hit, also_in=languages[doc_id]) if doc_id in languages else hit
        for hit, doc_id in zip(hits, doc_ids, strict=True)
    ]


def merged_copies(conn: Any, hits: Sequence[Hit]) -> list[Hit]:
    """Hits of a fused list (`query`) with each text and each page once: the first hit of a text
    (or of a page in several languages) keeps its place and gains the later ones' paths (or
    languages), with their own ``also_at`` and ``also_in``. The lists fused were collapsed already;
    two lists may still have chosen different copies, or languages, of one page."""
    first_text: dict[str, int] = {}
    first_page: dict[tuple[str, str], int] = {}
    out: list[Hit] = []
    # Copies share their docid (the hash's start): only hits whose docid repeats are read.
    repeated = {docid for docid, n in Counter(hit.docid for hit in hits).items() if n > 1}
    for hit in hits:
        doc = store.document_at(conn, hit.collection, hit.path) if hit.docid in repeated else None
        text = doc.hash if doc is not None else None
        translated = neutral(hit.path)
        page = (hit.collection, translated[0]) if translated is not None else None
        if text is not None and text in first_text:  # a copy of a text shown: its path
            at = first_text[text]
            kept = out[at]
            paths = {*kept.also_at, hit.virtual_path, *hit.also_at} - {kept.virtual_path}
            out[at] = replace(kept, also_at=tuple(sorted(paths)))
        elif page is not None and translated is not None and page in first_page:
            at = first_page[page]  # a translation of a page shown: its language
            kept = out[at]
            own = neutral(kept.path)
            languages = [*kept.also_in, translated[1], *hit.also_in]
            shown = own[1] if own is not None else None
            out[at] = replace(kept, also_in=tuple(dict.fromkeys(x for x in languages if x != shown)))
        else:
            if text is not None:
                first_text[text] = len(out)
            if page is not None:
                first_page[page] = len(out)
            out.append(hit)
    return out


def hit_paths(hit: Hit) -> tuple[tuple[str, str], ...]:
    """Every (collection, path) a collapsed hit stands for: the one shown, its exact copies, then
    its translations (their paths rebuilt from its own and the language)."""
    paths = [(hit.collection, hit.path)]
    paths += [split_virtual_path(other) for other in hit.also_at]
    for code in hit.also_in:
        translated = in_language(hit.path, code)
        if translated is not None:
            paths.append((hit.collection, translated))
    return tuple(dict.fromkeys(paths))
