"""SQL for documents, their text and their keyword rows. Callers pass text already segmented.

Written once for both backends (``@both``, store/dialect.py) but for what differs: how a
document's keyword columns go into and out of the keyword index (FTS5 here; postings on
PostgreSQL: ``insert_document``, ``unindex_keywords``, ``index_keywords``), keyword search and
its statistics, ``put_content``, ``prune_content`` and ``rename_collection``. PostgreSQL holds an
update's new documents back and sends them in batches (``batched``); a shared read sends them
first (``send_held``, nothing to do on SQLite, which writes each document at once).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from . import routed
from .dialect import both, dialect, run, run_many
from .fields import DocumentFilter

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
# The highest code point: ``prefix <= hash < prefix + _LAST`` is every hash that starts with prefix.
_LAST = "\U0010ffff"


def _doc(row: Sequence[Any]) -> StoredDocument:
    return StoredDocument(
        id=int(row[0]),
        collection=row[1],
        path=row[2],
        hash=row[3],
        title=row[4],
        size=int(row[5]),
        mtime_ns=int(row[6]),
        line_count=int(row[7]),
        repaired=bool(row[8]),
        indexed_at=row[9],
    )


def send_held(conn: Any) -> None:
    """The new documents an update holds back, in the database (before a statement that reads or
    changes documents). SQLite holds none: each is written at once."""


def batched(conn: Any) -> contextlib.AbstractContextManager[None]:
    """New documents written in batches inside the block (index/update.py's apply of a file
    collection); SQLite's are local writes already."""
    return contextlib.nullcontext()


@both
def documents_in(conn: Any, collection: str) -> dict[str, StoredDocument]:
    routed.documents.send_held(conn)
    rows = run(conn, f"SELECT {_COLUMNS} FROM documents WHERE collection = ?", (collection,))
    return {row[2]: _doc(row) for row in rows}


@both
def list_documents(conn: Any, collection: str, prefix: str = "") -> list[StoredDocument]:
    routed.documents.send_held(conn)
    if prefix:
        rows = run(
            conn,
            f"SELECT {_COLUMNS} FROM documents WHERE collection = ? AND (path = ? OR substr(path, 1, ?) = ?)"
            " ORDER BY path",
            (collection, prefix, len(prefix) + 1, prefix + "/"),
        )
    else:
        rows = run(
            conn, f"SELECT {_COLUMNS} FROM documents WHERE collection = ? ORDER BY path", (collection,)
        )
    return [_doc(row) for row in rows]


@both
def all_documents(conn: Any, collections: Sequence[str] | None = None) -> list[StoredDocument]:
    routed.documents.send_held(conn)
    if collections is None:
        rows = run(conn, f"SELECT {_COLUMNS} FROM documents ORDER BY collection, path")
    else:
        condition, params = dialect(conn).one_of("collection", collections)
        rows = run(
            conn, f"SELECT {_COLUMNS} FROM documents WHERE {condition} ORDER BY collection, path", params
        )
    return [_doc(row) for row in rows]


@both
def document_at(conn: Any, collection: str, path: str) -> StoredDocument | None:
    routed.documents.send_held(conn)
    row = run(
        conn, f"SELECT {_COLUMNS} FROM documents WHERE collection = ? AND path = ?", (collection, path)
    ).fetchone()
    return _doc(row) if row else None


@both
def documents_by_hash_prefix(conn: Any, prefix: str, limit: int = 20) -> list[StoredDocument]:
    # A range scan uses the hash index; LIKE would not (it is case-insensitive by default).
    routed.documents.send_held(conn)
    rows = run(
        conn,
        f"SELECT {_COLUMNS} FROM documents WHERE hash >= ? AND hash < ? ORDER BY collection, path LIMIT ?",
        (prefix, prefix + _LAST, limit),
    )
    return [_doc(row) for row in rows]


def _in_batches(conn: Any, select: str, column: str, values: Iterable[Any]) -> Iterator[Any]:
    """The rows of ``select`` (it ends in WHERE) for ``column`` one of ``values``, as few
    statements as the dialect needs."""
    words = dialect(conn)
    for part in words.batches(list(values)):
        condition, params = words.one_of(column, part)
        yield from run(conn, f"{select} {condition}", params)


@both
def documents_by_ids(conn: Any, ids: Iterable[int]) -> dict[int, StoredDocument]:
    routed.documents.send_held(conn)
    rows = _in_batches(conn, f"SELECT {_COLUMNS} FROM documents WHERE", "id", ids)
    return {int(row[0]): _doc(row) for row in rows}


@both
def paths_by_ids(conn: Any, ids: Iterable[int]) -> dict[int, str]:
    """Each document's path (relative to its collection), by id."""
    routed.documents.send_held(conn)
    return {int(i): p for i, p in _in_batches(conn, "SELECT id, path FROM documents WHERE", "id", ids)}


@both
def collection_paths(conn: Any, collection: str) -> dict[int, str]:
    """Every document's path in a collection, by id."""
    routed.documents.send_held(conn)
    rows = run(conn, "SELECT id, path FROM documents WHERE collection = ?", (collection,))
    return {int(i): p for i, p in rows}


@both
def body(conn: Any, content_hash: str) -> str:
    routed.documents.send_held(conn)
    row = run(conn, "SELECT body FROM content WHERE hash = ?", (content_hash,)).fetchone()
    return row[0] if row else ""


@both
def bodies(conn: Any, hashes: Iterable[str]) -> dict[str, str]:
    routed.documents.send_held(conn)
    return {h: b for h, b in _in_batches(conn, "SELECT hash, body FROM content WHERE", "hash", set(hashes))}


@both
def text_bytes(conn: Any, hashes: Iterable[str]) -> dict[str, int]:
    """Each text's size in UTF-8 bytes, without reading the texts (octet_length reads the record's
    header, not the text; multi-get's --max-bytes looks at the text, not at the file)."""
    routed.documents.send_held(conn)
    select = "SELECT hash, octet_length(body) FROM content WHERE"
    return {h: int(n) for h, n in _in_batches(conn, select, "hash", set(hashes))}


@both
def has_content(conn: Any, content_hash: str) -> bool:
    routed.documents.send_held(conn)
    return run(conn, "SELECT 1 FROM content WHERE hash = ?", (content_hash,)).fetchone() is not None


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


def document_values(doc: StoredDocument, text: str, fts: FtsText) -> tuple[Any, ...]:
    """A new document's row, from ``collection`` to ``fts_options`` in the table's order (a body
    that is the text itself is not kept twice)."""
    return (
        doc.collection,
        doc.path,
        doc.hash,
        doc.title,
        doc.size,
        doc.mtime_ns,
        doc.line_count,
        bool(doc.repaired),
        doc.indexed_at,
        fts.path,
        fts.title,
        None if fts.body == text else fts.body,
        fts.headings,
        fts.options,
    )


def insert_document(conn: Any, doc: StoredDocument, text: str, fts: FtsText) -> int:
    cursor = conn.execute(
        "INSERT INTO documents (collection, path, hash, title, size, mtime_ns, line_count, repaired,"
        " indexed_at, fts_path, fts_title, fts_body, fts_headings, fts_options)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        document_values(doc, text, fts),
    )
    doc_id = int(cursor.lastrowid)
    index_keywords(conn, doc_id, fts)
    return doc_id


def index_keywords(conn: Any, doc_id: int, fts: FtsText) -> None:
    """A document's keyword columns into the keyword index (its row holds them already)."""
    conn.execute(
        "INSERT INTO documents_fts (rowid, path, title, body, headings, options) VALUES (?, ?, ?, ?, ?, ?)",
        (doc_id, fts.path, fts.title, fts.body, fts.headings, fts.options),
    )


@both
def stored_keywords(conn: Any, doc_id: int) -> FtsText | None:
    """What the document's keyword columns hold, as its row keeps them."""
    routed.documents.send_held(conn)
    row = run(
        conn,
        "SELECT d.fts_path, d.fts_title, coalesce(d.fts_body, c.body), d.fts_headings, d.fts_options"
        " FROM documents AS d JOIN content AS c ON c.hash = d.hash WHERE d.id = ?",
        (doc_id,),
    ).fetchone()
    return None if row is None else FtsText(row[0], row[1], row[2], row[3], row[4])


def unindex_keywords(conn: Any, doc_id: int, stored: FtsText | None = None) -> None:
    """A document's keyword columns out of the keyword index: the contentless FTS table's row
    removed by replaying exactly what was inserted (``stored``, when the caller has read it)."""
    fts = stored if stored is not None else stored_keywords(conn, doc_id)
    if fts is not None:
        conn.execute(
            "INSERT INTO documents_fts (documents_fts, rowid, path, title, body, headings, options)"
            " VALUES ('delete', ?, ?, ?, ?, ?, ?)",
            (doc_id, fts.path, fts.title, fts.body, fts.headings, fts.options),
        )


@both
def delete_document(conn: Any, doc_id: int) -> None:
    routed.documents.unindex_keywords(conn, doc_id)
    routed.fields.delete_fields(conn, doc_id)
    run(conn, "DELETE FROM documents WHERE id = ?", (doc_id,))


@both
def move_document(
    conn: Any, doc_id: int, new_path: str, fts_path: str, size: int, mtime_ns: int, indexed_at: str
) -> None:
    """Same content at a new path: the row keeps its id; its keyword columns go out of the index
    and back in with the new path."""
    old = stored_keywords(conn, doc_id)
    routed.documents.unindex_keywords(conn, doc_id, old)
    run(
        conn,
        "UPDATE documents SET path = ?, fts_path = ?, size = ?, mtime_ns = ?, indexed_at = ? WHERE id = ?",
        (new_path, fts_path, size, mtime_ns, indexed_at, doc_id),
    )
    if old is not None:
        moved = FtsText(fts_path, old.title, old.body, old.headings, old.options)
        routed.documents.index_keywords(conn, doc_id, moved)


@both
def touch_document(conn: Any, doc_id: int, size: int, mtime_ns: int) -> None:
    """Same content, new stat: remember the stat so the next update skips the file unread."""
    routed.documents.send_held(conn)
    run(conn, "UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, doc_id))


@both
def document_ids_in(conn: Any, collection: str) -> list[int]:
    routed.documents.send_held(conn)
    return [int(row[0]) for row in run(conn, "SELECT id FROM documents WHERE collection = ?", (collection,))]


@both
def forget_collection_state(conn: Any, collection: str) -> None:
    """The collection's last update and the files it skipped go (its documents go one by one)."""
    run(conn, "DELETE FROM collection_state WHERE name = ?", (collection,))
    run(conn, "DELETE FROM skipped_files WHERE collection = ?", (collection,))


@dataclass(frozen=True)
class SkippedRow:
    """A file `update` read and skipped on purpose, as it was then (the skip stands while the
    file keeps this size and time and the file size limit is the same)."""

    path: str
    size: int
    mtime_ns: int
    reason: str
    max_bytes: int


@both
def replace_skipped(conn: Any, collection: str, rows: Iterable[SkippedRow]) -> None:
    """The files this update of ``collection`` skipped, in place of the last update's."""
    run(conn, "DELETE FROM skipped_files WHERE collection = ?", (collection,))
    run_many(
        conn,
        "INSERT INTO skipped_files (collection, path, size, mtime_ns, reason, max_bytes)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        [(collection, r.path, r.size, r.mtime_ns, r.reason, r.max_bytes) for r in rows],
    )


@both
def skipped_in(conn: Any, collection: str) -> list[SkippedRow]:
    rows = run(
        conn,
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


@both
def set_collection_state(conn: Any, name: str, root: str, last_update: str, indexer_version: int) -> None:
    run(
        conn,
        "INSERT INTO collection_state (name, root, last_update, indexer_version) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (name) DO UPDATE SET root = excluded.root, last_update = excluded.last_update,"
        " indexer_version = excluded.indexer_version",
        (name, root, last_update, indexer_version),
    )


@both
def indexer_version(conn: Any, name: str) -> int | None:
    row = run(conn, "SELECT indexer_version FROM collection_state WHERE name = ?", (name,)).fetchone()
    return None if row is None else int(row[0])


@both
def collection_states(conn: Any) -> dict[str, str | None]:
    return {name: last for name, last in run(conn, "SELECT name, last_update FROM collection_state")}


@both
def collection_counts(conn: Any) -> dict[str, tuple[int, int]]:
    """name -> (document count, total bytes)."""
    routed.documents.send_held(conn)
    rows = run(conn, "SELECT collection, count(*), coalesce(sum(size), 0) FROM documents GROUP BY collection")
    return {name: (int(n), int(size)) for name, n, size in rows}


@both
def all_paths(conn: Any) -> list[tuple[str, str]]:
    routed.documents.send_held(conn)
    return [(c, p) for c, p in run(conn, "SELECT collection, path FROM documents")]


@both
def documents_with_hashes(conn: Any, hashes: Sequence[str]) -> list[StoredDocument]:
    routed.documents.send_held(conn)
    return [_doc(row) for row in _in_batches(conn, f"SELECT {_COLUMNS} FROM documents WHERE", "hash", hashes)]


@both
def defined_names(conn: Any, ids: Sequence[int], column: str) -> dict[int, list[str]]:
    """The lines of a document's ``headings`` or ``options`` column (what it defines), by id; for
    ``headings``, its title first (``package-lock.json`` is the title of the page defining it)."""
    if column not in ("headings", "options") or not ids:
        return {}
    title = "title" if column == "headings" else "''"
    condition, params = dialect(conn).one_of("id", list(ids))
    rows = run(conn, f"SELECT id, {title}, fts_{column} FROM documents WHERE {condition}", params)
    return {int(row[0]): [*([row[1]] if row[1] else []), *row[2].splitlines()] for row in rows}


# --- keyword search -----------------------------------------------------------------------------


def _weights(weights: Sequence[float]) -> str:
    return ", ".join(str(float(w)) for w in weights)


@dataclass(frozen=True)
class KeywordScope:
    """Which matches a keyword search returns: those of one collection (None: the whole index)
    that ``where`` lets through (all without one), the best ``limit`` of them (None: all)."""

    collection: str | None
    limit: int | None
    where: DocumentFilter | None = None


def keyword_search(
    conn: Any, expression: str, scope: KeywordScope, weights: Sequence[float] = BM25_WEIGHTS
) -> list[tuple[int, float]]:
    """(document id, raw bm25) best first, within ``scope`` (the whole index without the join
    that filters by collection). bm25 is negative: lower is better."""
    collection, limit, where = scope.collection, scope.limit, scope.where
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


def phrase_frequencies(conn: Any, expressions: Sequence[str]) -> dict[str, int]:
    """``phrase_frequency`` of each expression (PostgreSQL reads them in one statement)."""
    return {expression: phrase_frequency(conn, expression) for expression in dict.fromkeys(expressions)}


def phrase_parts(
    conn: Any,
    scored: Sequence[tuple[str, Sequence[float]]],
    present: Sequence[str],
    ids: Sequence[int],
) -> tuple[list[dict[int, float]], list[set[int]]]:
    """``phrase_bm25`` of each (expression, weights) of ``scored`` and ``phrase_documents`` of each
    expression of ``present``, over the documents ``ids`` (PostgreSQL: in one statement)."""
    bm25 = [phrase_bm25(conn, expression, ids, weights) for expression, weights in scored]
    return bm25, [phrase_documents(conn, expression, ids) for expression in present]


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
