"""SQL for agent transcripts: sessions (documents with facts and append state), runs and turns.

A session is a row of ``documents`` (its text is the turns' texts) plus a row here; each turn is a
row of ``transcript_turns`` pointing at its slice of the session text, and a row of the
contentless ``turns_fts`` (deleted by replaying ``fts_text``, else the slice). Callers pass text
already segmented.

The functions marked ``@both`` serve PostgreSQL too (store/dialect.py). What differs is each
backend's own, under the same name here and in store/postgres/transcripts.py: writing turns
(``put_turns``) and taking them out of the keyword index (``unindex_turns``), a grown session's
new text (``replace_text``, ``copy_vectors``, ``drop_texts``) and matching and scoring turns
(``turn_total``, ``turn_phrase_frequency``, ``turn_phrase_bm25``, ``search_groups``,
``vector_groups``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from . import documents as doc_store
from . import routed
from .dialect import both, dialect, run, run_many
from .transcript_rows import (
    GroupRow,
    SessionFacts,
    StoredSession,
    TurnFilter,
    TurnRow,
    TurnView,
)

_SESSION_COLUMNS = (
    "d.id AS doc_id, d.path, d.hash, d.size, d.mtime_ns, s.session_id, s.source_format, s.project, s.title,"
    " s.parent_session_id, s.first_timestamp, s.last_timestamp, s.run_count, s.turn_count, s.end_offset,"
    " s.line_count, s.prefix_sha, s.state, s.redacted, d.collection, d.title AS doc_title"
)
_SESSIONS = f"SELECT {_SESSION_COLUMNS} FROM transcript_sessions AS s JOIN documents AS d ON d.id = s.doc_id"


def _session(row: Sequence[Any]) -> StoredSession:
    return StoredSession(*row)  # the columns above are in the dataclass's order


@both
def sessions_in(conn: Any, collection: str) -> dict[str, StoredSession]:
    """Source path -> session, for one collection."""
    rows = run(conn, f"{_SESSIONS} WHERE d.collection = ?", (collection,))
    return {row[1]: _session(row) for row in rows}


@both
def session_by_id(conn: Any, collections: Sequence[str], session_id: str) -> list[StoredSession]:
    """Sessions whose id is (or, failing that, starts with) ``session_id``."""
    among, names = dialect(conn).one_of("d.collection", collections)
    scope = f"{_SESSIONS} WHERE {among}"
    rows = run(conn, scope + " AND s.session_id = ?", (*names, session_id)).fetchall()
    if not rows:
        # Byte order (COLLATE "C" on PostgreSQL), as SQLite compares: the same prefix bound names
        # the same ids.
        rows = run(
            conn,
            scope + " AND (s.session_id >= ? AND s.session_id < ?) ORDER BY s.session_id LIMIT 20",
            (*names, session_id, session_id + "\uffff"),
        ).fetchall()
    return [_session(row) for row in rows]


@both
def session_at(conn: Any, collection: str, path: str) -> StoredSession | None:
    row = run(conn, f"{_SESSIONS} WHERE d.collection = ? AND d.path = ?", (collection, path)).fetchone()
    return _session(row) if row else None


_SESSION_FACTS = (
    "doc_id, session_id, source_format, project, title, parent_session_id, first_timestamp,"
    " last_timestamp, run_count, turn_count, end_offset, line_count, prefix_sha, state, redacted"
)


@both
def put_session(conn: Any, doc_id: int, facts: SessionFacts) -> None:
    run(
        conn,
        dialect(conn).upsert("transcript_sessions", _SESSION_FACTS, key="doc_id"),
        (
            doc_id,
            facts.session_id,
            facts.source_format,
            facts.project,
            facts.title,
            facts.parent_session_id,
            facts.first_timestamp,
            facts.last_timestamp,
            facts.run_count,
            facts.turn_count,
            facts.end_offset,
            facts.line_count,
            facts.prefix_sha,
            facts.state,
            facts.redacted,
        ),
    )


@both
def set_read_position(
    conn: Any,
    doc_id: int,
    size: int,
    mtime_ns: int,
    end_offset: int,
    line_count: int,
    prefix_sha: str,
    state: str,
) -> None:
    """Nothing new to index (a truncated line, blank lines): remember where reading stopped."""
    run(conn, "UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, doc_id))
    run(
        conn,
        "UPDATE transcript_sessions SET end_offset = ?, line_count = ?, prefix_sha = ?, state = ?"
        " WHERE doc_id = ?",
        (end_offset, line_count, prefix_sha, state, doc_id),
    )


@both
def put_runs(conn: Any, doc_id: int, runs: Iterable[tuple[int, str, int, str | None]]) -> None:
    run_many(
        conn,
        dialect(conn).upsert(
            "transcript_runs", "doc_id, run_index, prompt, line, timestamp", key="doc_id, run_index"
        ),
        [(doc_id, *one) for one in runs],
    )


def turn_values(doc_id: int, turn: TurnRow) -> tuple[Any, ...]:
    """A turn's row of ``transcript_turns`` from ``doc_id`` to ``fts_text`` (None when it is the text
    itself), as both backends' ``put_turns`` write it."""
    return (
        doc_id,
        turn.seq,
        turn.turn_id,
        turn.role,
        turn.kind,
        turn.tool_name,
        turn.line,
        turn.timestamp,
        turn.epoch,
        turn.run_index,
        turn.start_char,
        turn.end_char,
        turn.start_line,
        turn.end_line,
        None if turn.fts_text == turn.text else turn.fts_text,
    )


def put_turns(conn: Any, doc_id: int, turns: Sequence[TurnRow]) -> None:
    for turn in turns:
        cursor = conn.execute(
            "INSERT INTO transcript_turns (doc_id, seq, turn_id, role, kind, tool_name, line, timestamp,"
            " epoch, run_index, start_char, end_char, start_line, end_line, fts_text)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            turn_values(doc_id, turn),
        )
        conn.execute("INSERT INTO turns_fts (rowid, text) VALUES (?, ?)", (cursor.lastrowid, turn.fts_text))


def unindex_turns(conn: Any, doc_id: int) -> None:
    """The session's turns, out of the keyword index first."""
    rows = conn.execute(
        "SELECT t.id, coalesce(t.fts_text, substr(c.body, t.start_char + 1, t.end_char - t.start_char))"
        " FROM transcript_turns AS t JOIN documents AS d ON d.id = t.doc_id"
        " JOIN content AS c ON c.hash = d.hash WHERE t.doc_id = ?",
        (doc_id,),
    ).fetchall()
    conn.executemany(
        "INSERT INTO turns_fts (turns_fts, rowid, text) VALUES ('delete', ?, ?)", [(r[0], r[1]) for r in rows]
    )
    conn.execute("DELETE FROM transcript_turns WHERE doc_id = ?", (doc_id,))


@both
def delete_session(conn: Any, doc_id: int) -> None:
    """The session's turns, runs and facts; then its document row (documents.delete_document)."""
    routed.transcripts.unindex_turns(conn, doc_id)
    run(conn, "DELETE FROM transcript_runs WHERE doc_id = ?", (doc_id,))
    run(conn, "DELETE FROM transcript_sessions WHERE doc_id = ?", (doc_id,))
    routed.documents.delete_document(conn, doc_id)


@both
def delete_collection_sessions(conn: Any, collection: str) -> int:
    ids = [
        int(row[0])
        for row in run(
            conn,
            "SELECT s.doc_id FROM transcript_sessions AS s JOIN documents AS d ON d.id = s.doc_id"
            " WHERE d.collection = ?",
            (collection,),
        )
    ]
    for doc_id in ids:
        delete_session(conn, doc_id)
    return len(ids)


@both
def replace_text(
    conn: Any,
    doc_id: int,
    *,
    new_hash: str,
    title: str,
    size: int,
    mtime_ns: int,
    line_count: int,
    indexed_at: str,
    fts: doc_store.FtsText,
    text: str,
) -> None:
    """The session grew: its document row keeps its id and takes the longer text (out of the
    keyword index before, back in after)."""
    routed.documents.unindex_keywords(conn, doc_id)
    run(
        conn,
        "UPDATE documents SET hash = ?, title = ?, size = ?, mtime_ns = ?, line_count = ?, indexed_at = ?,"
        " fts_path = ?, fts_title = ?, fts_body = ?, fts_headings = ?, fts_options = ? WHERE id = ?",
        (
            new_hash,
            title,
            size,
            mtime_ns,
            line_count,
            indexed_at,
            fts.path,
            fts.title,
            None if fts.body == text else fts.body,
            fts.headings,
            fts.options,
            doc_id,
        ),
    )
    routed.documents.index_keywords(conn, doc_id, fts)


# chunk_vectors is keyed by (fingerprint, hash, ...): naming the models lets a look-up by hash use it.
_BY_MODEL = "fingerprint IN (SELECT fingerprint FROM embed_models)"


def copy_vectors(conn: Any, old_hash: str, new_hash: str, params: str) -> None:
    """Vectors of the chunks a grown session keeps (same seq, same text) follow it to its new text."""
    conn.execute(
        "INSERT OR IGNORE INTO chunk_vectors (fingerprint, hash, chunk_params, seq, window, embedding_id,"
        " start_line, end_line) SELECT fingerprint, ?, chunk_params, seq, window, embedding_id,"
        f" start_line, end_line FROM chunk_vectors WHERE {_BY_MODEL} AND hash = ? AND chunk_params = ?",
        (new_hash, old_hash, params),
    )


def drop_texts(conn: Any, hashes: Iterable[str]) -> None:
    """Texts a grown session replaced, with their chunks, unless another document still has them
    (a targeted prune: the generic one scans every chunk of the index)."""
    for content_hash in set(hashes):
        if conn.execute("SELECT 1 FROM documents WHERE hash = ? LIMIT 1", (content_hash,)).fetchone():
            continue
        conn.execute("DELETE FROM content WHERE hash = ?", (content_hash,))
        conn.execute("DELETE FROM chunks WHERE hash = ?", (content_hash,))
        conn.execute("DELETE FROM chunk_runs WHERE hash = ?", (content_hash,))
        conn.execute(f"DELETE FROM chunk_vectors WHERE {_BY_MODEL} AND hash = ?", (content_hash,))


@both
def move_session(
    conn: Any, doc_id: int, new_path: str, fts_path: str, size: int, mtime_ns: int, indexed_at: str
) -> None:
    routed.documents.move_document(conn, doc_id, new_path, fts_path, size, mtime_ns, indexed_at)


@both
def last_turn_seq(conn: Any, doc_id: int) -> int:
    row = run(conn, "SELECT max(seq) FROM transcript_turns WHERE doc_id = ?", (doc_id,)).fetchone()
    return -1 if row[0] is None else int(row[0])


# --- search ------------------------------------------------------------------------------------


def _where(conn: Any, filters: TurnFilter) -> tuple[str, list[Any]]:
    """The condition on turns (``t``) of ``filters`` in the connection's own placeholders (it joins
    statements built in them: search_groups's), and its parameters."""
    words = dialect(conn)
    among, params = words.one_of("d.collection", filters.collections)
    scope = (
        "t.doc_id IN (SELECT s.doc_id FROM transcript_sessions AS s JOIN documents AS d ON d.id = s.doc_id"
        f" WHERE {among}"
    )
    if filters.project:
        scope += " AND " + words.contains("coalesce(s.project, '')")
        params.append(filters.project)
    clauses = [scope + ")"]
    if filters.roles:
        roles, values = words.one_of("t.role", filters.roles)
        clauses.append(roles)
        params.extend(values)
    if filters.since is not None:
        clauses.append("t.epoch >= ?")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append("t.epoch < ?")
        params.append(filters.until)
    return words.sql(" AND ".join(clauses)), params


# The expression that groups turns into the unit of each level.
LEVEL_KEYS = {
    "turn": "t.id",
    "run": "t.doc_id || ':' || t.run_index",
    "session": "t.doc_id",
    "project": "(SELECT coalesce(p.project, '') FROM transcript_sessions AS p WHERE p.doc_id = t.doc_id)",
}


def turn_total(conn: Any) -> int:
    """How many turns the turn index holds: the N of its BM25 IDF."""
    return int(conn.execute("SELECT count(*) FROM transcript_turns").fetchone()[0])


def turn_phrase_frequency(conn: Any, expression: str) -> int:
    """How many turns (of any collection) match ``expression``: the df of its BM25 IDF."""
    row = conn.execute("SELECT count(*) FROM turns_fts WHERE turns_fts MATCH ?", (expression,)).fetchone()
    return int(row[0])


def turn_phrase_bm25(conn: Any, expression: str, ids: Sequence[int]) -> dict[int, float]:
    """Raw bm25 of one phrase for these turns (absent: the turn does not contain it); the match
    runs once and the ids are filtered here, as documents.phrase_bm25 does."""
    if not ids:
        return {}
    wanted = set(ids)
    rows = conn.execute("SELECT rowid, bm25(turns_fts) FROM turns_fts WHERE turns_fts MATCH ?", (expression,))
    return {row[0]: row[1] for row in rows if row[0] in wanted}


@both
def search_groups(
    conn: Any, expression: str, filters: TurnFilter, level: str, limit: int | None
) -> tuple[list[GroupRow], int]:
    """The best turn of each unit of ``level`` that matches, best first, and how many units match."""
    scored, args = routed.transcripts.scored_turns(conn, expression)
    where, params = _where(conn, filters)
    matched = (
        "SELECT t.id AS id, t.doc_id AS doc_id, t.epoch AS epoch, m.score AS score,"
        f" {LEVEL_KEYS[level]} AS unit FROM ({scored}) AS m"
        f" JOIN transcript_turns AS t ON t.id = m.id WHERE {where}"
    )
    return _groups(conn, matched, [*args, *params], limit)


def scored_turns(conn: Any, expression: str) -> tuple[str, list[Any]]:
    """The statement of the turns ``expression`` matches, (id, raw bm25), and its parameters."""
    return "SELECT rowid AS id, bm25(turns_fts) AS score FROM turns_fts WHERE turns_fts MATCH ?", [expression]


@both
def vector_groups(
    conn: Any,
    chunks: Sequence[tuple[int, int, float]],
    filters: TurnFilter,
    level: str,
    limit: int | None,
) -> tuple[list[GroupRow], int]:
    """As :func:`search_groups`, for vector hits: ``chunks`` are (document id, first line in the
    session text, cosine similarity) of chunk windows; each turn takes its best chunk's score
    (GroupRow.bm25 is then minus the similarity, so that lower is better here too)."""
    if not chunks:
        return [], 0
    rows, args = routed.transcripts.chunk_rows(conn, chunks)
    where, params = _where(conn, filters)
    matched = (
        "SELECT t.id AS id, t.doc_id AS doc_id, t.epoch AS epoch, min(-c.similarity) AS score,"
        f" {LEVEL_KEYS[level]} AS unit FROM ({rows}) AS c JOIN transcript_turns AS t"
        " ON t.doc_id = c.doc_id AND c.line BETWEEN t.start_line AND t.end_line"
        f" WHERE {where} GROUP BY t.id"
    )
    return _groups(conn, matched, [*args, *params], limit)


def chunk_rows(conn: Any, chunks: Sequence[tuple[int, int, float]]) -> tuple[str, list[Any]]:
    """``chunks`` as the rows (doc_id, line, similarity) of a statement, and its parameters."""
    import json

    return (
        "SELECT value ->> 0 AS doc_id, value ->> 1 AS line, value ->> 2 AS similarity FROM json_each(?)",
        [json.dumps(list(chunks))],
    )


def _groups(conn: Any, matched: str, args: list[Any], limit: int | None) -> tuple[list[GroupRow], int]:
    """The rule of every level, on both backends: ``matched`` (turns with a score, lower is
    better, and the unit of the level they belong to; in the driver's own placeholders) grouped by
    unit, each unit represented by its best turn (lowest score, then lowest id: a bare column
    beside several min/max aggregates would be any row's), best first."""
    sql = (
        f"WITH m AS MATERIALIZED ({matched}),"
        " g AS (SELECT unit, min(score) AS best, count(*) AS n, min(epoch) AS first, max(epoch) AS last,"
        " count(DISTINCT doc_id) AS docs FROM m GROUP BY unit),"
        " b AS (SELECT unit, id, row_number() OVER (PARTITION BY unit ORDER BY score, id) AS rank FROM m)"
        " SELECT b.id, g.best, g.n, g.first, g.last, g.docs, count(*) OVER () AS units"
        " FROM g JOIN b ON b.unit = g.unit AND b.rank = 1 ORDER BY g.best, b.id"
    )
    if limit is not None:
        sql += f" LIMIT {dialect(conn).mark}"
        args.append(limit)
    rows = conn.execute(sql, args).fetchall()
    total = int(rows[0][6]) if rows else 0
    return [GroupRow(int(r[0]), float(r[1]), int(r[2]), r[3], r[4], int(r[5])) for r in rows], total


_TURN_VIEW = (
    "SELECT t.id, t.doc_id, d.collection, d.path, d.hash, d.size, d.mtime_ns, d.title AS doc_title, t.seq,"
    " t.turn_id, t.role, t.kind, t.tool_name, t.line, t.timestamp, t.run_index, r.prompt AS run_prompt,"
    " t.start_line, t.end_line, substr(c.body, t.start_char + 1, t.end_char - t.start_char) AS text,"
    " s.session_id, s.project, s.title AS session_title, s.source_format, s.parent_session_id,"
    " s.first_timestamp, s.last_timestamp"
    " FROM transcript_turns AS t JOIN documents AS d ON d.id = t.doc_id JOIN content AS c ON c.hash = d.hash"
    " JOIN transcript_sessions AS s ON s.doc_id = t.doc_id"
    " LEFT JOIN transcript_runs AS r ON r.doc_id = t.doc_id AND r.run_index = t.run_index"
)


def _view(row: Sequence[Any]) -> TurnView:
    return TurnView(*row)


@both
def turns_by_ids(conn: Any, ids: Sequence[int]) -> dict[int, TurnView]:
    if not ids:
        return {}
    among, params = dialect(conn).one_of("t.id", ids)
    rows = run(conn, f"{_TURN_VIEW} WHERE {among}", params)
    return {int(row[0]): _view(row) for row in rows}


@both
def session_turns(
    conn: Any, doc_id: int, *, from_line: int = 1, run: int | None = None, limit: int | None = None
) -> list[TurnView]:
    sql = f"{_TURN_VIEW} WHERE t.doc_id = ? AND t.line >= ?"
    args: list[Any] = [doc_id, from_line]
    if run is not None:
        sql += " AND t.run_index = ?"
        args.append(run)
    sql += " ORDER BY t.seq"
    if limit is not None:
        sql += " LIMIT ?"
        args.append(limit)
    return [_view(row) for row in conn.execute(dialect(conn).sql(sql), args)]  # (``run`` is taken)


@both
def focus_seqs(conn: Any, doc_id: int, line: int) -> tuple[int, int, int] | None:
    """The first and last turn (by seq) at source line ``line``, and that line; when no turn is
    there, the nearest turn after it (else before it). None for a session without turns."""
    at = run(
        conn, "SELECT min(seq), max(seq) FROM transcript_turns WHERE doc_id = ? AND line = ?", (doc_id, line)
    ).fetchone()
    if at[0] is not None:
        return int(at[0]), int(at[1]), line
    near = run(
        conn,
        "SELECT line FROM transcript_turns WHERE doc_id = ? ORDER BY line > ? DESC, abs(line - ?), seq"
        " LIMIT 1",
        (doc_id, line, line),
    ).fetchone()
    return None if near is None else focus_seqs(conn, doc_id, int(near[0]))


@both
def turns_by_seq(conn: Any, doc_id: int, first: int, last: int) -> list[TurnView]:
    """The session's turns with ``first <= seq <= last``, in order."""
    rows = run(
        conn,
        f"{_TURN_VIEW} WHERE t.doc_id = ? AND t.seq BETWEEN ? AND ? ORDER BY t.seq",
        (doc_id, first, last),
    )
    return [_view(row) for row in rows]


@both
def session_turn_count(conn: Any, doc_id: int) -> int:
    row = run(conn, "SELECT count(*) FROM transcript_turns WHERE doc_id = ?", (doc_id,)).fetchone()
    return int(row[0])


@both
def run_prompts(conn: Any, doc_id: int, indexes: Iterable[int]) -> dict[int, str]:
    wanted = sorted(set(indexes))
    if not wanted:
        return {}
    among, params = dialect(conn).one_of("run_index", wanted)
    rows = run(
        conn, f"SELECT run_index, prompt FROM transcript_runs WHERE doc_id = ? AND {among}", (doc_id, *params)
    )
    return {int(row[0]): row[1] for row in rows}


@both
def redaction_total(conn: Any, collection: str) -> int:
    row = run(
        conn,
        "SELECT coalesce(sum(s.redacted), 0) FROM transcript_sessions AS s"
        " JOIN documents AS d ON d.id = s.doc_id WHERE d.collection = ?",
        (collection,),
    ).fetchone()
    return int(row[0])
