"""The keyword tokens of a text, exactly as the SQLite index makes them.

Keyword ranking on PostgreSQL must equal SQLite's, token for token, so the tokens come from the
same code: FTS5's ``porter unicode61 remove_diacritics 2`` tokenizer, run in a private in-memory
SQLite database (``fts5vocab`` lists each token with its column and position). A reimplemented
stemmer would differ from FTS5's on some words, and every difference moves a ranking.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence

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


# A batch's tokens grouped by term, each group in FTS5's index order (document, column, offset):
# each token as its entry's "column|document id|document tokens" (the documents' ids and lengths
# looked up in ``ids``), and its offset. FTS5's vocabulary table gives the terms in order and
# ``v`` is read first (CROSS JOIN), so SQLite groups them without sorting (a GROUP BY of (term,
# document, column) sorted every token: 2.7 s of a batch's 1 s here).
_BATCH_TOKENS = """
SELECT v.term, group_concat(CASE v.col WHEN 'path' THEN '0|' WHEN 'title' THEN '1|' WHEN 'body' THEN '2|'
    WHEN 'headings' THEN '3|' ELSE '4|' END || d.entry), group_concat(v.offset)
FROM v CROSS JOIN ids AS d ON d.local = v.doc GROUP BY v.term
"""


def _by_document(entries: Counter[str], offsets: str) -> tuple[Counter[str], str]:
    """A term's entries ("column|document|tokens": count) and offsets (each entry's in turn) in
    (document, column) order."""
    at = offsets.split(",")
    runs = []
    start = 0
    for key, count in entries.items():
        runs.append((key, count, at[start : start + count]))
        start += count
    runs.sort(key=lambda run: (int(run[0].split("|")[1]), run[0].split("|")[0]))
    return Counter({key: count for key, count, _ in runs}), ",".join(x for _, _, part in runs for x in part)


class Batch:
    """Many documents' keyword tokens, tokenized by FTS5 in a private in-memory SQLite and read
    back grouped by term (``rows``), instead of a loop in Python over every token. ``add`` gives
    a document's column lengths at once (FTS5's ``docsize``)."""

    def __init__(self) -> None:
        import sqlean

        self.conn = sqlean.connect(":memory:", isolation_level=None)
        names = ", ".join(COLUMNS)
        self.conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({names}, tokenize = '{FTS_TOKENIZER}')")
        self.conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
        self.conn.execute("CREATE TABLE ids (local INTEGER PRIMARY KEY, entry TEXT NOT NULL)")
        # The groups are in index order only if SQLite reads the vocabulary in order (no sorter).
        plan = " ".join(str(row[-1]) for row in self.conn.execute("EXPLAIN QUERY PLAN " + _BATCH_TOKENS))
        if "TEMP B-TREE" in plan:  # pragma: no cover - an SQLite that plans it otherwise
            raise RuntimeError(f"the batch's tokens would be sorted: {plan}")
        self.conn.execute("BEGIN")
        self._insert = f"INSERT INTO t (rowid, {names}) VALUES (?, {', '.join('?' * len(COLUMNS))})"
        self.size = 0
        # The documents' ids ascend with their numbers in the batch (new documents' ids do; one
        # moved or grown keeps its older id, and then each term's entries are sorted here).
        self.last = 0
        self.ascending = True

    def add(self, texts: Sequence[str]) -> tuple[int, list[int]]:
        """A document's columns (COLUMNS order) in: its number in the batch and column lengths."""
        self.size += 1
        self.conn.execute(self._insert, (self.size, *texts))
        (blob,) = self.conn.execute("SELECT sz FROM t_docsize WHERE id = ?", (self.size,)).fetchone()
        return self.size, _varints(blob)

    def name(self, local: int, doc: int, tokens: int) -> None:
        """The batch's document ``local`` is document ``doc`` of the index, of ``tokens`` tokens."""
        self.conn.execute("INSERT INTO ids (local, entry) VALUES (?, ?)", (local, f"{doc}|{tokens}"))
        self.ascending = self.ascending and doc > self.last
        self.last = max(self.last, doc)

    def rows(self) -> Iterator[tuple[str, str, str, str, str, str, list[str]]]:
        """Per term, in term order: its entries in (document, column) order as the comma-separated
        lists ``postings``' arrays are made of (docs, cols, counts, lens, positions), and the
        ids of the documents it is in (once per column)."""
        for term, keys, offsets in self.conn.execute(_BATCH_TOKENS):
            entries = Counter(keys.split(","))  # in order: a document's tokens come together
            if not self.ascending:
                entries, offsets = _by_document(entries, offsets)
            parts = "|".join(entries).split("|")
            docs = parts[1::3]
            yield (
                term,
                ",".join(docs),
                ",".join(parts[0::3]),
                ",".join(map(str, entries.values())),
                ",".join(parts[2::3]),
                offsets,
                docs,
            )

    def clear(self) -> None:
        self.conn.execute("ROLLBACK")
        self.conn.execute("BEGIN")
        self.size = self.last = 0
        self.ascending = True
