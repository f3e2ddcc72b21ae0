"""Chunk rows on PostgreSQL: what differs from store/chunks.py (written once for both backends).

``prune_chunks`` waits for a collection writer's commit (store/postgres/db.deferred), and finds
the texts no document has with NOT EXISTS.
"""

from __future__ import annotations

from typing import Any

from .db import deferred


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
