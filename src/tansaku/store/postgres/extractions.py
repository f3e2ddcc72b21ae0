"""The cache of extracted PDF, HTML, Word and EPUB text on PostgreSQL: what differs from
store/extractions.py, whose other functions serve both backends."""

from __future__ import annotations

from typing import Any

from .db import deferred


def prune(conn: Any, older_than: str) -> int:
    if deferred(conn, "extractions", lambda: _prune(conn, older_than)):
        return 0
    return _prune(conn, older_than)


def _prune(conn: Any, older_than: str) -> int:
    cursor = conn.execute(
        "DELETE FROM extractions AS x WHERE seen_at < %s"
        " AND NOT EXISTS (SELECT 1 FROM documents AS d WHERE d.hash = x.hash)",
        (older_than,),
    )
    return int(cursor.rowcount)
