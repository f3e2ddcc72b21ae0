"""SQL for chunk rows on PostgreSQL: store/chunks.py's functions with the same names and results."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..chunks import FALLBACK_LIKE, ChunkRun, StoredChunk
from .db import deferred


def chunked_hashes(conn: Any, params: str, hashes: Iterable[str]) -> set[str]:
    wanted = list(set(hashes))
    if not wanted:
        return set()
    rows = conn.execute("SELECT hash FROM chunk_runs WHERE params = %s AND hash = ANY(%s)", (params, wanted))
    return {row[0] for row in rows}


class ChunkWriter:
    """Stores texts' chunks in batches (see store/chunks.py); call ``flush`` at the end."""

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
                bool(c.oversized),
            )
            for c in chunks
        )
        if len(self._runs) >= self.BATCH:
            self.flush()

    def flush(self) -> None:
        if not self._runs:
            return
        # A text keeps chunks for one set of parameters only: drop what it had before.
        hashes = [run[0] for run in self._runs]
        self.conn.execute("DELETE FROM chunks WHERE hash = ANY(%s)", (hashes,))
        self.conn.execute("DELETE FROM chunk_runs WHERE hash = ANY(%s)", (hashes,))
        with self.conn.copy(
            "COPY chunk_runs (hash, params, strategy_used, warnings, chunk_count) FROM STDIN"
        ) as copy:
            for run in self._runs:
                copy.write_row(run)
        with self.conn.copy(
            "COPY chunks (hash, params, seq, start_line, end_line, start_char, end_char, start_byte,"
            " end_byte, tokens, heading_path, oversized) FROM STDIN"
        ) as copy:
            for row in self._rows:
                copy.write_row(row)
        self._runs, self._rows = [], []


def chunks_of(conn: Any, content_hash: str, params: str) -> tuple[ChunkRun, list[StoredChunk]] | None:
    run = conn.execute(
        "SELECT strategy_used, warnings, chunk_count FROM chunk_runs WHERE hash = %s AND params = %s",
        (content_hash, params),
    ).fetchone()
    if run is None:
        return None
    rows = conn.execute(
        "SELECT seq, start_line, end_line, start_char, end_char, start_byte, end_byte, tokens, heading_path,"
        " oversized FROM chunks WHERE hash = %s AND params = %s ORDER BY seq",
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
    return ChunkRun(run[0], tuple(json.loads(run[1])), run[2]), chunks


def prune_chunks(conn: Any) -> None:
    """Drop chunks of texts no document has any more."""
    if not deferred(conn, "chunks", lambda: _prune_chunks(conn)):
        _prune_chunks(conn)


def _prune_chunks(conn: Any) -> None:
    conn.execute(
        "DELETE FROM chunks AS k WHERE NOT EXISTS (SELECT 1 FROM content AS c WHERE c.hash = k.hash)"
    )
    conn.execute(
        "DELETE FROM chunk_runs AS r WHERE NOT EXISTS (SELECT 1 FROM content AS c WHERE c.hash = r.hash)"
    )


def collection_chunk_counts(conn: Any, collection: str, params: str) -> tuple[int, int, int]:
    """As the SQLite store's: chunks of the distinct texts, fallbacks by their "used regex" note."""
    docs, fallbacks = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE r.warnings LIKE %s)"
        " FROM documents AS d JOIN chunk_runs AS r ON r.hash = d.hash AND r.params = %s"
        " WHERE d.collection = %s",
        (FALLBACK_LIKE, params, collection),
    ).fetchone()
    chunks = conn.execute(
        "SELECT coalesce(sum(chunk_count), 0) FROM chunk_runs WHERE params = %s"
        " AND hash IN (SELECT hash FROM documents WHERE collection = %s)",
        (params, collection),
    ).fetchone()[0]
    return int(docs), int(chunks), int(fallbacks)
