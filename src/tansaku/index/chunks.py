"""Chunking a collection's texts after its documents are indexed.

Only texts with no chunks for the current parameters are chunked, so an unchanged or moved file
costs nothing and a parameter change (strategy, chunker version) re-chunks exactly once.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..chunking import ChunkParams, chunk_text, long_block_kind
from ..store.backend import chunks as chunk_store
from ..store.backend import documents as store
from ..types import Collection
from .progress import Progress


@dataclass
class ChunkingSummary:
    documents: int = 0  # texts chunked in this run
    chunks: int = 0
    warnings: list[str] = field(default_factory=list)  # "path: warning", but not the split blocks
    # Blocks longer than max_tokens split at line boundaries, by kind ("fenced code block": 3),
    # and the paths they are in: a documentation folder has many, so they are summed up.
    split_blocks: Counter[str] = field(default_factory=Counter)
    split_paths: list[str] = field(default_factory=list)
    seconds: float = 0.0  # time spent chunking and storing chunks
    writer: chunk_store.ChunkWriter | None = None

    def notes(self, collection: str) -> list[str]:
        """The notes for the update report: one line for all the split blocks, then the rest."""
        if not self.split_blocks:
            return list(self.warnings)
        return [split_blocks_note(self.split_blocks, self.split_paths, collection), *self.warnings]

    def flush(self) -> None:
        if self.writer is not None:
            started = time.perf_counter()
            self.writer.flush()
            self.seconds += time.perf_counter() - started


def params_for(collection: Collection, strategy: str | None = None) -> ChunkParams:
    # A transcript's chunks are its turns, cut when it is indexed: a code strategy has no
    # meaning there, and a different one would make its stored chunks stop matching.
    if collection.type != "files":
        return ChunkParams(strategy="regex")
    return ChunkParams(strategy=strategy or collection.chunk_strategy)


def pending_texts(conn: Any, collection: Collection, params: ChunkParams) -> dict[str, str]:
    """content hash -> one path that has it, for texts not chunked with these parameters."""
    docs = store.documents_in(conn, collection.name)
    by_hash: dict[str, str] = {}
    for path, doc in sorted(docs.items()):
        by_hash.setdefault(doc.hash, path)
    done = chunk_store.chunked_hashes(conn, params.fingerprint(), by_hash)
    return {h: p for h, p in by_hash.items() if h not in done}


def chunk_one(
    conn: Any, content_hash: str, path: str, text: str, params: ChunkParams, summary: ChunkingSummary
) -> None:
    """Chunk one text and queue its chunks (``summary.flush()`` stores the rest). The caller holds
    the write transaction."""
    started = time.perf_counter()
    result = chunk_text(text, path, params)
    if summary.writer is None:
        summary.writer = chunk_store.ChunkWriter(conn)
    summary.writer.add(
        content_hash,
        params.fingerprint(),
        result.strategy_used,
        result.warnings,
        [
            chunk_store.StoredChunk(
                seq=c.seq,
                start_line=c.start_line,
                end_line=c.end_line,
                start_char=c.start_char,
                end_char=c.end_char,
                start_byte=c.start_byte,
                end_byte=c.end_byte,
                tokens=c.tokens,
                heading_path=c.heading_path,
                oversized=c.oversized,
            )
            for c in result.chunks
        ],
    )
    summary.documents += 1
    summary.chunks += len(result.chunks)
    split = []
    for warning in result.warnings:
        kind = long_block_kind(warning)
        if kind is None:
            summary.warnings.append(f"{path}: {warning}")
        else:
            split.append(kind)
    if split:
        summary.split_blocks.update(split)
        summary.split_paths.append(path)
    summary.seconds += time.perf_counter() - started


def chunk_collection(
    conn: Any,
    collection: Collection,
    params: ChunkParams,
    progress: Progress | None = None,
    summary: ChunkingSummary | None = None,
) -> ChunkingSummary:
    """Chunk the texts still pending (the update chunks new texts as it stores them, so this is
    for texts kept from before, e.g. after a strategy change). The caller holds the transaction."""
    summary = summary or ChunkingSummary()
    pending = pending_texts(conn, collection, params)
    for done, (content_hash, path) in enumerate(pending.items(), start=1):
        if progress and done % 100 == 0:
            progress(done, len(pending), "chunking")
        chunk_one(conn, content_hash, path, store.body(conn, content_hash), params, summary)
    summary.flush()
    return summary


def split_blocks_note(kinds: Counter[str], paths: list[str], collection: str) -> str:
    """``3 fenced code blocks longer than max_tokens were split at line boundaries, in 3 files
    (`tansaku chunks docs/PATH` shows where)``: one line however many there are."""
    total = sum(kinds.values())
    parts = [_blocks(kind, n) for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))]
    what = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    where = (
        f"in {paths[0]} (`tansaku chunks {collection}/{paths[0]}` shows where)"
        if len(paths) == 1
        else f"in {len(paths)} files (`tansaku chunks {collection}/PATH` shows where)"
    )
    verb = "was" if total == 1 else "were"
    return f"{what} longer than max_tokens {verb} split at line boundaries, {where}"


def _blocks(kind: str, n: int) -> str:
    noun = "front matter block" if kind == "front matter" else kind
    return f"{n} {noun}" + ("" if n == 1 else "s")
