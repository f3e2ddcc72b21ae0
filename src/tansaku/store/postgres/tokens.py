"""The keyword tokens of a text, exactly as the SQLite index makes them.

Keyword ranking on PostgreSQL must equal SQLite's, token for token, so the tokens come from the
same code: FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, run in a private in-memory
SQLite database (``fts5vocab`` lists each token with its column and position). A reimplemented
stemmer would differ from FTS5's on some words, and every difference moves a ranking.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

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
