"""SQL for chunk rows: keyed by content hash + chunking parameters, text sliced from `content`.

Written once for both backends (store/dialect.py) but for ``prune_chunks``, which PostgreSQL's
collection writers defer to their commit (store/postgres/chunks.py).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import routed
from .dialect import both, dialect, run


@dataclass(frozen=True)
class StoredChunk:
    seq: int
    start_line: int
    end_line: int
    start_char: int
    end_char: int
    start_byte: int
    end_byte: int
    tokens: int
    heading_path: tuple[str, ...]
    oversized: bool


@dataclass(frozen=True)
class ChunkRun:
    strategy_used: str
    warnings: tuple[str, ...]
    chunk_count: int


@both
def chunked_hashes(conn: Any, params: str, hashes: Iterable[str]) -> set[str]:
    """Which of these texts already have chunks for these parameters."""
    done: set[str] = set()
    sql = dialect(conn)
    for batch in sql.batches(list(set(hashes))):
        test, values = sql.one_of("hash", batch)
        rows = run(conn, f"SELECT hash FROM chunk_runs WHERE params = ? AND {test}", (params, *values))
        done.update(row[0] for row in rows)
    return done


@both
class ChunkWriter:
    """Stores texts' chunks in batches: one statement per few hundred texts instead of several
    per text (a cold update of 10,000 files chunks them all). Call ``flush`` at the end."""

    BATCH = 400

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._runs: list[tuple[str, str, str, str, int]] = []
        self._rows: list[tuple[Any, ...]] = []

    def add(
        self,
        content_hash: str,
        params: str,
        strategy_used: str,
        warnings: Sequence[str],
        chunks: Sequence[StoredChunk],
    ) -> None:
        warnings_json = json.dumps(list(warnings), ensure_ascii=False)
        self._runs.append((content_hash, params, strategy_used, warnings_json, len(chunks)))
        self._rows.extend(
            (
                content_hash,
                params,
                c.seq,
                c.start_line,
                c.end_line,
                c.start_char,
                c.end_char,
                c.start_byte,
                c.end_byte,
                c.tokens,
                json.dumps(list(c.heading_path), ensure_ascii=False),
                bool(c.oversized),  # SQLite stores 1 or 0
            )
            for c in chunks
        )
        if len(self._runs) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        if not self._runs:
            return
        # A text keeps chunks for one set of parameters only: drop what it had before.
        # BATCH texts at most: one list of values within SQLite's host-parameter limit.
        test, hashes = dialect(self.conn).one_of("hash", [text[0] for text in self._runs])
        run(self.conn, f"DELETE FROM chunks WHERE {test}", hashes)
        run(self.conn, f"DELETE FROM chunk_runs WHERE {test}", hashes)
        insert = routed.db.insert_rows
        insert(self.conn, "chunk_runs", "hash, params, strategy_used, warnings, chunk_count", self._runs)
        insert(
            self.conn,
            "chunks",
            "hash, params, seq, start_line, end_line, start_char, end_char, start_byte, end_byte, tokens,"
            " heading_path, oversized",
            self._rows,
        )
        self._runs, self._rows = [], []


@both
def chunks_of(conn: Any, content_hash: str, params: str) -> tuple[ChunkRun, list[StoredChunk]] | None:
    found = run(
        conn,
        "SELECT strategy_used, warnings, chunk_count FROM chunk_runs WHERE hash = ? AND params = ?",
        (content_hash, params),
    ).fetchone()
    if found is None:
        return None
    rows = run(
        conn,
        "SELECT seq, start_line, end_line, start_char, end_char, start_byte, end_byte, tokens, heading_path,"
        " oversized FROM chunks WHERE hash = ? AND params = ? ORDER BY seq",
        (content_hash, params),
    )
    chunks = [
        StoredChunk(
            seq=row[0],
            start_line=row[1],
            end_line=row[2],
            start_char=row[3],
            end_char=row[4],
            start_byte=row[5],
            end_byte=row[6],
            tokens=row[7],
            heading_path=tuple(json.loads(row[8])),
            oversized=bool(row[9]),
        )
        for row in rows
    ]
    return ChunkRun(found[0], tuple(json.loads(found[1])), found[2]), chunks


def prune_chunks(conn: Any) -> None:
    """Drop chunks of texts no document has any more."""
    conn.execute("DELETE FROM chunks WHERE hash NOT IN (SELECT hash FROM content)")
    conn.execute("DELETE FROM chunk_runs WHERE hash NOT IN (SELECT hash FROM content)")


@both
def collection_chunk_counts(conn: Any, collection: str, params: str) -> tuple[int, int, int]:
    """(documents chunked with these parameters, the chunks of their texts, documents whose
    chunker fell back to regex).

    A text held by several documents (copies of a file) is chunked, embedded and counted once:
    the chunks are those of the distinct texts, the number the vector counts are measured against.
    A fallback is told by the chunker's "...; used regex" note, not by any note (a long block
    split at line breaks is a note, not a fallback).
    """
    docs, fallbacks = run(
        conn,
        "SELECT count(*), count(*) FILTER (WHERE r.warnings LIKE ?)"
        " FROM documents AS d JOIN chunk_runs AS r ON r.hash = d.hash AND r.params = ?"
        " WHERE d.collection = ?",
        (FALLBACK_LIKE, params, collection),
    ).fetchone()
    chunks = run(
        conn,
        "SELECT coalesce(sum(chunk_count), 0) FROM chunk_runs WHERE params = ?"
        " AND hash IN (SELECT hash FROM documents WHERE collection = ?)",
        (params, collection),
    ).fetchone()[0]
    return int(docs), int(chunks), int(fallbacks)


# What chunking/__init__.py's fallback notes end with, as a LIKE pattern over the stored JSON list.
FALLBACK_LIKE = '%; used regex"%'
