"""SQL for documents, their text and their keyword rows. Callers pass text already segmented."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .fields import DocumentFilter, delete_fields

# Column weights for bm25(), in the table's column order: path, title, body, headings (headings
# and the names a document defines), options (the command-line options it documents).
BM25_WEIGHTS = (1.5, 4.0, 1.0, 4.0, 4.0)
# For the words of a sentence, what a document defines is no better a signal than its body.
PROSE_WEIGHTS = (1.5, 4.0, 1.0, 0.0, 0.0)


@dataclass(frozen=True)
class StoredDocument:
    id: int
    collection: str
    path: str
    hash: str
    title: str
    size: int
    mtime_ns: int
    line_count: int
    repaired: bool
    indexed_at: str


_COLUMNS = "id, collection, path, hash, title, size, mtime_ns, line_count, repaired, indexed_at"


def _doc(row: Any) -> StoredDocument:
    return StoredDocument(
        id=row["id"],
        collection=row["collection"],
        path=row["path"],
        hash=row["hash"],
        title=row["title"],
        size=row["size"],
        mtime_ns=row["mtime_ns"],
        line_count=row["line_count"],
        repaired=bool(row["repaired"]),
        indexed_at=row["indexed_at"],
    )


def documents_in(conn: Any, collection: str) -> dict[str, StoredDocument]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE collection = ?", (collection,))
    return {row["path"]: _doc(row) for row in rows}


def list_documents(conn: Any, collection: str, prefix: str = "") -> list[StoredDocument]:
    if prefix:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM documents WHERE collection = ? AND (path = ? OR substr(path, 1, ?) = ?)"
            " ORDER BY path",
            (collection, prefix, len(prefix) + 1, prefix + "/"),
        )
    else:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM documents WHERE collection = ? ORDER BY path", (collection,)
        )
    return [_doc(row) for row in rows]


def all_documents(conn: Any, collections: Sequence[str] | None = None) -> list[StoredDocument]:
    if collections is None:
        rows = conn.execute(f"SELECT {_COLUMNS} FROM documents ORDER BY collection, path")
    else:
        marks = ",".join("?" * len(collections))
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM documents WHERE collection IN ({marks}) ORDER BY collection, path",
            tuple(collections),
        )
    return [_doc(row) for row in rows]


def document_at(conn: Any, collection: str, path: str) -> StoredDocument | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM documents WHERE collection = ? AND path = ?", (collection, path)
    ).fetchone()
    return _doc(row) if row else None


def documents_by_hash_prefix(conn: Any, prefix: str, limit: int = 20) -> list[StoredDocument]:
    # A range scan uses the hash index; LIKE would not (it is case-insensitive by default).
    upper = prefix + "\uffff"
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM documents WHERE hash >= ? AND hash < ? ORDER BY collection, path LIMIT ?",
        (prefix, upper, limit),
    )
    return [_doc(row) for row in rows]


def documents_by_ids(conn: Any, ids: Iterable[int]) -> dict[int, StoredDocument]:
    ids = list(ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE id IN ({marks})", ids)
    return {row["id"]: _doc(row) for row in rows}


def paths_by_ids(conn: Any, ids: Iterable[int]) -> dict[int, str]:
    """Each document's path (relative to its collection), by id."""
    ids = list(ids)
    if not ids:
        return {}
    marks = ",".join("?" * len(ids))
    return dict(conn.execute(f"SELECT id, path FROM documents WHERE id IN ({marks})", ids).fetchall())


def collection_paths(conn: Any, collection: str) -> dict[int, str]:
    """Every document's path in a collection, by id."""
    return dict(conn.execute("SELECT id, path FROM documents WHERE collection = ?", (collection,)).fetchall())


def body(conn: Any, content_hash: str) -> str:
    row = conn.execute("SELECT body FROM content WHERE hash = ?", (content_hash,)).fetchone()
    return row["body"] if row else ""


def bodies(conn: Any, hashes: Iterable[str]) -> dict[str, str]:
    hashes = list(set(hashes))
    if not hashes:
        return {}
    marks = ",".join("?" * len(hashes))
    rows = conn.execute(f"SELECT hash, body FROM content WHERE hash IN ({marks})", hashes)
    return {row["hash"]: row["body"] for row in rows}


def text_bytes(conn: Any, hashes: Iterable[str]) -> dict[str, int]:
    """Each text's size in UTF-8 bytes, without reading the texts (octet_length reads the record's
    header, not the text; multi-get's --max-bytes looks at the text, not at the file)."""
    hashes = list(set(hashes))
    sizes: dict[str, int] = {}
    for start in range(0, len(hashes), 500):  # below SQLite's bound on bound parameters
        part = hashes[start : start + 500]
        marks = ",".join("?" * len(part))
        rows = conn.execute(
            f"SELECT hash, octet_length(body) AS n FROM content WHERE hash IN ({marks})", part
        )
        sizes.update((row["hash"], row["n"]) for row in rows)
    return sizes


def has_content(conn: Any, content_hash: str) -> bool:
    return conn.execute("SELECT 1 FROM content WHERE hash = ?", (content_hash,)).fetchone() is not None


def put_content(conn: Any, content_hash: str, text: str) -> None:
    conn.execute("INSERT OR IGNORE INTO content (hash, body) VALUES (?, ?)", (content_hash, text))


@dataclass(frozen=True)
class FtsText:
    """Exactly what one document gives each FTS column (segmented already)."""

    path: str
    title: str
    body: str
    headings: str = ""
    options: str = ""


def insert_document(conn: Any, doc: StoredDocument, text: str, fts: FtsText) -> int:
    cursor = conn.execute(
        "INSERT INTO documents (collection, path, hash, title, size, mtime_ns, line_count, repaired,"
        " indexed_at, fts_path, fts_title, fts_body, fts_headings, fts_options)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            doc.collection,
            doc.path,
            doc.hash,
            doc.title,
            doc.size,
            doc.mtime_ns,
            doc.line_count,
            int(doc.repaired),
            doc.indexed_at,
            fts.path,
            fts.title,
            None if fts.body == text else fts.body,
            fts.headings,
            fts.options,
        ),
    )
    doc_id = int(cursor.lastrowid)
    _fts_insert(conn, doc_id, fts)
    return doc_id


def _fts_insert(conn: Any, doc_id: int, fts: FtsText) -> None:
    conn.execute(
        "INSERT INTO documents_fts (rowid, path, title, body, headings, options) VALUES (?, ?, ?, ?, ?, ?)",
        (doc_id, fts.path, fts.title, fts.body, fts.headings, fts.options),
    )


def _fts_stored(conn: Any, doc_id: int) -> FtsText | None:
    row = conn.execute(
        "SELECT d.fts_path, d.fts_title, coalesce(d.fts_body, c.body), d.fts_headings, d.fts_options"
        " FROM documents AS d JOIN content AS c ON c.hash = d.hash WHERE d.id = ?",
        (doc_id,),
    ).fetchone()
    return None if row is None else FtsText(row[0], row[1], row[2], row[3], row[4])


def _fts_delete(conn: Any, doc_id: int) -> None:
    """Remove a row from the contentless FTS table by replaying exactly what was inserted."""
    fts = _fts_stored(conn, doc_id)
    if fts is not None:
        conn.execute(
            "INSERT INTO documents_fts (documents_fts, rowid, path, title, body, headings, options)"
            " VALUES ('delete', ?, ?, ?, ?, ?, ?)",
            (doc_id, fts.path, fts.title, fts.body, fts.headings, fts.options),
        )


def delete_document(conn: Any, doc_id: int) -> None:
    _fts_delete(conn, doc_id)
    delete_fields(conn, doc_id)
    conn.execute("DELETE FROM documents WHERE id = ?", (doc_id,))


def move_document(
    conn: Any, doc_id: int, new_path: str, fts_path: str, size: int, mtime_ns: int, indexed_at: str
) -> None:
    """Same content at a new path: the row keeps its id; only the path tokens change in FTS."""
    old = _fts_stored(conn, doc_id)
    _fts_delete(conn, doc_id)
    conn.execute(
        "UPDATE documents SET path = ?, fts_path = ?, size = ?, mtime_ns = ?, indexed_at = ? WHERE id = ?",
        (new_path, fts_path, size, mtime_ns, indexed_at, doc_id),
    )
    if old is not None:
        _fts_insert(conn, doc_id, FtsText(fts_path, old.title, old.body, old.headings, old.options))


def touch_document(conn: Any, doc_id: int, size: int, mtime_ns: int) -> None:
    """Same content, new stat: remember the stat so the next update skips the file unread."""
    conn.execute("UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, doc_id))


def document_ids_in(conn: Any, collection: str) -> list[int]:
    return [row[0] for row in conn.execute("SELECT id FROM documents WHERE collection = ?", (collection,))]


def forget_collection_state(conn: Any, collection: str) -> None:
    """The collection's last update and the files it skipped go (its documents go one by one)."""
    conn.execute("DELETE FROM collection_state WHERE name = ?", (collection,))
    conn.execute("DELETE FROM skipped_files WHERE collection = ?", (collection,))


@dataclass(frozen=True)
class SkippedRow:
    """A file `update` read and skipped on purpose, as it was then (the skip stands while the
    file keeps this size and time and the file size limit is the same)."""

    path: str
    size: int
    mtime_ns: int
    reason: str
    max_bytes: int


def replace_skipped(conn: Any, collection: str, rows: Iterable[SkippedRow]) -> None:
    """The files this update of ``collection`` skipped, in place of the last update's."""
    conn.execute("DELETE FROM skipped_files WHERE collection = ?", (collection,))
    conn.executemany(
        "INSERT INTO skipped_files (collection, path, size, mtime_ns, reason, max_bytes)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(collection, r.path, r.size, r.mtime_ns, r.reason, r.max_bytes) for r in rows],
    )


def skipped_in(conn: Any, collection: str) -> list[SkippedRow]:
    rows = conn.execute(
        "SELECT path, size, mtime_ns, reason, max_bytes FROM skipped_files WHERE collection = ?"
        " ORDER BY path",
        (collection,),
    )
    return [SkippedRow(*row) for row in rows]


def prune_content(conn: Any) -> int:
    cursor = conn.execute("DELETE FROM content WHERE hash NOT IN (SELECT DISTINCT hash FROM documents)")
    return cursor.rowcount


def rename_collection(conn: Any, old: str, new: str) -> None:
    conn.execute("UPDATE documents SET collection = ? WHERE collection = ?", (new, old))
    conn.execute("UPDATE collection_state SET name = ? WHERE name = ?", (new, old))
    conn.execute("UPDATE skipped_files SET collection = ? WHERE collection = ?", (new, old))


def set_collection_state(conn: Any, name: str, root: str, last_update: str, indexer_version: int) -> None:
    conn.execute(
        "INSERT INTO collection_state (name, root, last_update, indexer_version) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (name) DO UPDATE SET root = excluded.root, last_update = excluded.last_update,"
        " indexer_version = excluded.indexer_version",
        (name, root, last_update, indexer_version),
    )


def indexer_version(conn: Any, name: str) -> int | None:
    row = conn.execute("SELECT indexer_version FROM collection_state WHERE name = ?", (name,)).fetchone()
    return None if row is None else int(row[0])


def collection_states(conn: Any) -> dict[str, str | None]:
    return {
        row["name"]: row["last_update"]
        for row in conn.execute("SELECT name, last_update FROM collection_state")
    }


def collection_counts(conn: Any) -> dict[str, tuple[int, int]]:
    """name -> (document count, total bytes)."""
    rows = conn.execute(
        "SELECT collection, count(*) AS n, sum(size) AS bytes FROM documents GROUP BY collection"
    )
    return {row["collection"]: (row["n"], row["bytes"] or 0) for row in rows}


def all_paths(conn: Any) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in conn.execute("SELECT collection, path FROM documents")]


# --- keyword search -----------------------------------------------------------------------------


def _weights(weights: Sequence[float]) -> str:
    return ", ".join(str(float(w)) for w in weights)


def keyword_search(
    conn: Any,
    expression: str,
    collection: str | None,
    limit: int | None,
    weights: Sequence[float] = BM25_WEIGHTS,
    where: DocumentFilter | None = None,
) -> list[tuple[int, float]]:
    """(document id, raw bm25) best first, for one collection (None: the whole index, without
    the join that filters by collection), among the documents ``where`` lets through (all
    without one), before the limit. bm25 is negative: lower is better."""
    score = f"bm25(documents_fts, {_weights(weights)})"
    if collection is None:
        sql = f"SELECT rowid, {score} AS score FROM documents_fts WHERE documents_fts MATCH ?"
        params: tuple[Any, ...] = (expression,)
        sql, params = _filtered(sql, params, "rowid", where)
        sql += " ORDER BY score, rowid"
    else:
        sql = (
            f"SELECT f.rowid AS id, {score} AS score FROM documents_fts AS f"
            " JOIN documents AS d ON d.id = f.rowid"
            " WHERE documents_fts MATCH ? AND d.collection = ?"
        )
        params = (expression, collection)
        sql, params = _filtered(sql, params, "f.rowid", where)
        sql += " ORDER BY score, d.path"
    if limit is not None:
        sql += " LIMIT ?"
        params += (limit,)
    return [(row[0], row[1]) for row in conn.execute(sql, params)]


def _filtered(
    sql: str, params: tuple[Any, ...], rowid: str, where: DocumentFilter | None
) -> tuple[str, tuple[Any, ...]]:
    # The unary + keeps FTS5 from taking the id list as its plan (one phrase lookup per id): the
    # match runs once, and its rows are checked against the filter's ids.
    if where is None:
        return sql, params
    return f"{sql} AND +{rowid} IN ({where.sql})", params + where.params


def keyword_count(
    conn: Any, expression: str, collection: str | None, where: DocumentFilter | None = None
) -> int:
    if collection is None and where is None:
        return phrase_frequency(conn, expression)
    if collection is None:
        sql, params = "SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?", (expression,)
        sql, params = _filtered(sql, params, "rowid", where)
    else:
        sql = (
            "SELECT count(*) FROM documents_fts AS f JOIN documents AS d ON d.id = f.rowid"
            " WHERE documents_fts MATCH ? AND d.collection = ?"
        )
        sql, params = _filtered(sql, (expression, collection), "f.rowid", where)
    return int(conn.execute(sql, params).fetchone()[0])


def sole_collection(conn: Any) -> str | None:
    """The name of the only collection in the index, if there is exactly one."""
    rows = conn.execute("SELECT name FROM collection_state LIMIT 2").fetchall()
    return rows[0][0] if len(rows) == 1 else None


def document_total(conn: Any) -> int:
    return int(conn.execute("SELECT count(*) FROM documents").fetchone()[0])


def phrase_frequency(conn: Any, expression: str) -> int:
    """How many documents (in any collection) match: the df of BM25's IDF."""
    return int(
        conn.execute(
            "SELECT count(*) FROM documents_fts WHERE documents_fts MATCH ?", (expression,)
        ).fetchone()[0]
    )


def defined_names(conn: Any, ids: Sequence[int], column: str) -> dict[int, list[str]]:
    """The lines of a document's ``headings`` or ``options`` column (what it defines), by id; for
    ``headings``, its title first (``package-lock.json`` is the title of the page defining it)."""
    if column not in ("headings", "options") or not ids:
        return {}
    marks = ",".join("?" * len(ids))
    title = "title" if column == "headings" else "''"
    rows = conn.execute(f"SELECT id, {title}, fts_{column} FROM documents WHERE id IN ({marks})", list(ids))
    return {row[0]: [*([row[1]] if row[1] else []), *row[2].splitlines()] for row in rows}


def option_defined(conn: Any, name: str) -> bool:
    """Whether any document lists ``name`` as a command-line option (the options column)."""
    return _any_match(conn, 'options : "' + name.replace('"', '""') + '"')


def title_names(conn: Any, word: str) -> bool:
    """Whether any document's title has ``word`` (a man page's is its file name: ``umount.8.txt``)."""
    return _any_match(conn, 'title : "' + word.replace('"', '""') + '"')


def _any_match(conn: Any, expression: str) -> bool:
    return (
        conn.execute(
            "SELECT 1 FROM documents_fts WHERE documents_fts MATCH ? LIMIT 1", (expression,)
        ).fetchone()
        is not None
    )


def phrase_documents(conn: Any, expression: str, ids: Sequence[int]) -> set[int]:
    """Which of these documents match (a pass over the matches' rowids: no bm25, 3-4x cheaper)."""
    wanted = set(ids)
    rows = conn.execute("SELECT rowid FROM documents_fts WHERE documents_fts MATCH ?", (expression,))
    return {row[0] for row in rows if row[0] in wanted}


def phrase_bm25(
    conn: Any, expression: str, ids: Sequence[int], weights: Sequence[float] = BM25_WEIGHTS
) -> dict[int, float]:
    """Raw bm25 of one phrase for these documents (absent = the document does not contain it).

    The match runs once and the ids are filtered here: a ``rowid IN (...)`` constraint makes
    FTS5 re-evaluate the phrase per candidate, about 10x slower for phrases of common words.
    """
    if not ids:
        return {}
    wanted = set(ids)
    rows = conn.execute(
        f"SELECT rowid, bm25(documents_fts, {_weights(weights)}) FROM documents_fts"
        " WHERE documents_fts MATCH ?",
        (expression,),
    )
    return {row[0]: row[1] for row in rows if row[0] in wanted}


def documents_with_hashes(conn: Any, hashes: Sequence[str]) -> list[StoredDocument]:
    found: list[StoredDocument] = []
    for start in range(0, len(hashes), 500):
        batch = list(hashes[start : start + 500])
        marks = ",".join("?" * len(batch))
        rows = conn.execute(f"SELECT {_COLUMNS} FROM documents WHERE hash IN ({marks})", batch)
        found.extend(_doc(row) for row in rows)
    return found
