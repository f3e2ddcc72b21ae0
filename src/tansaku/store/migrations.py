"""Numbered schema migrations, recorded in ``PRAGMA user_version``.

Each migration runs inside the caller's transaction. Later issues append migrations (chunks keyed
by content hash + sequence, vectors keyed by chunk); the layout leaves room for them: document text
lives once per content hash in ``content``, so chunks and vectors can hang off the hash.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FTS_TOKENIZER = "porter unicode61 remove_diacritics 2"

_V1 = f"""
CREATE TABLE content (
    hash TEXT PRIMARY KEY,
    body TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    hash TEXT NOT NULL,
    title TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    line_count INTEGER NOT NULL,
    repaired INTEGER NOT NULL DEFAULT 0,
    indexed_at TEXT NOT NULL,
    UNIQUE (collection, path)
);
CREATE INDEX documents_hash ON documents (hash);

-- Contentless: the text is kept once in `content`; FTS holds only the (CJK-segmented) tokens.
CREATE VIRTUAL TABLE documents_fts USING fts5(
    path, title, body,
    tokenize = '{FTS_TOKENIZER}',
    content = '',
    contentless_delete = 1
);

CREATE TABLE collection_state (
    name TEXT PRIMARY KEY,
    root TEXT NOT NULL,
    last_update TEXT
);
"""

Migration = Callable[[Any], None]


def _v1(conn: Any) -> None:
    for statement in _V1.split(";\n"):
        if statement.strip():
            conn.execute(statement)


MIGRATIONS: list[Migration] = [_v1]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: Any) -> int:
    """Bring the schema up to date; returns the version reached."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    for number, step in enumerate(MIGRATIONS[current:], start=current + 1):
        step(conn)
        conn.execute(f"PRAGMA user_version = {number}")
    return SCHEMA_VERSION
