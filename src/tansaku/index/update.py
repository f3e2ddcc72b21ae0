"""Incremental indexing of one collection.

Unchanged size + mtime: skipped without reading. Changed: read and hashed; the same hash only
refreshes the stored stat. Deleted: removed. A removed path whose content reappears at a new path
is a move: the row keeps its id and content, only the path changes.

A file read and skipped on purpose (corrupt, binary, too large) is remembered with its size and
mtime (``skipped_files``), so `status` counts it as skipped rather than new while it stays so;
`update` still reads it each time (cheap: a too-large file is refused by its size, a failed
extraction is cached by content hash).

The plan is computed first (read-only, so ``--dry-run`` reports exactly what would happen), then
applied in one transaction.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from ..chunking import ChunkParams
from ..config.masks import MaskMatcher, expand_masks
from ..paths import is_within
from ..sources.formats import format_of
from ..sources.formats.guard import ExtractionPool
from ..sources.outline import outline
from ..sources.reader import INDEXER_VERSION, ReadDocument, line_count, read_document
from ..sources.walk import FoundFile, walk_collection
from ..store.backend import chunks as chunk_store
from ..store.backend import documents as store
from ..store.backend import extractions as extraction_store
from ..text.cjk import segment
from ..types import Collection, CollectionUpdate, Notice, SkippedFile
from .chunks import ChunkingSummary, chunk_one, params_for
from .extracting import ExtractionLog, Reading, read_formatted, ready
from .fields import FieldWriter, field_warnings
from .plan import Plan as _Plan
from .progress import Progress
from .repeated import leave_out_repeated

# Skip reasons that may go away with the file unchanged (its permissions fixed, the docs extra
# installed: see ExtractionFailed.cacheable): not remembered, so `status` keeps such a file
# pending and says to run `update`, which tries it again.
RETRIED_SKIPS = frozenset({"unreadable", "extra-missing", "reader-unavailable"})


def skip_code(reason: str) -> str:
    """The stable code a skip reason starts with: ``corrupt`` of ``corrupt (EOF marker...)``."""
    return reason.split(" ", 1)[0]


def standing_skips(conn: object, collection: Collection, max_file_bytes: int) -> dict[str, str]:
    """Path -> reason of the files the last update of ``collection`` skipped on purpose that are
    still as it found them: same size and mtime, same file size limit, still chosen by the
    masks. One stat per remembered file, no reading."""
    rows = store.skipped_in(conn, collection.name)
    if not rows:
        return {}
    masks = MaskMatcher(expand_masks(collection.masks))
    ignore = MaskMatcher(expand_masks(collection.ignore)) if collection.ignore else None
    standing: dict[str, str] = {}
    for row in rows:
        if row.max_bytes != max_file_bytes or not masks.matches(row.path):
            continue
        if ignore is not None and ignore.matches(row.path):
            continue
        try:
            st = os.stat(os.path.join(collection.path, *row.path.split("/")))
        except OSError:
            continue  # gone: nothing to count
        if (st.st_size, st.st_mtime_ns) == (row.size, row.mtime_ns):
            standing[row.path] = row.reason
    return standing


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def fts_path(rel_path: str) -> str:
    return segment(rel_path.replace("/", " / "))


def plan(
    conn: object, collection: Collection, max_file_bytes: int, progress: Progress | None = None
) -> _Plan:
    masks = MaskMatcher(expand_masks(collection.masks))
    ignore = MaskMatcher(expand_masks(collection.ignore)) if collection.ignore else None
    existing = store.documents_in(conn, collection.name)
    # Files indexed by an older indexer are re-read even when unchanged on disk.
    outdated = store.indexer_version(conn, collection.name) not in (None, INDEXER_VERSION)
    result = _Plan()
    found: list[FoundFile] = []
    unreadable_dirs: list[str] = []
    for item in walk_collection(Path(collection.path), masks, ignore):
        if isinstance(item, SkippedFile):
            result.skipped.append(_printable(item))
            if item.path.endswith("/") and item.reason.startswith("unreadable"):
                unreadable_dirs.append(item.path.rstrip("/"))
        elif not is_utf8(item.rel_path):
            result.skipped.append(_printable(SkippedFile(item.rel_path, "invalid-utf8-name")))
        else:
            found.append(item)
    seen: set[str] = set()
    with ExtractionPool() as pool:
        _read_found(conn, found, existing, outdated, max_file_bytes, result, seen, pool, progress)
    leave_out_repeated(conn, result, existing, seen)
    # A folder that could not be listed this time keeps its documents: a permission hiccup
    # must not silently empty part of the index.
    gone = [
        doc
        for path, doc in existing.items()
        if path not in seen and not any(is_within(path, d) for d in unreadable_dirs)
    ]
    _pair_moves(result, gone)
    return result


def _read_found(
    conn: object,
    found: list[FoundFile],
    existing: dict[str, store.StoredDocument],
    outdated: bool,
    max_file_bytes: int,
    result: _Plan,
    seen: set[str],
    pool: ExtractionPool,
    progress: Progress | None,
) -> None:
    """Sort the files found into the plan, reading those that changed. Documents are extracted by
    ``pool`` while later files are read; they are sorted in the order found all the same, a few
    files behind (at most two per worker wait, so their bytes in memory stay bounded)."""
    waiting: deque[tuple[FoundFile, store.StoredDocument | None, Reading]] = deque()
    for done, item in enumerate(found, start=1):
        seen.add(item.rel_path)
        old = existing.get(item.rel_path)
        if old is not None and old.size == item.size and old.mtime_ns == item.mtime_ns and not outdated:
            result.unchanged += 1
        else:
            fmt = format_of(item.rel_path)
            if fmt is None:
                reading = ready(read_document(item.rel_path, item.abs_path, item.size, max_file_bytes))
            else:
                known = old.hash if old is not None and not outdated else None
                reading = read_formatted(
                    conn, item, fmt, max_file_bytes, known, result.extractions, now_iso(), pool
                )
            waiting.append((item, old, reading))
            while len(waiting) > 2 * pool.size:
                _sort(*waiting.popleft(), outdated, max_file_bytes, result, seen)
        if progress:
            progress(done, len(found), "reading")
    while waiting:
        _sort(*waiting.popleft(), outdated, max_file_bytes, result, seen)


def _sort(
    item: FoundFile,
    old: store.StoredDocument | None,
    reading: Reading,
    outdated: bool,
    max_file_bytes: int,
    result: _Plan,
    seen: set[str],
) -> None:
    """Put one changed or new file into the plan, once it has been read."""
    doc = reading()
    if isinstance(doc, SkippedFile):
        result.skipped.append(doc)
        seen.discard(item.rel_path)  # a file that can no longer be read leaves the index
        if skip_code(doc.reason) not in RETRIED_SKIPS:
            result.lasting_skips.append(
                store.SkippedRow(item.rel_path, item.size, item.mtime_ns, doc.reason, max_file_bytes)
            )
    elif old is None:
        result.add.append((item, doc))
    elif old.hash == doc.content_hash and not outdated:
        result.touch.append((old, item))
        result.unchanged += 1
    else:
        result.change.append((old, item, doc))


def is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _printable(skipped: SkippedFile) -> SkippedFile:
    """File names that are not valid UTF-8 arrive with surrogates; show them with U+FFFD."""
    if is_utf8(skipped.path):
        return skipped
    shown = skipped.path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return SkippedFile(shown, skipped.reason)


def _pair_moves(result: _Plan, gone: list[store.StoredDocument]) -> None:
    by_hash: dict[str, list[store.StoredDocument]] = {}
    for doc in gone:
        by_hash.setdefault(doc.hash, []).append(doc)
    still_added: list[tuple[FoundFile, ReadDocument]] = []
    for item, doc in result.add:
        candidates = by_hash.get(doc.content_hash)
        if candidates:
            result.move.append((candidates.pop(), item))
        else:
            still_added.append((item, doc))
    result.add = still_added
    result.remove = [doc for docs in by_hash.values() for doc in docs]


def _stored(collection: str, item: FoundFile, doc: ReadDocument, indexed_at: str) -> store.StoredDocument:
    return store.StoredDocument(
        id=0,
        collection=collection,
        path=item.rel_path,
        hash=doc.content_hash,
        title=doc.title,
        size=item.size,
        mtime_ns=item.mtime_ns,
        line_count=line_count(doc.text),
        repaired=doc.repaired,
        indexed_at=indexed_at,
    )


def _insert(
    conn: object,
    collection: str,
    item: FoundFile,
    doc: ReadDocument,
    indexed_at: str,
    chunking: _Chunking | None = None,
    fields: FieldWriter | None = None,
) -> None:
    store.put_content(conn, doc.content_hash, doc.text)
    defined = outline(doc.text, item.rel_path)
    fts = store.FtsText(
        fts_path(item.rel_path),
        segment(doc.title),
        segment(doc.text),
        segment(defined.headings),
        segment(defined.options),
    )
    doc_id = store.insert_document(conn, _stored(collection, item, doc, indexed_at), doc.text, fts)
    if fields is not None:
        fields.add(conn, doc_id, item.rel_path, doc.text)
    if chunking is not None and doc.content_hash not in chunking.done:
        # Chunk while the text is in memory rather than reading it back afterwards.
        chunk_one(conn, doc.content_hash, item.rel_path, doc.text, chunking.params, chunking.summary)
        chunking.done.add(doc.content_hash)


@dataclass
class _Chunking:
    params: ChunkParams
    summary: ChunkingSummary
    done: set[str]  # texts that already have chunks for these parameters


def apply(
    conn: object,
    collection: Collection,
    work: _Plan,
    progress: Progress | None = None,
    summary: ChunkingSummary | None = None,
) -> None:
    """Write a plan, chunking new texts on the way (into ``summary``). The caller holds the
    write transaction."""
    indexed_at = now_iso()
    chunking = None
    if summary is not None:
        params = params_for(collection)
        new = [doc.content_hash for _, doc in work.add] + [doc.content_hash for _, _, doc in work.change]
        chunking = _Chunking(params, summary, chunk_store.chunked_hashes(conn, params.fingerprint(), new))
    total = len(work.change) + len(work.add)
    fields = FieldWriter(work.broken_front)
    with store.batched(conn):
        for old in work.remove:
            store.delete_document(conn, old.id)
        for old, item, doc in work.change:
            store.delete_document(conn, old.id)
            _insert(conn, collection.name, item, doc, indexed_at, chunking, fields)
        for old, item in work.touch:
            store.touch_document(conn, old.id, item.size, item.mtime_ns)
        for old, item in work.move:
            # Content is unchanged, so its text and tokens are already stored: only the path changes.
            store.move_document(
                conn, old.id, item.rel_path, fts_path(item.rel_path), item.size, item.mtime_ns, indexed_at
            )
        for done, (item, doc) in enumerate(work.add, start=len(work.change) + 1):
            _insert(conn, collection.name, item, doc, indexed_at, chunking, fields)
            if progress and done % 100 == 0:
                progress(done, total, "writing")
    if chunking is not None:
        chunking.summary.flush()
    fields.flush(conn)
    if work.remove or work.change:
        store.prune_content(conn)
        chunk_store.prune_chunks(conn)
    _store_extractions(conn, work.extractions, indexed_at)
    store.replace_skipped(conn, collection.name, work.lasting_skips)
    store.set_collection_state(conn, collection.name, collection.path, indexed_at, INDEXER_VERSION)


def _store_extractions(conn: object, log: ExtractionLog, now: str) -> None:
    for found in log.new:
        extraction_store.put(conn, found, now)
    extraction_store.mark_seen(conn, log.seen, now)
    if log.new or log.seen:
        cutoff = time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - extraction_store.KEEP_UNUSED_DAYS * 86400)
        )
        extraction_store.prune(conn, cutoff)


def report(name: str, work: _Plan) -> CollectionUpdate:
    return CollectionUpdate(
        name=name,
        added=[item.rel_path for item, _ in work.add],
        updated=[item.rel_path for _, item, _ in work.change],
        moved=[(old.path, item.rel_path) for old, item in work.move],
        removed=[doc.path for doc in work.remove],
        unchanged=work.unchanged,
        repaired=sorted(
            [item.rel_path for item, doc in work.add if doc.repaired]
            + [item.rel_path for _, item, doc in work.change if doc.repaired]
        ),
        skipped=work.skipped,
        repeated_blocks=work.repeated_blocks,
        repeated_pages=work.repeated_pages,
        warnings=[
            *field_warnings(work.broken_front),
            *(
                Notice("PARTIAL_DOCUMENT", f"{item.rel_path}: {notice}")
                for item, doc in [*work.add, *((item, doc) for _, item, doc in work.change)]
                for notice in doc.notices
            ),
        ],
    )
