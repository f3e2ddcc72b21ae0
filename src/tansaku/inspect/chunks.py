"""`chunks`: a document's chunks as `update` stored them, or as it would make them."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..paths import virtual_path
from ..store.backend import SqliteBackend
from ..store.backend import documents as store
from ..types import Notice

if TYPE_CHECKING:
    from ..config.settings import Config
    from ..store.backend import Backend
    from ..types import DocumentChunks


def document_chunks(
    index: Path | Backend, config: Config, ref: str, chunk_strategy: str | None = None
) -> DocumentChunks:
    """A document's chunks as stored; computed (not stored) when `update` has not made them yet.
    ``index``: a SQLite file or a backend (store/backend.py)."""
    from ..chunking import chunk_text
    from ..index.chunks import params_for
    from ..retrieve.get import resolve, split_range
    from ..store.backend import chunks as chunk_store
    from ..types import ChunkView, DocumentChunks

    base, _, _ = split_range(ref)
    # Chunking afresh can take a while on a big file: it runs after the connection is closed.
    backend = SqliteBackend(index) if isinstance(index, Path) else index
    with backend.reading() as conn:
        doc = resolve(conn, base, config.collections)
        collection = config.collections[doc.collection]
        params = params_for(collection, chunk_strategy)
        text = store.body(conn, doc.hash)
        stored = chunk_store.chunks_of(conn, doc.hash, params.fingerprint())
    warnings: list[Notice] = []
    items: Sequence[Any]
    if stored is not None:
        run, items = stored
        strategy_used, notes = run.strategy_used, run.warnings
    else:
        result = chunk_text(text, doc.path, params)
        strategy_used, notes, items = result.strategy_used, result.warnings, result.chunks
        warnings.append(
            Notice("CHUNKS_NOT_STORED", f"computed now, not stored: run `tansaku update -c {doc.collection}`")
        )
    warnings += [Notice(_note_code(note), note) for note in notes]
    return DocumentChunks(
        docid=doc.hash[:6],
        collection=doc.collection,
        path=doc.path,
        virtual_path=virtual_path(doc.collection, doc.path),
        disk_path=os.path.join(collection.path, *doc.path.split("/")),
        title=doc.title,
        params=params.fingerprint(),
        strategy_used=strategy_used,
        stored=stored is not None,
        chunks=tuple(
            ChunkView(
                c.seq,
                c.start_line,
                c.end_line,
                c.tokens,
                tuple(c.heading_path),
                c.oversized,
                text[c.start_char : c.end_char],
            )
            for c in items
        ),
        warnings=tuple(warnings),
    )


def _note_code(note: str) -> str:
    """BLOCK_SPLIT for a block too long to keep whole, CHUNKER_FALLBACK for regex used instead
    of a grammar, CHUNKER_NOTE for the rest (syntax errors in a code file)."""
    from ..chunking import long_block_kind

    if long_block_kind(note) is not None:
        return "BLOCK_SPLIT"
    return "CHUNKER_FALLBACK" if note.endswith("; used regex") else "CHUNKER_NOTE"
