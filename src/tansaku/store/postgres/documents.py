"""Documents on PostgreSQL: what differs from store/documents.py (written once for both).

How a document's keyword columns go into and out of the keyword index (``insert_document``,
``unindex_keywords``, ``index_keywords``: postings written in batches, ``_KeywordRows``), new
documents held back and sent in batches during an update (``batched``, ``send_held``), content
written and pruned, a collection renamed with its keyword statistics.

Keyword search takes the FTS5 expressions search/query.py writes and answers them as FTS5 would
(expression.py parses them, bm25_sql.py matches and scores them in one statement over
``postings``, with ranking.py's arithmetic).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ..documents import BM25_WEIGHTS, FtsText, KeywordScope, StoredDocument, document_values
from ..fields import DocumentFilter
from . import bm25_sql
from .bm25_sql import DOCUMENT_POSTINGS
from .db import deferred
from .expression import Expression, Phrase, parse
from .keyword_parts import phrase_frequencies, phrase_parts  # noqa: F401 (the routed documents' own)
from .tokens import Batch, column_tokens


def put_content(conn: Any, content_hash: str, text: str) -> None:
    pending = _pending(conn)
    if pending is not None:
        pending.content.setdefault(content_hash, text)
        return
    conn.execute(
        "INSERT INTO content (hash, body) VALUES (%s, %s) ON CONFLICT (hash) DO NOTHING", (content_hash, text)
    )


# --- new documents, sent in batches -------------------------------------------------------------

_DOCUMENT_COLUMNS = (
    "id, collection, path, hash, title, size, mtime_ns, line_count, repaired, indexed_at, fts_path,"
    " fts_title, fts_body, fts_headings, fts_options, fts_lengths, fts_tokens, keyword_block"
)


class _PendingDocuments:
    """New documents' rows and texts held back while an update writes many (``batched``): sent
    in one COPY and one INSERT per batch rather than two statements per document, each a round
    trip (which cost a busy server's scheduling delay too). Their ids are taken ahead, a batch's
    worth at once, with the same ``tansaku_take_ids`` (so the same ids as one at a time: a writer
    alone numbers one more than the largest). Sent before anything reads or changes documents
    (``send_held``), before more ids are taken, and when the batch ends."""

    ROWS = 500
    IDS = 256

    def __init__(self) -> None:
        self.content: dict[str, str] = {}
        self.rows: list[tuple[Any, ...]] = []
        self.ids: list[int] = []  # taken, not used yet

    def send(self, conn: Any) -> None:
        if self.content:
            hashes = list(self.content)
            conn.execute(
                "INSERT INTO content (hash, body) SELECT * FROM unnest(%s::text[], %s::text[])"
                " ON CONFLICT (hash) DO NOTHING",
                (hashes, [self.content[h] for h in hashes]),
            )
            self.content = {}
        if self.rows:
            with conn.copy(f"COPY documents ({_DOCUMENT_COLUMNS}) FROM STDIN") as copy:
                for row in self.rows:
                    copy.write_row(row)
            self.rows = []

    def take_id(self, conn: Any) -> int:
        if not self.ids:
            self.send(conn)  # the largest id counts the held rows
            row = conn.execute("SELECT tansaku_take_ids('document_ids', 'documents', %s)", (self.IDS,))
            self.ids = list(reversed(row.fetchone()[0]))
        return int(self.ids.pop())


def _pending(conn: Any) -> _PendingDocuments | None:
    rows = conn.keyword_rows
    return None if rows is None else rows.pending  # type: ignore[no-any-return]


def send_held(conn: Any, *, renumber: bool = False) -> None:
    """The held documents in the database (before a statement that reads or changes documents);
    ``renumber``: the ids taken ahead are dropped too (a document deleted: one alone numbers one
    more than the largest left, as SQLite does)."""
    pending = _pending(conn)
    if pending is not None:
        pending.send(conn)
        if renumber:
            pending.ids = []


@contextlib.contextmanager
def batched(conn: Any) -> Iterator[None]:
    """New documents written in batches inside the block (index/update.py's apply of a file
    collection); all of them sent when it ends."""
    rows = _batch(conn)
    rows.pending = _PendingDocuments()
    try:
        yield
        rows.pending.send(conn)
    finally:
        rows.pending = None


# --- keyword rows -------------------------------------------------------------------------------


def _columns(fts: FtsText) -> list[str]:
    return [fts.path, fts.title, fts.body, fts.headings, fts.options]


class _KeywordRows:
    """The keyword rows of one write transaction, sent in batches: a COPY of the batch's postings,
    one row per term (migration 8: a batch's documents are one block of ``postings``), and one
    upsert of the term frequencies' net changes, instead of several statements per document.
    Flushed when large, before a document's rows are read back, and before COMMIT
    (PgConnection.before_commit).

    A batch's documents are tokenized into an in-memory FTS5 table (tokens.Batch), whose index
    gives the block's rows already grouped by term and sorted: no loop over every token in Python.

    Frequencies and totals are kept per collection (migration 6; the views ``term_stats`` and
    ``keyword_totals`` sum them), so writers of two collections never touch one row. A removed
    document's postings are taken out of its block's rows at the next flush, all of a block's
    removed documents in one statement (that rewrites the block's rows of their terms)."""

    # Tokens of a batch: its block's size (about 400,000 (term, document, column) entries on
    # Markdown, the size blocks had when a batch was counted in entries).
    TOKENS = 1_000_000

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self.tokenized = Batch()
        self.tokens = 0
        self.docs: dict[int, str] = {}  # document: its collection
        self.block: int | None = None  # this batch's block, taken when its first document comes
        self.gone: dict[int, dict[int, str]] = {}  # block: {removed document: its collection}
        self.df: Counter[tuple[str, str]] = Counter()  # (term, collection): net change
        self.totals: dict[str, list[int]] = {}  # collection: [documents, tokens]
        self.pending: _PendingDocuments | None = None  # new documents held back (``batched``)

    def block_id(self) -> int:
        if self.block is None:
            self.block = int(self.conn.execute("SELECT nextval('posting_blocks')").fetchone()[0])
        return self.block

    def tokenize(self, fts: FtsText) -> tuple[int, list[int]]:
        """A document's keyword columns into the batch: its number there and column lengths
        (``add`` names it once it has its id)."""
        return self.tokenized.add(_columns(fts))

    def add(self, local: int, doc_id: int, collection: str, tokens: int) -> None:
        self.tokenized.name(local, doc_id, tokens)
        self.tokens += tokens
        self.docs[doc_id] = collection
        self._count(collection, 1, tokens)
        if self.tokens >= self.TOKENS:
            self.flush()

    def remove(self, doc_id: int, block: int, collection: str, tokens: int) -> None:
        self.gone.setdefault(block, {})[doc_id] = collection
        self._count(collection, -1, -tokens)

    def _count(self, collection: str, documents: int, tokens: int) -> None:
        totals = self.totals.setdefault(collection, [0, 0])
        totals[0] += documents
        totals[1] += tokens

    def _take_out(self) -> None:
        """The removed documents' entries out of their blocks' rows (their terms' frequencies
        counted down), in SQL on each row's current version, so a concurrent writer's change to
        the same row is never lost."""
        for block, docs in sorted(self.gone.items()):
            ids = sorted(docs)
            rows = self.conn.execute(
                "SELECT p.term, u.d FROM postings AS p, unnest(p.docs) AS u(d)"
                " WHERE p.block = %s AND p.docs && %s::integer[] AND u.d = ANY(%s::integer[])"
                " GROUP BY p.term, u.d",
                (block, ids, ids),
            )
            self.df.subtract((term, docs[int(doc)]) for term, doc in rows)
            self.conn.execute(_TAKE_OUT, {"block": block, "gone": ids})
            self.conn.execute("DELETE FROM postings WHERE block = %s AND cardinality(docs) = 0", (block,))
        self.gone = {}

    def _copy(self) -> None:
        """The batch's postings into its block, one row per term, in one COPY."""
        block = self.block_id()
        collections = set(self.docs.values())
        sole = next(iter(collections)) if len(collections) == 1 else None
        df = self.df
        with self.conn.copy(
            "COPY postings (term, block, docs, cols, counts, lens, positions) FROM STDIN"
        ) as copy:
            for term, docs, cols, counts, lens, positions, documents in self.tokenized.rows():
                # Array literals: COPY's text format parses them (psycopg's dumping of lists of
                # ints cost more than the rest of the row).
                arrays = (f"{{{docs}}}", f"{{{cols}}}", f"{{{counts}}}", f"{{{lens}}}", f"{{{positions}}}")
                copy.write_row((term, block, *arrays))
                if sole is not None:
                    df[(term, sole)] += len(set(documents))
                else:
                    df.update({(term, self.docs[int(doc)]) for doc in documents})

    def flush(self) -> None:
        if self.pending is not None:
            self.pending.send(self.conn)
        self._take_out()
        if self.docs:
            self._copy()
        changed = sorted(key for key, delta in self.df.items() if delta)  # one lock order for all writers
        if changed:
            self.conn.execute(
                "INSERT INTO collection_term_stats (term, collection, df)"
                " SELECT * FROM unnest(%s::text[], %s::text[], %s::integer[])"
                " ON CONFLICT (term, collection) DO UPDATE SET df = collection_term_stats.df + excluded.df",
                ([t for t, _ in changed], [c for _, c in changed], [self.df[key] for key in changed]),
            )
            fewer = [key for key in changed if self.df[key] < 0]
            if fewer:
                self.conn.execute(
                    "DELETE FROM collection_term_stats AS s"
                    " USING unnest(%s::text[], %s::text[]) AS f (term, collection)"
                    " WHERE s.term = f.term AND s.collection = f.collection AND s.df <= 0",
                    ([t for t, _ in fewer], [c for _, c in fewer]),
                )
        for collection, (documents, tokens) in sorted(self.totals.items()):
            if not (documents or tokens):
                continue
            self.conn.execute(
                "INSERT INTO collection_keyword_totals (collection, docs, tokens) VALUES (%s, %s, %s)"
                " ON CONFLICT (collection) DO UPDATE SET"
                " docs = collection_keyword_totals.docs + excluded.docs,"
                " tokens = collection_keyword_totals.tokens + excluded.tokens",
                (collection, documents, tokens),
            )
            if documents < 0:
                self.conn.execute(
                    "DELETE FROM collection_keyword_totals WHERE collection = %s AND docs = 0 AND tokens = 0",
                    (collection,),
                )
        self.tokenized.clear()
        self.tokens, self.docs, self.df, self.totals = 0, {}, Counter(), {}
        self.block = None


# A block's rows without the removed documents' entries (``gone``: migrations.py's
# tansaku_without, on each row's current version).
_TAKE_OUT = (
    "UPDATE postings AS p SET (docs, cols, counts, lens, positions) = (SELECT * FROM"
    " tansaku_without(p.docs, p.cols, p.counts, p.lens, p.positions, %(gone)s::integer[]))"
    " WHERE p.block = %(block)s AND p.docs && %(gone)s::integer[]"
)


def _batch(conn: Any) -> _KeywordRows:
    if conn.keyword_rows is None:
        conn.keyword_rows = _KeywordRows(conn)
        conn.before_commit.append(conn.keyword_rows.flush)
    return conn.keyword_rows  # type: ignore[no-any-return]


def _places(fts: FtsText) -> tuple[dict[tuple[str, int], list[int]], list[int]]:
    """{(term, column): positions} of a document's keyword columns, and each column's length, one
    document at a time (what schema version 7's rows held; the tests rebuild such an index)."""
    tokens = column_tokens(_columns(fts))
    places: dict[tuple[str, int], list[int]] = {}
    for number, column in enumerate(tokens):
        for at, term in column:
            places.setdefault((term, number), []).append(at)
    return places, [len(column) for column in tokens]


def unindex_keywords(conn: Any, doc_id: int, stored: FtsText | None = None) -> None:
    """A document's postings taken out of its block at the next flush (its terms counted down).
    Its postings say what to take out: ``stored`` (its keyword columns) is not needed here."""
    send_held(conn, renumber=True)
    batch = _batch(conn)
    if doc_id in batch.docs:
        batch.flush()  # its postings must be in their block to be taken out
    row = conn.execute(
        "SELECT fts_tokens, collection, keyword_block FROM documents WHERE id = %s", (doc_id,)
    ).fetchone()
    if row is None:
        return
    batch.remove(doc_id, int(row[2]), row[1], int(row[0]))


def insert_document(conn: Any, doc: StoredDocument, text: str, fts: FtsText) -> int:
    batch = _batch(conn)
    local, lengths = batch.tokenize(fts)
    values = (*document_values(doc, text, fts), lengths, sum(lengths), batch.block_id())
    pending = batch.pending
    if pending is not None:
        doc_id = pending.take_id(conn)
        pending.rows.append((doc_id, *values))
        if len(pending.rows) >= pending.ROWS:
            pending.send(conn)
    else:
        row = conn.execute(
            # The id SQLite would give the row (one more than the largest) while this writer is
            # alone: ties in ranking go by id, so both backends number documents alike
            # (migrations.py).
            f"INSERT INTO documents ({_DOCUMENT_COLUMNS}) VALUES"
            " ((tansaku_take_ids('document_ids', 'documents', 1))[1],"
            " %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id",
            values,
        ).fetchone()
        doc_id = int(row[0])
    batch.add(local, doc_id, doc.collection, sum(lengths))
    return doc_id


def index_keywords(conn: Any, doc_id: int, fts: FtsText) -> None:
    """A document's keyword columns into this batch's block, with their lengths (its row's
    ``keyword_block`` follows its postings: unindex_keywords takes them out of it)."""
    batch = _batch(conn)
    local, lengths = batch.tokenize(fts)
    conn.execute(
        "UPDATE documents SET fts_lengths = %s, fts_tokens = %s, keyword_block = %s WHERE id = %s",
        (lengths, sum(lengths), batch.block_id(), doc_id),
    )
    batch.add(local, doc_id, collection_of(conn, doc_id), sum(lengths))


def collection_of(conn: Any, doc_id: int) -> str:
    send_held(conn)
    return str(conn.execute("SELECT collection FROM documents WHERE id = %s", (doc_id,)).fetchone()[0])


def prune_content(conn: Any) -> int:
    if deferred(conn, "content", lambda: _prune_content(conn)):
        return 0
    return _prune_content(conn)


def _prune_content(conn: Any) -> int:
    send_held(conn)
    cursor = conn.execute(
        "DELETE FROM content AS c WHERE NOT EXISTS (SELECT 1 FROM documents AS d WHERE d.hash = c.hash)"
    )
    return int(cursor.rowcount)


def rename_collection(conn: Any, old: str, new: str) -> None:
    _batch(conn).flush()  # the old name's net changes first
    kept = ("documents", "collection_term_stats", "collection_keyword_totals", "collection_turn_totals")
    for table in kept:
        conn.execute(f"UPDATE {table} SET collection = %s WHERE collection = %s", (new, old))
    conn.execute("UPDATE collection_state SET name = %s WHERE name = %s", (new, old))
    conn.execute("UPDATE skipped_files SET collection = %s WHERE collection = %s", (new, old))


# --- keyword search -----------------------------------------------------------------------------


def _totals(conn: Any) -> tuple[int, int]:
    """(documents, tokens) of the index; read once per read block (a scoring statement reads them)."""
    return bm25_sql.table_totals(conn, DOCUMENT_POSTINGS, conn.positions_cache)


def _ranked(
    conn: Any,
    parsed: Expression,
    weights: Sequence[float],
    restrict: Sequence[int] | None,
    finish: Callable[[bm25_sql.Sql], bm25_sql.Sql] = lambda sql: sql,
    more: str = "",
    join: bool = True,
) -> list[tuple[Any, ...]]:
    """(id, score[, more]) of the documents the expression matches, in one statement (bm25_sql.py)."""
    return bm25_sql.run_ranked(
        conn, DOCUMENT_POSTINGS, parsed, weights, restrict, conn.positions_cache, finish, more, join=join
    )


def _scoped(sql: bm25_sql.Sql, collection: str | None, where: DocumentFilter | None) -> bm25_sql.Sql:
    """The statement's rows (``r``, documents) limited to a collection and to what ``--where``
    lets through (before the limit, as on SQLite; BM25's statistics stay the whole index's, as
    FTS5's do)."""
    if collection is not None:
        sql.add(" AND r.collection = %s", collection)
    if where is not None:
        from .fields import passing

        condition, params = passing(where, "r.id")
        sql.add(f" AND {condition}", *params)
    return sql


def keyword_search(
    conn: Any, expression: str, scope: KeywordScope, weights: Sequence[float] = BM25_WEIGHTS
) -> list[tuple[int, float]]:
    """(document id, raw bm25) best first, ordered as the SQLite path orders them (ties by id for
    the whole index, by path within a collection: COLLATE "C", SQLite's BINARY order)."""
    collection, limit, where = scope.collection, scope.limit, scope.where

    # How many match comes with the rows (counted before the limit): search asks keyword_count
    # next when the limit is reached, and this spares it a statement.
    def finish(sql: bm25_sql.Sql) -> bm25_sql.Sql:
        sql = _scoped(sql, collection, where)
        sql.add(" ORDER BY score, " + ("h.id" if collection is None else "r.path"))
        return sql if limit is None else sql.add(" LIMIT %s", limit)

    # The whole index, unfiltered: the documents' rows are not read (the postings carry their
    # lengths; 10 of a long query's 25 ms at 10,000 files were the join with them).
    whole = collection is None and where is None
    rows = _ranked(conn, parse(expression), weights, None, finish, "count(*) OVER () AS matched", not whole)
    cache = conn.positions_cache
    if cache is not None:
        cache[("matched", expression, collection, where)] = int(rows[0][2]) if rows else 0
    return [(int(row[0]), float(row[1])) for row in rows]


def keyword_count(
    conn: Any, expression: str, collection: str | None, where: DocumentFilter | None = None
) -> int:
    cache = conn.positions_cache
    key = ("matched", expression, collection, where)
    if cache is not None and key in cache:
        return cache[key]  # type: ignore[no-any-return]
    if collection is None and where is None:
        return phrase_frequency(conn, expression)
    matched = bm25_sql.matching(DOCUMENT_POSTINGS, parse(expression), None)
    sql = bm25_sql.Sql().add("SELECT count(*) FROM (").extend(matched).add(") AS h")
    sql = _scoped(sql.add(" JOIN documents AS r ON r.id = h.id WHERE true"), collection, where)
    return int(conn.execute(sql.sql, sql.params).fetchone()[0])


def sole_collection(conn: Any) -> str | None:
    """The index's one collection (None: none or several); read once per read block."""
    cache = conn.positions_cache
    if cache is not None and "sole collection" in cache:
        return cache["sole collection"]  # type: ignore[no-any-return]
    rows = conn.execute("SELECT name FROM collection_state LIMIT 2").fetchall()
    sole = rows[0][0] if len(rows) == 1 else None
    if cache is not None:
        cache["sole collection"] = sole
    return sole


def document_total(conn: Any) -> int:
    return _totals(conn)[0]


def phrase_frequency(conn: Any, expression: str) -> int:
    """How many documents (in any collection) match; one phrase's is its n, kept by the read block
    (one word's from ``term_stats``, kept by update, without reading its postings)."""
    parsed = parse(expression)
    if isinstance(parsed.root, Phrase):
        cache = conn.positions_cache
        return bm25_sql.phrase_frequencies(conn, DOCUMENT_POSTINGS, [parsed.root], cache)[0]
    matched = bm25_sql.matching(DOCUMENT_POSTINGS, parsed, None)
    sql = bm25_sql.Sql().add("SELECT count(*) FROM (").extend(matched).add(") AS m")
    return int(conn.execute(sql.sql, sql.params).fetchone()[0])


def option_defined(conn: Any, name: str) -> bool:
    return _any_match(conn, 'options : "' + name.replace('"', '""') + '"')


def title_names(conn: Any, word: str) -> bool:
    return _any_match(conn, 'title : "' + word.replace('"', '""') + '"')


def _any_match(conn: Any, expression: str) -> bool:
    matched = bm25_sql.matching(DOCUMENT_POSTINGS, parse(expression), None)
    sql = bm25_sql.Sql().add("SELECT EXISTS (").extend(matched).add(")")
    return bool(conn.execute(sql.sql, sql.params).fetchone()[0])


def phrase_documents(conn: Any, expression: str, ids: Sequence[int]) -> set[int]:
    if not ids:
        return set()
    sql = bm25_sql.matching(DOCUMENT_POSTINGS, parse(expression), sorted(set(ids)))
    return {int(row[0]) for row in conn.execute(sql.sql, sql.params)}


def phrase_bm25(
    conn: Any, expression: str, ids: Sequence[int], weights: Sequence[float] = BM25_WEIGHTS
) -> dict[int, float]:
    if not ids:
        return {}
    rows = _ranked(conn, parse(expression), weights, sorted(set(ids)))
    return {int(row[0]): float(row[1]) for row in rows}


def term_statistics(conn: Any) -> Counter[str]:
    """Every term's document frequency as update keeps it (for checks and tests)."""
    return Counter({term: int(df) for term, df in conn.execute("SELECT term, df FROM term_stats")})
