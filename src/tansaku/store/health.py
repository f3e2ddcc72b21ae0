"""Read-only integrity queries for `tansaku doctor`: every statement reads, none writes.

``stored_vectors`` serves both backends (store/dialect.py); store/postgres/health.py holds
PostgreSQL's own checks. ``quick_check`` is store/db.py's (it also explains a failed query).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import routed
from .db import QUICK_CHECK_ROWS, quick_check
from .dialect import both, run

__all__ = ["QUICK_CHECK_ROWS", "StoredVectors", "fts_and_document_counts", "quick_check", "stored_vectors"]


def fts_and_document_counts(conn: Any) -> tuple[int, int]:
    """(rows in the keyword index, documents). A contentless FTS5 table keeps one docsize row per
    indexed row, so counting those is exact without reading any tokens."""
    fts = conn.execute("SELECT count(*) FROM documents_fts_docsize").fetchone()[0]
    documents = conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    return int(fts), int(documents)


@dataclass(frozen=True)
class StoredVectors:
    model_path: str
    dims: int
    vectors: int  # chunk windows linked to this model's embeddings


@both
def stored_vectors(conn: Any) -> list[StoredVectors]:
    """Each embedding model the index holds vectors of, with their dimensions, most vectors first."""
    if not routed.db.has_table(conn, "embed_models"):
        return []
    rows = run(
        conn,
        "SELECT m.model_path, m.dims, count(v.embedding_id) FROM embed_models AS m"
        " LEFT JOIN chunk_vectors AS v ON v.fingerprint = m.fingerprint"
        " GROUP BY m.fingerprint, m.model_path, m.dims ORDER BY count(v.embedding_id) DESC, m.model_path",
    )
    return [StoredVectors(str(path), int(dims), int(count)) for path, dims, count in rows]


def vec_version(conn: Any) -> str:
    """sqlite-vec's version, from a connection that loaded it."""
    return str(conn.execute("SELECT vec_version()").fetchone()[0])
