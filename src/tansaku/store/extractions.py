"""SQL for the cache of text extracted from PDF, HTML, Word and EPUB files (``extractions``).

A row is keyed by the document's content hash (the file's bytes with the extractor's name,
``index/extracting.py``) and the extractor that read it (format and version):
an unchanged file is read from here, never extracted again. A failed extraction is a row too,
with ``failure`` set and no body, so a bad file is tried once per extractor version.

The functions marked ``@both`` serve PostgreSQL too (store/dialect.py); its ``prune`` is
store/postgres/extractions.py's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlean

from .dialect import both, dialect, run, run_many

# A row no document uses and no update has looked at for this long is deleted.
KEEP_UNUSED_DAYS = 30


@dataclass(frozen=True)
class StoredExtraction:
    hash: str
    extractor: str
    title: str
    body: str | None  # None when the extraction failed
    pages: tuple[int, ...]  # first line of each page (PDF); empty for formats without pages
    notices: tuple[str, ...]  # what was left out, e.g. pages past the limit
    failure: str | None  # the skip reason ("encrypted (...)") when it failed
    extracted_at: str


@both
def get(conn: Any, content_hash: str, extractor: str) -> StoredExtraction | None:
    """The cached extraction, or None (also when the index predates the table: a dry run reads
    an index as it is, without migrating it)."""
    try:
        row = run(
            conn,
            "SELECT hash, extractor, title, body, pages, notices, failure, extracted_at FROM extractions"
            " WHERE hash = ? AND extractor = ?",
            (content_hash, extractor),
        ).fetchone()
    except sqlean.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
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


@both
def put(conn: Any, found: StoredExtraction, seen_at: str) -> None:
    run(
        conn,
        "INSERT INTO extractions (hash, extractor, title, body, pages, notices, failure, extracted_at,"
        " seen_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
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


@both
def mark_seen(conn: Any, keys: Iterable[tuple[str, str]], seen_at: str) -> None:
    run_many(
        conn,
        "UPDATE extractions SET seen_at = ? WHERE hash = ? AND extractor = ?",
        [(seen_at, h, e) for h, e in keys],
    )


def prune(conn: Any, older_than: str) -> int:
    """Delete rows that no document uses and that were last seen before ``older_than``."""
    cursor = conn.execute(
        "DELETE FROM extractions WHERE seen_at < ? AND hash NOT IN (SELECT DISTINCT hash FROM documents)",
        (older_than,),
    )
    return cursor.rowcount


@both
def pages_of(conn: Any, hashes: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """The page starts of these texts, for those that have pages (a hit's page is looked up here)."""
    hashes = list(dict.fromkeys(hashes))
    if not hashes:
        return {}
    among, params = dialect(conn).one_of("hash", hashes)
    rows = run(
        conn,
        f"SELECT hash, pages FROM extractions WHERE {among} AND failure IS NULL"
        " AND pages != '[]' ORDER BY extracted_at",
        params,
    )
    return {row[0]: tuple(json.loads(row[1])) for row in rows}
