"""The keyword tokens of a text, exactly as the SQLite index makes them.

Keyword ranking on PostgreSQL must equal SQLite's, token for token, so the tokens come from the
same code: FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, run in a private in-memory
SQLite database (``fts5vocab`` lists each token with its column and position). A reimplemented
stemmer would differ from FTS5's on some words, and every difference moves a ranking.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ..migrations import FTS_TOKENIZER

COLUMNS = ("path", "title", "body", "headings", "options")

_local = threading.local()


def _connection():  # type: ignore[no-untyped-def]
    conn = getattr(_local, "conn", None)
    if conn is None:
        import sqlean

        conn = sqlean.connect(":memory:", isolation_level=None)
        names = ", ".join(COLUMNS)
        conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({names}, tokenize = '{FTS_TOKENIZER}')")
        conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        _local.conn = conn
    return conn


def column_tokens(texts: Sequence[str]) -> list[list[tuple[int, str]]]:
    """Each column's (position, token) pairs in order (``texts`` in COLUMNS order; fewer texts
    leave the other columns empty)."""
    values = list(texts) + [""] * (len(COLUMNS) - len(texts))
    conn = _connection()
    marks = ", ".join("?" * len(COLUMNS))
    conn.execute(f"INSERT INTO t (rowid, {', '.join(COLUMNS)}) VALUES (1, {marks})", values)
    try:
        rows = conn.execute("SELECT term, col, offset FROM v").fetchall()
    finally:
        conn.execute("DELETE FROM t")
    tokens: list[list[tuple[int, str]]] = [[] for _ in COLUMNS]
    index = {name: i for i, name in enumerate(COLUMNS)}
    for term, column, offset in rows:
        tokens[index[column]].append((offset, term))
    for column in tokens:
        column.sort()
    return tokens


def text_tokens(text: str) -> list[str]:
    """One text's tokens in order (a query's quoted string is tokenized as a document's text is)."""
    return [term for _, term in column_tokens(["", "", text])[2]]


def text_positions(text: str) -> list[tuple[int, str]]:
    """One text's (position, token) pairs in order, as a one-column FTS5 table (``turns_fts``)
    numbers them."""
    return column_tokens(["", "", text])[2]


def _varints(blob: bytes) -> list[int]:
    """SQLite's varints back to back (FTS5's ``docsize`` record: each column's token count)."""
    values: list[int] = []
    value = 0
    for byte in blob:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            values.append(value)
            value = 0
    return values


# A batch's postings, one row per term: its entries in (document, column) order as the
# comma-separated lists ``postings``' arrays are written from (COPY parses them), and how many
# documents it is in. FTS5's own index of the batch does the grouping and sorting.
_BATCH_POSTINGS = """
WITH e AS (
    SELECT v.term, d.doc, d.tokens,
        CASE v.col WHEN 'path' THEN 0 WHEN 'title' THEN 1 WHEN 'body' THEN 2 WHEN 'headings' THEN 3
            ELSE 4 END AS c,
        count(*) AS n, group_concat(v.offset, ',' ORDER BY v.offset) AS at
    FROM v JOIN ids AS d ON d.local = v.doc GROUP BY v.term, v.doc, v.col
)
SELECT term, group_concat(doc, ',' ORDER BY doc, c), group_concat(c, ',' ORDER BY doc, c),
    group_concat(n, ',' ORDER BY doc, c), group_concat(tokens, ',' ORDER BY doc, c),
    group_concat(at, ',' ORDER BY doc, c), count(DISTINCT doc)
FROM e GROUP BY term ORDER BY term
"""


class Batch:
    """Many documents' keyword tokens, tokenized by FTS5 in a private in-memory SQLite and read
    back grouped by term (``rows``): one pass of SQLite's C code instead of a loop in Python
    over every token. ``add`` gives a document's column lengths at once (FTS5's ``docsize``)."""

    def __init__(self) -> None:
        import sqlean

        self.conn = sqlean.connect(":memory:", isolation_level=None)
        names = ", ".join(COLUMNS)
        self.conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({names}, tokenize = '{FTS_TOKENIZER}')")
        self.conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self.conn.execute("CREATE TABLE ids (local INTEGER PRIMARY KEY, doc INTEGER, tokens INTEGER)")
        self.conn.execute("BEGIN")
        self.size = 0
        self._insert = f"INSERT INTO t (rowid, {names}) VALUES (?, {', '.join('?' * len(COLUMNS))})"

    def add(self, texts: Sequence[str]) -> tuple[int, list[int]]:
        """A document's columns (COLUMNS order) in: its number in the batch and column lengths."""
        self.size += 1
        self.conn.execute(self._insert, (self.size, *texts))
        (blob,) = self.conn.execute("SELECT sz FROM t_docsize WHERE id = ?", (self.size,)).fetchone()
        return self.size, _varints(blob)

    def name(self, local: int, doc: int, tokens: int) -> None:
        """The batch's document ``local`` is document ``doc`` of the index, of ``tokens`` tokens."""
        self.conn.execute("INSERT INTO ids (local, doc, tokens) VALUES (?, ?, ?)", (local, doc, tokens))

    def rows(self) -> Any:
        """(term, docs, cols, counts, lens, positions, documents) per term, in term order."""
        return self.conn.execute(_BATCH_POSTINGS)

    def clear(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.execute("BEGIN")
        self.size = 0
