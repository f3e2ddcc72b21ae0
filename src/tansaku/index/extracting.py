"""Reading a PDF, HTML, Word or EPUB file during an update: its bytes are hashed first, and the
text is extracted only when no extraction of these bytes is cached (``store/extractions.py``), by
the update's worker processes (``sources/formats/guard.py``), never in the indexer's own. The
extraction is asked for at once and its answer taken when the caller calls the function it got
back, so the workers read the next files while this process goes on.

The plan is read-only (``--dry-run`` runs it too), so what is extracted or looked up is logged
here and written by ``apply`` in the update's transaction.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from ..sources import formats
from ..sources.formats.guard import ExtractionPool
from ..sources.reader import ReadDocument, content_hash
from ..sources.walk import FoundFile
from ..store.backend import extractions as cache
from ..types import SkippedFile


@dataclass
class ExtractionLog:
    new: list[cache.StoredExtraction] = field(default_factory=list)  # to store
    seen: list[tuple[str, str]] = field(default_factory=list)  # cached rows used: (hash, extractor)
    extracted: int = 0  # files actually extracted in this run


Reading = Callable[[], ReadDocument | SkippedFile]


def read_formatted(
    conn: Any,
    item: FoundFile,
    fmt: str,
    max_text_chars: int,
    known_hash: str | None,
    log: ExtractionLog,
    extracted_at: str,
    pool: ExtractionPool,
) -> Reading:
    """The file as a document, when the returned function is called; ``known_hash`` is the stored
    hash of this path: the same bytes need no text (the update only refreshes the stat), so none
    is extracted or looked up."""
    limit = formats.MAX_DOCUMENT_BYTES
    if item.size > limit:
        reason = f"too-large ({item.size} bytes > limit {limit} for {fmt} files)"
        return ready(SkippedFile(item.rel_path, reason))
    try:
        with open(item.abs_path, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        return ready(SkippedFile(item.rel_path, f"unreadable ({exc.strerror or exc})"))
    if len(raw) > limit:
        return ready(SkippedFile(item.rel_path, f"too-large (over limit {limit} for {fmt} files)"))
    extractor = formats.extractor_id(fmt)
    digest = document_hash(extractor, raw)
    if digest == known_hash:
        return ready(ReadDocument(item.rel_path, digest, "", "", len(raw), False))
    found = cache.get(conn, digest, extractor)
    if found is not None:
        log.seen.append((digest, extractor))
        return ready(_document(item, digest, len(raw), found))
    extracting = pool.submit(fmt, raw, max_text_chars)
    size = len(raw)

    def finish() -> ReadDocument | SkippedFile:
        got = _stored(extracting, digest, extractor, extracted_at)
        log.extracted += 1
        if isinstance(got, formats.ExtractionFailed):  # not cached (a missing extra): try next time
            return SkippedFile(item.rel_path, got.reason)
        log.new.append(got)
        return _document(item, digest, size, got)

    return finish


def ready(doc: ReadDocument | SkippedFile) -> Reading:
    """A reading already done."""
    return lambda: doc


def _document(
    item: FoundFile, digest: str, size: int, found: cache.StoredExtraction
) -> ReadDocument | SkippedFile:
    if found.failure is not None or found.body is None:
        return SkippedFile(item.rel_path, found.failure or "corrupt")
    return ReadDocument(
        rel_path=item.rel_path,
        content_hash=digest,
        text=found.body,
        title=found.title or PurePosixPath(item.rel_path).name,
        size=size,
        repaired=False,
        pages=found.pages,
        notices=found.notices,
    )


def document_hash(extractor: str, raw: bytes) -> str:
    """The document's content hash (its docid): the bytes' SHA-256 with the extractor that reads
    them, so a text file with the same bytes, or the same file read by another extractor version,
    never shares its stored text."""
    return content_hash(extractor.encode("ascii") + b"\0" + raw)


def _stored(
    extracting: Future[formats.Extracted], digest: str, extractor: str, extracted_at: str
) -> cache.StoredExtraction | formats.ExtractionFailed:
    try:
        got = extracting.result()
    except formats.ExtractionFailed as exc:
        if not exc.cacheable:
            return exc
        return _failed(digest, extractor, exc.reason, extracted_at)
    return cache.StoredExtraction(
        hash=digest,
        extractor=extractor,
        title=got.title,
        body=got.text,
        pages=got.pages,
        notices=got.notices,
        failure=None,
        extracted_at=extracted_at,
    )


def _failed(digest: str, extractor: str, reason: str, extracted_at: str) -> cache.StoredExtraction:
    return cache.StoredExtraction(digest, extractor, "", None, (), (), reason, extracted_at)
