"""The cache of extracted PDF, HTML, Word and EPUB text on PostgreSQL: store/extractions.py's
functions, rows and results."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..extractions import StoredExtraction
from .db import deferred


def get(conn: Any, content_hash: str, extractor: str) -> StoredExtraction | None:
    row = conn.execute(
        "SELECT hash, extractor, title, body, pages, notices, failure, extracted_at FROM extractions"
        " WHERE hash = %s AND extractor = %s",
        (content_hash, extractor),
    ).fetchone()
    if row is None:
        return None
    return StoredExtraction(
        hash=row[0],
        extractor=row[1],
        title=row[2],
        body=row[3],
        pages=tuple(json.loads(row[4])),
        notices=tuple(json.loads(row[5])),
        failure=row[6],
        extracted_at=row[7],
    )


def put(conn: Any, found: StoredExtraction, seen_at: str) -> None:
    conn.execute(
        "INSERT INTO extractions (hash, extractor, title, body, pages, notices, failure, extracted_at,"
        " seen_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (hash, extractor) DO UPDATE SET title = excluded.title, body = excluded.body,"
        " pages = excluded.pages, notices = excluded.notices, failure = excluded.failure,"
        " extracted_at = excluded.extracted_at, seen_at = excluded.seen_at",
        (
            found.hash,
            found.extractor,
            found.title,
            found.body,
            json.dumps(list(found.pages)),
            json.dumps(list(found.notices), ensure_ascii=False),
            found.failure,
            found.extracted_at,
            seen_at,
        ),
    )


def mark_seen(conn: Any, keys: Iterable[tuple[str, str]], seen_at: str) -> None:
    conn.executemany(
        "UPDATE extractions SET seen_at = %s WHERE hash = %s AND extractor = %s",
        [(seen_at, h, e) for h, e in keys],
    )


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


def pages_of(conn: Any, hashes: Sequence[str]) -> dict[str, tuple[int, ...]]:
    hashes = list(dict.fromkeys(hashes))
    if not hashes:
        return {}
    rows = conn.execute(
        "SELECT hash, pages FROM extractions WHERE hash = ANY(%s) AND failure IS NULL"
        " AND pages <> '[]' ORDER BY extracted_at",
        (hashes,),
    )
    return {row[0]: tuple(json.loads(row[1])) for row in rows}
