"""Reading documents back by path, virtual path, docid or glob, always within stated bounds."""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .. import limits
from ..config.contexts import contexts_for
from ..config.masks import MaskMatcher, expand_masks
from ..errors import AmbiguousDocid, DocumentNotFound, LineOutOfRange, UsageError
from ..paths import VIRTUAL_PREFIX, normalize_rel, split_virtual_path, virtual_path
from ..search.copies import other_paths
from ..search.hits import is_stale
from ..search.snippets import split_lines
from ..store.backend import documents as store
from ..types import Collection, DocumentSlice, MultiGetResult, Notice, SkippedDocument

if TYPE_CHECKING:
    from ..config.settings import Config

DEFAULT_GET_MAX_BYTES = 256 * 1024
DEFAULT_MULTI_GET_MAX_BYTES = 10 * 1024
_RANGE_SUFFIX = re.compile(r"^(?P<ref>.+?)(?::(?P<from>\d+)(?::(?P<count>\d+))?)?$")
_DOCID = re.compile(r"^#?([0-9a-fA-F]{4,64})$")
_GLOB_CHARS = re.compile(r"[*?\[{]")
# Paths matched against a glob between two limits.check() calls.
_CHECK_EVERY = 512


@dataclass(frozen=True)
class LineRange:
    from_line: int = 1
    max_lines: int | None = None
    max_bytes: int = DEFAULT_GET_MAX_BYTES


def split_comma_list(pattern: str) -> list[str]:
    """Split on commas outside ``{}`` groups: ``a.md,notes/*.{md,txt}`` is two items."""
    items: list[str] = []
    depth = 0
    current: list[str] = []
    for char in pattern:
        if char == "{":
            depth += 1
        elif char == "}":
            depth = max(0, depth - 1)
        if char == "," and depth == 0:
            items.append("".join(current))
            current = []
        else:
            current.append(char)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def split_range(ref: str) -> tuple[str, int | None, int | None]:
    """``notes/a.md:10:5`` -> ``("notes/a.md", 10, 5)``."""
    match = _RANGE_SUFFIX.match(ref.strip())
    if not match:
        raise UsageError("empty document reference")
    start = int(match["from"]) if match["from"] else None
    count = int(match["count"]) if match["count"] else None
    return match["ref"], start, count


def resolve(
    conn: Any,
    ref: str,
    collections: Mapping[str, Collection],
    similar: SimilarPaths | None = None,
    *,
    disk_paths: bool = True,
) -> store.StoredDocument:
    """Find one document; an ambiguous docid or a miss is an error that lists the candidates.
    ``disk_paths``: a file path on this machine inside a collection names its document too.

    ``similar`` suggests paths for a miss (pass one per call to share its index between refs);
    None builds one for this ref."""
    ref = ref.strip()
    docid = _DOCID.match(ref)
    if ref.startswith(VIRTUAL_PREFIX):
        name, rel = split_virtual_path(ref)
        found = store.document_at(conn, name, rel)
    else:
        found = _by_path(conn, ref, collections, disk_paths)
    if found is None and docid:
        matches = store.documents_by_hash_prefix(conn, docid.group(1).lower())
        distinct = {doc.hash for doc in matches}
        if len(distinct) > 1:
            listed = ", ".join(f"#{d.hash[:8]} {virtual_path(d.collection, d.path)}" for d in matches[:10])
            raise AmbiguousDocid(
                f"docid {ref} matches {len(distinct)} documents: {listed}",
                hint="give more characters of the docid, or a path",
                candidates=[virtual_path(d.collection, d.path) for d in matches],
            )
        # Identical content at several paths shares a docid: any of them is the same text.
        found = matches[0] if matches else None
    if found is None:
        close = (similar or SimilarPaths(conn)).suggest(ref)
        hint = "similar: " + ", ".join(close) if close else "see `tansaku ls` for what is indexed"
        raise DocumentNotFound(f"no document matches {ref!r}", hint=hint, similar=close)
    return found


def _by_path(
    conn: Any, ref: str, collections: Mapping[str, Collection], disk_paths: bool
) -> store.StoredDocument | None:
    if disk_paths and (os.path.isabs(ref) or os.path.exists(ref)):
        real = os.path.realpath(ref)
        for c in collections.values():
            root = os.path.realpath(c.path)
            if real.startswith(root + os.sep):
                doc = store.document_at(conn, c.name, os.path.relpath(real, root).replace(os.sep, "/"))
                if doc:
                    return doc
    try:
        rel = normalize_rel(ref)
    except UsageError:
        return None
    name, _, rest = rel.partition("/")
    if name in collections and rest:
        doc = store.document_at(conn, name, rest)
        if doc:
            return doc
    # A bare relative path is accepted when exactly one collection has it.
    hits = [doc for c in collections for doc in [store.document_at(conn, c, rel)] if doc]
    return hits[0] if len(hits) == 1 else None


class SimilarPaths:
    """Indexed paths like a missed reference, from an index by folder and by file name that is
    built once, on the first miss: not a scan of every path per miss."""

    def __init__(self, conn: Any, limit: int | None = None) -> None:
        self._conn = conn
        self._limit = limit  # misses that get suggestions; None: every one
        self._by_folder: dict[str, list[str]] | None = None
        self._by_name: dict[str, list[str]] = {}
        self.suggested = 0  # misses that suggestions were computed for

    def suggest(self, ref: str) -> list[str]:
        """Up to 5 virtual paths like ``ref``; none once ``limit`` misses had theirs."""
        if self._limit is not None and self.suggested >= self._limit:
            return []
        self.suggested += 1
        by_folder = self._index()
        key = ref.removeprefix(VIRTUAL_PREFIX).lstrip("#").strip("/")
        folder, _, name = key.lower().rpartition("/")
        # Beside it (a misspelt name) or with its name elsewhere (a misspelt or missing folder).
        candidates = dict.fromkeys(
            [*by_folder.get(folder, ()), *self._by_name.get(name, ()), *self._by_name.get(_stem(name), ())]
        )
        keys = {path.removeprefix(VIRTUAL_PREFIX): path for path in candidates}
        close = [keys[k] for k in difflib.get_close_matches(key, list(keys), n=5, cutoff=0.4)]
        if not close and name:
            # Its name inside a longer one (``tar`` for ``tar.1.md``): over names, not paths.
            found = (paths for known, paths in self._by_name.items() if name in known)
            close = list(dict.fromkeys(path for paths in found for path in paths))[:5]
        return close

    def _index(self) -> dict[str, list[str]]:
        if self._by_folder is None:
            self._by_folder = {}
            for collection, path in store.all_paths(self._conn):
                shown = virtual_path(collection, path)
                folder, _, name = path.lower().rpartition("/")
                # "guides/instal.md" and "sample/guides/instal.md" both name the folder.
                for key in dict.fromkeys((folder, f"{collection.lower()}/{folder}".rstrip("/"))):
                    self._by_folder.setdefault(key, []).append(shown)
                for key in dict.fromkeys(k for k in (name, _stem(name)) if k):
                    self._by_name.setdefault(key, []).append(shown)
        return self._by_folder


def _stem(name: str) -> str:
    """A file name without its extensions: ``tar`` for ``tar.1.md``."""
    return name.split(".", 1)[0]


def slice_document(
    conn: Any,
    doc: store.StoredDocument,
    collections: Mapping[str, Collection],
    contexts: Mapping[str, str],
    bounds: LineRange,
) -> DocumentSlice:
    text = store.body(conn, doc.hash)
    lines = split_lines(text)
    start = max(1, bounds.from_line)
    shown = virtual_path(doc.collection, doc.path)
    if start > max(1, len(lines)):
        raise LineOutOfRange(
            f"{shown} has {len(lines)} lines: there is no line {start}",
            hint=f"read it from a line up to {len(lines)}" if lines else "the document is empty",
            total_lines=len(lines),
            from_line=start,
        )
    end = len(lines) if bounds.max_lines is None else min(len(lines), start - 1 + bounds.max_lines)
    chosen: list[str] = []
    used = 0
    for line in lines[start - 1 : end]:
        used += len(line.encode("utf-8")) + 1
        if used > bounds.max_bytes and chosen:
            break
        chosen.append(line)
    collection = collections[doc.collection]
    disk_path = os.path.join(collection.path, *doc.path.split("/"))
    stale = is_stale(disk_path, doc.size, doc.mtime_ns)
    return DocumentSlice(
        docid=doc.hash[:6],
        collection=doc.collection,
        path=doc.path,
        virtual_path=shown,
        disk_path=disk_path,
        title=doc.title,
        contexts=contexts_for(contexts, doc.collection, doc.path),
        size=doc.size,
        total_lines=len(lines),
        from_line=start,
        lines=tuple(chosen),
        truncated=start - 1 + len(chosen) < len(lines),
        stale=stale,
        missing=stale and not os.path.lexists(disk_path),
    )


def multi_get(
    conn: Any,
    pattern: str,
    collections: Mapping[str, Collection],
    contexts: Mapping[str, str],
    max_lines: int | None,
    max_bytes: int = DEFAULT_MULTI_GET_MAX_BYTES,
    *,
    disk_paths: bool = True,
) -> MultiGetResult:
    items = split_comma_list(pattern)
    if len(items) > limits.MAX_MULTI_GET_REFS:
        raise UsageError(
            f"the pattern has {len(items)} items; multi-get reads at most {limits.MAX_MULTI_GET_REFS}"
            " per call",
            hint="split it into several calls, or name many files with one glob (notes/**/*.md)",
            items=len(items),
            limit=limits.MAX_MULTI_GET_REFS,
        )
    docs: list[store.StoredDocument] = []
    warnings: list[Notice] = []
    similar = SimilarPaths(conn, limit=limits.MAX_SUGGESTED_MISSES)
    listings = _Listings(conn)
    # A repeated item finds the same documents again: each distinct one is looked up once.
    for item in dict.fromkeys(items):
        limits.check()
        if _GLOB_CHARS.search(item):
            matched = _glob(listings, item, collections)
            if not matched:
                warnings.append(Notice("NO_MATCH", f"the pattern {item!r} matched no document"))
            docs.extend(matched)
        else:
            try:
                docs.append(resolve(conn, item, collections, similar, disk_paths=disk_paths))
            except DocumentNotFound as exc:
                warnings.append(Notice("NO_MATCH", f"{exc.message} ({exc.hint})"))
    # One text once: copies of it (a symlinked or copied file, a folder added twice) are printed
    # at the first path matched, their paths in also_at.
    first: dict[str, store.StoredDocument] = {}
    for doc in docs:
        first.setdefault(doc.hash, doc)
    unique = list(first.values())
    copies = other_paths(conn, unique, collections)
    # The rule is about the text multi-get prints (a PDF's or an HTML page's extracted text, a
    # text file's text), never the file on disk: markup can make a page 5 times its text.
    sizes = store.text_bytes(conn, [doc.hash for doc in unique])
    slices: list[DocumentSlice] = []
    skipped: list[SkippedDocument] = []
    for doc in unique:
        limits.check()
        text_bytes = sizes.get(doc.hash, 0)
        if max_lines is None and text_bytes > max_bytes:
            why = f"its text is {text_bytes} bytes, over --max-bytes {max_bytes}"
            skipped.append(_skip(doc, text_bytes, why))
            continue
        # With -l the output is at most that many lines: the byte limit applies to them, not to
        # the whole text (3 lines of a 12 KiB page fit in 10 KiB).
        unbounded = DEFAULT_GET_MAX_BYTES + max_bytes
        piece = slice_document(conn, doc, collections, contexts, LineRange(1, max_lines, unbounded))
        used = sum(len(line.encode("utf-8")) + 1 for line in piece.lines)
        if used > max_bytes:
            # Printed, each line ends in a newline: a text without a final one is a byte longer.
            why = (
                f"its text is {used} bytes, over --max-bytes {max_bytes}"
                if max_lines is None
                else f"its first {max_lines} lines are {used} bytes, over --max-bytes {max_bytes}"
            )
            skipped.append(_skip(doc, text_bytes, why))
            continue
        slices.append(replace(piece, also_at=copies[doc.id]) if doc.id in copies else piece)
    if unique and not slices:
        warnings.append(_nothing_printed(len(unique), max_bytes, max_lines))
    return MultiGetResult(
        pattern=pattern,
        documents=tuple(slices),
        skipped=tuple(skipped),
        max_bytes=max_bytes,
        max_lines=max_lines,
        warnings=tuple(warnings),
    )


def _skip(doc: store.StoredDocument, text_bytes: int, why: str) -> SkippedDocument:
    return SkippedDocument(
        virtual_path(doc.collection, doc.path),
        doc.size,
        f"{why}; read it with `tansaku get` and -l/--from",
        text_bytes,
    )


def _nothing_printed(matched: int, max_bytes: int, max_lines: int | None) -> Notice:
    """Every match skipped: said in words (the CLI also exits 1), never an empty success."""
    if matched == 1:
        which = "the 1 document that matches was skipped"
    else:
        which = f"all {matched} documents that match were skipped"
    what = "text" if max_lines is None else f"first {max_lines} lines"
    fix = "read fewer lines with -l" if max_lines is None else "lower -l"
    return Notice(
        "ALL_SKIPPED",
        f"nothing printed: {which} (their {what} over --max-bytes {max_bytes}); raise --max-bytes or {fix}",
    )


class _Listings:
    """Each collection's documents, read from the index once per call however many globs ask."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._documents: dict[str, list[store.StoredDocument]] = {}

    def documents(self, collection: str) -> list[store.StoredDocument]:
        if collection not in self._documents:
            self._documents[collection] = store.list_documents(self._conn, collection)
        return self._documents[collection]


def _glob(
    listings: _Listings, pattern: str, collections: Mapping[str, Collection]
) -> list[store.StoredDocument]:
    """A glob over virtual paths: ``tansaku://notes/**/*.md``, ``notes/*.md`` or ``**/*.md``."""
    if pattern.startswith(VIRTUAL_PREFIX):
        rest = pattern[len(VIRTUAL_PREFIX) :]
        name, _, rel_pattern = rest.partition("/")
        names = [name]
    else:
        name, _, rel_pattern = pattern.partition("/")
        if name in collections and rel_pattern:
            names = [name]
        else:
            names, rel_pattern = sorted(collections), pattern
    matcher = MaskMatcher(expand_masks([rel_pattern or "**"]))
    found: list[store.StoredDocument] = []
    for name in names:
        if name not in collections:
            continue
        for i, doc in enumerate(listings.documents(name)):
            if i % _CHECK_EVERY == 0:
                limits.check()
            if matcher.matches(doc.path):
                found.append(doc)
    return found


def get_document(
    reading: Callable[[], AbstractContextManager[Any]],
    ref: str,
    config: Config,
    *,
    from_line: int | None = None,
    max_lines: int | None = None,
    max_bytes: int | None = None,
    raw: bool = False,
    context: int | None = None,
    disk_paths: bool = True,
) -> DocumentSlice | Any:
    """`get REF`: a document's lines, from ``from_line`` or the ref's ``:FROM[:COUNT]`` suffix, or
    one page of it (``REF:page=N``). A transcript session with a line is a SessionRead of the turns
    there, ``context`` turns around them (retrieve/sessions.py). ``reading`` opens a connection."""
    from .pages import page_lines, split_page

    paged, page = split_page(ref)
    base, suffix_from, suffix_count = split_range(paged) if page is None else (paged, None, None)
    bounds = LineRange(
        from_line=from_line or suffix_from or 1,
        max_lines=max_lines if max_lines is not None else suffix_count,
        max_bytes=max_bytes or DEFAULT_GET_MAX_BYTES,
    )
    with reading() as conn:
        doc = resolve(conn, base, config.collections, disk_paths=disk_paths)
        if page is not None:  # REF:page=N: that page's lines (-l still caps them)
            first, count = page_lines(conn, doc, page, doc.line_count)
            shown = count if max_lines is None else min(count, max_lines)
            bounds = LineRange(first, shown, bounds.max_bytes)
        if config.collections[doc.collection].type != "files" and (from_line or suffix_from):
            from .sessions import turn_window

            return turn_window(conn, doc, config.collections, bounds, context=context, raw=raw)
        found = slice_document(conn, doc, config.collections, config.contexts, bounds)
        others = _docid_copies(conn, base, doc, config.collections)
        return replace(found, also_at=others) if others else found


def _docid_copies(
    conn: Any, ref: str, doc: store.StoredDocument, collections: Mapping[str, Any]
) -> tuple[str, ...]:
    """A docid names a text, and copies of it share the docid: the other paths of ``doc``'s text
    when ``ref`` was its docid (``doc`` is the first by collection and path), else ()."""
    docid = _DOCID.match(ref.strip())
    if docid is None or not doc.hash.startswith(docid.group(1).lower()):
        return ()
    return other_paths(conn, [doc], collections).get(doc.id, ())
