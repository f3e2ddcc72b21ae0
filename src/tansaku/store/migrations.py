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
    -- Exactly what was given to FTS for this row, so the row can be deleted again (see below).
    fts_path TEXT NOT NULL,
    fts_title TEXT NOT NULL,
    fts_body TEXT,  -- NULL when identical to content.body (text without CJK)
    UNIQUE (collection, path)
);
CREATE INDEX documents_hash ON documents (hash);

-- Contentless: the text is kept once in `content`; FTS holds only the (CJK-segmented) tokens.
-- Rows are removed with FTS5's 'delete' command and the exact values that were inserted
-- (documents.fts_path/fts_title/fts_body, else content.body), which keeps FTS5's row count and
-- average lengths right; contentless_delete=1 leaves them stale and skews BM25 after updates.
CREATE VIRTUAL TABLE documents_fts USING fts5(
    path, title, body,
    tokenize = '{FTS_TOKENIZER}',
    content = ''
);

CREATE TABLE collection_state (
    name TEXT PRIMARY KEY,
    root TEXT NOT NULL,
    last_update TEXT,
    indexer_version INTEGER NOT NULL DEFAULT 0
);
"""

# Chunks are keyed by content hash + chunking parameters, so identical text in two places is
# chunked once and a move costs nothing. Chunk text is not stored: it is content.body sliced by
# the character offsets. chunk_runs records that a text was chunked (even into zero chunks).
_V2 = """
CREATE TABLE chunk_runs (
    hash TEXT NOT NULL,
    params TEXT NOT NULL,
    strategy_used TEXT NOT NULL,
    warnings TEXT NOT NULL DEFAULT '[]',
    chunk_count INTEGER NOT NULL,
    PRIMARY KEY (hash, params)
) WITHOUT ROWID;

CREATE TABLE chunks (
    hash TEXT NOT NULL,
    params TEXT NOT NULL,
    seq INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    start_byte INTEGER NOT NULL,
    end_byte INTEGER NOT NULL,
    tokens INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    oversized INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hash, params, seq)
) WITHOUT ROWID;
"""

# Vectors. An embedding is stored once per (model fingerprint, exact embedded text), so a chunk
# whose text did not change keeps its vector even when its document changed, and identical
# chunks in two documents share one. chunk_vectors maps chunks (and their windows, when a chunk
# is longer than the model's context) to embeddings. The vectors themselves live in sqlite-vec
# tables created on first use, one per dimension count: vec_f32_<dims>(rowid = embeddings.id).
_V3 = """
CREATE TABLE embed_models (
    fingerprint TEXT PRIMARY KEY,
    model_path TEXT NOT NULL,
    model_sha256 TEXT NOT NULL,
    model_size INTEGER NOT NULL,
    model_mtime_ns INTEGER NOT NULL,
    prompt_format TEXT NOT NULL,
    dims INTEGER NOT NULL,
    window_tokens INTEGER NOT NULL,
    created_at TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE embeddings (
    id INTEGER PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    text_sha TEXT NOT NULL,
    UNIQUE (fingerprint, text_sha)
);

CREATE TABLE chunk_vectors (
    fingerprint TEXT NOT NULL,
    hash TEXT NOT NULL,
    chunk_params TEXT NOT NULL,
    seq INTEGER NOT NULL,
    window INTEGER NOT NULL,
    embedding_id INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    PRIMARY KEY (fingerprint, hash, chunk_params, seq, window)
) WITHOUT ROWID;
CREATE INDEX chunk_vectors_embedding ON chunk_vectors (embedding_id);

CREATE TABLE embed_failures (
    fingerprint TEXT NOT NULL,
    hash TEXT NOT NULL,
    chunk_params TEXT NOT NULL,
    seq INTEGER NOT NULL,
    error TEXT NOT NULL,
    PRIMARY KEY (fingerprint, hash, chunk_params, seq)
) WITHOUT ROWID;
"""

# Results of the local language models (query expansions, rerank scores), keyed by everything
# that decides them (model file hash, prompt version, input), so a repeated query costs no
# generation. It is derived data: any row may be deleted at any time.
_V4 = """
CREATE TABLE llm_cache (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
"""

# Keyword search weighs what a document defines (headings, documented names, option names; see
# sources/outline.py) in two columns of their own. FTS5 cannot add columns, so the table is made
# again and refilled from what each row stored, with the new columns empty; the indexer version
# that comes with this schema makes the next `update` re-read every file and fill them.
_V5_STEPS = (
    "ALTER TABLE documents ADD COLUMN fts_headings TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE documents ADD COLUMN fts_options TEXT NOT NULL DEFAULT ''",
    "DROP TABLE documents_fts",
    f"CREATE VIRTUAL TABLE documents_fts USING fts5(path, title, body, headings, options,"
    f" tokenize = '{FTS_TOKENIZER}', content = '')",
    "INSERT INTO documents_fts (rowid, path, title, body, headings, options)"
    " SELECT d.id, d.fts_path, d.fts_title, coalesce(d.fts_body, c.body), '', ''"
    " FROM documents AS d JOIN content AS c ON c.hash = d.hash",
)


def _v5(conn: Any) -> None:
    for statement in _V5_STEPS:
        conn.execute(statement)


# Agent transcripts (issue 13). A session is a document (its text is the turns' texts, blank-line
# separated, and each turn is a chunk of it); these tables keep what a document row cannot: the
# session's facts and append state, its runs, and one row per turn with its role, time, source
# line and place in the session text, searchable on its own in turns_fts (contentless, like
# documents_fts: rows are deleted by replaying transcript_turns.fts_text, else the text slice).
_V6 = f"""
CREATE TABLE transcript_sessions (
    doc_id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    source_format TEXT NOT NULL,
    project TEXT,
    title TEXT,
    parent_session_id TEXT,
    first_timestamp TEXT,
    last_timestamp TEXT,
    run_count INTEGER NOT NULL DEFAULT 0,
    turn_count INTEGER NOT NULL DEFAULT 0,
    end_offset INTEGER NOT NULL,
    line_count INTEGER NOT NULL,
    prefix_sha TEXT NOT NULL,
    state TEXT NOT NULL,
    redacted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX transcript_sessions_session ON transcript_sessions (session_id);

CREATE TABLE transcript_runs (
    doc_id INTEGER NOT NULL,
    run_index INTEGER NOT NULL,
    prompt TEXT NOT NULL,
    line INTEGER NOT NULL,
    timestamp TEXT,
    PRIMARY KEY (doc_id, run_index)
) WITHOUT ROWID;

CREATE TABLE transcript_turns (
    id INTEGER PRIMARY KEY,
    doc_id INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    turn_id TEXT NOT NULL,
    role TEXT NOT NULL,
    kind TEXT NOT NULL,
    tool_name TEXT,
    line INTEGER NOT NULL,
    timestamp TEXT,
    epoch REAL,
    run_index INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    fts_text TEXT
);
CREATE INDEX transcript_turns_doc ON transcript_turns (doc_id, seq);

CREATE VIRTUAL TABLE turns_fts USING fts5(text, tokenize = '{FTS_TOKENIZER}', content = '')
"""

# Front-matter fields (issue 27), one row per value of a document: a list field has a row per
# element (seq), in the order written (position). Keyed by document id, which a move keeps; the
# rows go with their document (documents.delete_document). Keyed by content hash they took 2.5
# times the space (the 64-character hash in every row and again in the index). `folded` is the
# value case-folded for `=`; `number` and `day` are set when the value is a number or holds a
# date, for `>=` and `<=`, each with a partial index (a date range over 5,000 documents took
# 14 ms through the name index, 3 ms through its own). The indexer version that comes with this
# schema makes the next `update` read every file again and fill it.
_V7 = """
CREATE TABLE document_fields (
    doc_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    name TEXT NOT NULL COLLATE NOCASE,
    many INTEGER NOT NULL,
    kind TEXT NOT NULL,
    value TEXT NOT NULL,
    folded TEXT NOT NULL,
    number REAL,
    day TEXT,
    PRIMARY KEY (doc_id, position, seq)
) WITHOUT ROWID;
CREATE INDEX document_fields_value ON document_fields (name, folded);
CREATE INDEX document_fields_day ON document_fields (name, day) WHERE day IS NOT NULL;
CREATE INDEX document_fields_number ON document_fields (name, number) WHERE number IS NOT NULL
"""

# Text extracted from PDF, HTML, Word and EPUB files (issue 27), cached by the document's content
# hash (of the file's bytes and the extractor's name) and the extractor's version, so an
# unchanged file is never extracted twice, even after it left the index for a while (moved out
# and back, a collection removed and added again, a new indexer version). A failure is cached too
# (text NULL, failure = its reason), so a bad file costs one try. Derived data: any row may be
# deleted. ``seen_at`` ages out rows no document uses.
_V8 = """
CREATE TABLE extractions (
    hash TEXT NOT NULL,
    extractor TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    body TEXT,
    pages TEXT NOT NULL DEFAULT '[]',
    notices TEXT NOT NULL DEFAULT '[]',
    failure TEXT,
    extracted_at TEXT NOT NULL,
    seen_at TEXT NOT NULL,
    PRIMARY KEY (hash, extractor)
) WITHOUT ROWID
"""

# Files `update` read and skipped on purpose (corrupt, binary, too large, a bomb), with the size
# and modification time they had then: while a file still has them, the skip stands and `status`
# counts the file as skipped instead of new; once it changes it is pending again. ``max_bytes`` is
# the file size limit the skip was decided under (raising it makes the skips pending again). The
# rows of a collection are replaced by each `update` of it and go with the collection.
_V9 = """
CREATE TABLE skipped_files (
    collection TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    reason TEXT NOT NULL,
    max_bytes INTEGER NOT NULL,
    PRIMARY KEY (collection, path)
) WITHOUT ROWID
"""

Migration = Callable[[Any], None]


def script(sql: str) -> Migration:
    """A migration that runs the statements of ``sql`` (each ends with ";" and a new line), in
    order; both backends' migrations are made of these."""

    def run(conn: Any) -> None:
        for statement in sql.split(";\n"):
            if statement.strip():
                conn.execute(statement)

    return run


MIGRATIONS: list[Migration] = [
    script(_V1),
    script(_V2),
    script(_V3),
    script(_V4),
    _v5,
    script(_V6),
    script(_V7),
    script(_V8),
    script(_V9),
]
SCHEMA_VERSION = len(MIGRATIONS)


def migrate(conn: Any) -> int:
    """Bring the schema up to date; returns the version reached."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    for number, step in enumerate(MIGRATIONS[current:], start=current + 1):
        step(conn)
        conn.execute(f"PRAGMA user_version = {number}")
    return SCHEMA_VERSION
