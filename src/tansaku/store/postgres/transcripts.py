"""SQL for agent transcripts on PostgreSQL: store/transcripts.py's functions with the same names,
arguments and results (see store/backend.py).

A session is a row of ``documents`` plus a row of ``transcript_sessions``; each turn a row of
``transcript_turns``. SQLite's contentless ``turns_fts`` is ``turn_postings`` here (each turn's
tokens and positions, made by FTS5's own tokenizer: tokens.py) with ``turn_totals``, and turns
are matched and scored in the server (bm25_sql.py) as FTS5's ``bm25(turns_fts)`` scores them (one column,
weight 1), so the same turns come out in the same order with the same scores. Turn ids are
assigned as SQLite assigns rowids (one more than the largest): ties break by id on both.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..documents import FtsText
from ..transcripts import GroupRow, SessionFacts, StoredSession, TurnFilter, TurnRow, TurnView
from . import bm25_sql, documents
from .bm25_sql import TURN_POSTINGS
from .db import deferred
from .expression import Phrase, parse
from .tokens import text_positions

# bm25(turns_fts) with no weights: its one column weighs 1.
_WEIGHTS = (1.0,)

_SESSION_COLUMNS = (
    "d.id AS doc_id, d.path, d.hash, d.size, d.mtime_ns, s.session_id, s.source_format, s.project, s.title,"
    " s.parent_session_id, s.first_timestamp, s.last_timestamp, s.run_count, s.turn_count, s.end_offset,"
    " s.line_count, s.prefix_sha, s.state, s.redacted, d.collection, d.title AS doc_title"
)
_SESSIONS = f"SELECT {_SESSION_COLUMNS} FROM transcript_sessions AS s JOIN documents AS d ON d.id = s.doc_id"


def _session(row: Sequence[Any]) -> StoredSession:
    return StoredSession(*row)  # the columns above are in the dataclass's order


def sessions_in(conn: Any, collection: str) -> dict[str, StoredSession]:
    rows = conn.execute(f"{_SESSIONS} WHERE d.collection = %s", (collection,))
    return {row[1]: _session(row) for row in rows}


def session_by_id(conn: Any, collections: Sequence[str], session_id: str) -> list[StoredSession]:
    scope = f"{_SESSIONS} WHERE d.collection = ANY(%s)"
    names = list(collections)
    rows = conn.execute(scope + " AND s.session_id = %s", (names, session_id)).fetchall()
    if not rows:
        # Byte order (COLLATE "C"), as SQLite compares: the same prefix bound names the same ids.
        rows = conn.execute(
            scope + " AND s.session_id >= %s AND s.session_id < %s ORDER BY s.session_id LIMIT 20",
            (names, session_id, session_id + "\uffff"),
        ).fetchall()
    return [_session(row) for row in rows]


def session_at(conn: Any, collection: str, path: str) -> StoredSession | None:
    row = conn.execute(f"{_SESSIONS} WHERE d.collection = %s AND d.path = %s", (collection, path)).fetchone()
    return _session(row) if row else None


def put_session(conn: Any, doc_id: int, facts: SessionFacts) -> None:
    conn.execute(
        "INSERT INTO transcript_sessions (doc_id, session_id, source_format, project, title,"
        " parent_session_id, first_timestamp, last_timestamp, run_count, turn_count, end_offset, line_count,"
        " prefix_sha, state, redacted) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (doc_id) DO UPDATE SET session_id = excluded.session_id,"
        " source_format = excluded.source_format, project = excluded.project, title = excluded.title,"
        " parent_session_id = excluded.parent_session_id, first_timestamp = excluded.first_timestamp,"
        " last_timestamp = excluded.last_timestamp, run_count = excluded.run_count,"
        " turn_count = excluded.turn_count, end_offset = excluded.end_offset,"
        " line_count = excluded.line_count,"
        " prefix_sha = excluded.prefix_sha, state = excluded.state, redacted = excluded.redacted",
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
    conn.execute("UPDATE documents SET size = %s, mtime_ns = %s WHERE id = %s", (size, mtime_ns, doc_id))
    conn.execute(
        "UPDATE transcript_sessions SET end_offset = %s, line_count = %s, prefix_sha = %s, state = %s"
        " WHERE doc_id = %s",
        (end_offset, line_count, prefix_sha, state, doc_id),
    )


def put_runs(conn: Any, doc_id: int, runs: Iterable[tuple[int, str, int, str | None]]) -> None:
    rows = [(doc_id, *run) for run in runs]
    if not rows:
        return
    conn.executemany(
        "INSERT INTO transcript_runs (doc_id, run_index, prompt, line, timestamp) VALUES (%s, %s, %s, %s, %s)"
        " ON CONFLICT (doc_id, run_index) DO UPDATE SET prompt = excluded.prompt, line = excluded.line,"
        " timestamp = excluded.timestamp",
        rows,
    )


def put_turns(conn: Any, doc_id: int, turns: Sequence[TurnRow]) -> None:
    """The turns' rows and their keyword postings, each sent in one COPY."""
    if not turns:
        return
    # Numbered as SQLite numbers them while this writer is alone (migrations.py: tansaku_take_ids).
    ids = conn.execute(
        "SELECT tansaku_take_ids('turn_ids', 'transcript_turns', %s)", (len(turns),)
    ).fetchone()[0]
    rows: list[tuple[Any, ...]] = []
    postings: list[tuple[str, int, str]] = []
    total_tokens = 0
    for turn_id, turn in zip(ids, turns, strict=True):
        places: dict[str, list[int]] = {}
        tokens = text_positions(turn.fts_text)
        for at, term in tokens:
            places.setdefault(term, []).append(at)
        postings.extend((term, turn_id, "{" + ",".join(map(str, at)) + "}") for term, at in places.items())
        total_tokens += len(tokens)
        rows.append(
            (
                turn_id,
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
                len(tokens),
            )
        )
    with conn.copy(
        "COPY transcript_turns (id, doc_id, seq, turn_id, role, kind, tool_name, line, timestamp, epoch,"
        " run_index, start_char, end_char, start_line, end_line, fts_text, fts_tokens) FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row(row)
    if postings:
        with conn.copy("COPY turn_postings (term, turn_id, positions) FROM STDIN") as copy:
            for posting in postings:
                copy.write_row(posting)
    _count_turns(conn, doc_id, len(rows), total_tokens)


def _count_turns(conn: Any, doc_id: int, turns: int, tokens: int) -> None:
    """Turns and tokens kept per collection (summed by the view turn_totals): two collections'
    writers never wait on one row."""
    conn.execute(
        "INSERT INTO collection_turn_totals (collection, turns, tokens)"
        " SELECT collection, %s, %s FROM documents WHERE id = %s"
        " ON CONFLICT (collection) DO UPDATE SET turns = collection_turn_totals.turns + excluded.turns,"
        " tokens = collection_turn_totals.tokens + excluded.tokens",
        (turns, tokens, doc_id),
    )
    if turns < 0:
        conn.execute(
            "DELETE FROM collection_turn_totals WHERE turns = 0 AND tokens = 0"
            " AND collection = (SELECT collection FROM documents WHERE id = %s)",
            (doc_id,),
        )


def _delete_turns(conn: Any, doc_id: int) -> None:
    count, tokens = conn.execute(
        "SELECT count(*), coalesce(sum(fts_tokens), 0) FROM transcript_turns WHERE doc_id = %s", (doc_id,)
    ).fetchone()
    if not count:
        return
    conn.execute(
        "DELETE FROM turn_postings WHERE turn_id IN (SELECT id FROM transcript_turns WHERE doc_id = %s)",
        (doc_id,),
    )
    _count_turns(conn, doc_id, -int(count), -int(tokens))
    conn.execute("DELETE FROM transcript_turns WHERE doc_id = %s", (doc_id,))


def delete_session(conn: Any, doc_id: int) -> None:
    """The session's turns (and their postings), runs and facts; then its document row."""
    _delete_turns(conn, doc_id)
    conn.execute("DELETE FROM transcript_runs WHERE doc_id = %s", (doc_id,))
    conn.execute("DELETE FROM transcript_sessions WHERE doc_id = %s", (doc_id,))
    documents.delete_document(conn, doc_id)


def delete_collection_sessions(conn: Any, collection: str) -> int:
    ids = [
        int(row[0])
        for row in conn.execute(
            "SELECT s.doc_id FROM transcript_sessions AS s JOIN documents AS d ON d.id = s.doc_id"
            " WHERE d.collection = %s",
            (collection,),
        )
    ]
    for doc_id in ids:
        delete_session(conn, doc_id)
    return len(ids)


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
    fts: FtsText,
    text: str,
) -> None:
    """The session grew: its document row keeps its id and takes the longer text (and postings)."""
    documents._unindex(conn, doc_id)
    batch = documents._batch(conn)
    local, lengths = batch.tokenize(fts)
    conn.execute(
        "UPDATE documents SET hash = %s, title = %s, size = %s, mtime_ns = %s, line_count = %s,"
        " indexed_at = %s, fts_path = %s, fts_title = %s, fts_body = %s, fts_headings = %s, fts_options = %s,"
        " fts_lengths = %s, fts_tokens = %s, keyword_block = %s WHERE id = %s",
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
            lengths,
            sum(lengths),
            batch.block_id(),
            doc_id,
        ),
    )
    batch.add(local, doc_id, documents.collection_of(conn, doc_id), sum(lengths))


def copy_vectors(conn: Any, old_hash: str, new_hash: str, params: str) -> None:
    """Vectors of the chunks a grown session keeps (same seq, same text) follow it to its new text."""
    conn.execute(
        "INSERT INTO chunk_vectors (fingerprint, hash, chunk_params, seq, window_no, embedding_id,"
        " start_line, end_line) SELECT fingerprint, %s, chunk_params, seq, window_no, embedding_id,"
        " start_line, end_line FROM chunk_vectors WHERE hash = %s AND chunk_params = %s"
        " ON CONFLICT DO NOTHING",
        (new_hash, old_hash, params),
    )


def drop_texts(conn: Any, hashes: Iterable[str]) -> None:
    """Texts a grown session replaced, with their chunks, unless another document still has them."""
    gone = sorted(set(hashes))
    if gone and not deferred(conn, "texts " + " ".join(gone), lambda: _drop_texts(conn, gone)):
        _drop_texts(conn, gone)


def _drop_texts(conn: Any, hashes: Sequence[str]) -> None:
    for content_hash in hashes:
        if conn.execute("SELECT 1 FROM documents WHERE hash = %s LIMIT 1", (content_hash,)).fetchone():
            continue
        conn.execute("DELETE FROM content WHERE hash = %s", (content_hash,))
        conn.execute("DELETE FROM chunks WHERE hash = %s", (content_hash,))
        conn.execute("DELETE FROM chunk_runs WHERE hash = %s", (content_hash,))
        conn.execute("DELETE FROM chunk_vectors WHERE hash = %s", (content_hash,))


def move_session(
    conn: Any, doc_id: int, new_path: str, fts_path: str, size: int, mtime_ns: int, indexed_at: str
) -> None:
    documents.move_document(conn, doc_id, new_path, fts_path, size, mtime_ns, indexed_at)


def last_turn_seq(conn: Any, doc_id: int) -> int:
    row = conn.execute("SELECT max(seq) FROM transcript_turns WHERE doc_id = %s", (doc_id,)).fetchone()
    return -1 if row[0] is None else int(row[0])


# --- search ------------------------------------------------------------------------------------


def _where(filters: TurnFilter) -> tuple[str, list[Any]]:
    scope = (
        "t.doc_id IN (SELECT s.doc_id FROM transcript_sessions AS s JOIN documents AS d ON d.id = s.doc_id"
        " WHERE d.collection = ANY(%s)"
    )
    params: list[Any] = [list(filters.collections)]
    if filters.project:
        scope += " AND strpos(coalesce(s.project, ''), %s) > 0"
        params.append(filters.project)
    clauses = [scope + ")"]
    if filters.roles:
        clauses.append("t.role = ANY(%s)")
        params.append(list(filters.roles))
    if filters.since is not None:
        clauses.append("t.epoch >= %s")
        params.append(filters.since)
    if filters.until is not None:
        clauses.append("t.epoch < %s")
        params.append(filters.until)
    return " AND ".join(clauses), params


# The expression that groups turns into the unit of each level (store/transcripts.py's).
LEVEL_KEYS = {
    "turn": "t.id",
    "run": "t.doc_id || ':' || t.run_index",
    "session": "t.doc_id",
    "project": "(SELECT coalesce(p.project, '') FROM transcript_sessions AS p WHERE p.doc_id = t.doc_id)",
}


def _cache(conn: Any) -> dict[Any, Any] | None:
    """The read block's cache of turn phrases' frequencies, apart from the documents' (the same
    phrase occurs in other rows there)."""
    cache = conn.positions_cache
    return None if cache is None else cache.setdefault("turns", {})  # type: ignore[no-any-return]


def _totals(conn: Any) -> tuple[int, int]:
    """(turns, tokens) of the turn index; read once per read block."""
    return bm25_sql.table_totals(conn, TURN_POSTINGS, _cache(conn))


def _ranked(conn: Any, expression: str, restrict: Sequence[int] | None) -> bm25_sql.Sql:
    """The statement of the turns ``expression`` matches (among ``restrict``) with their bm25,
    scored in the server as FTS5's bm25(turns_fts) scores them (see bm25_sql.py)."""
    parsed = parse(expression)
    totals = _totals(conn)
    idfs = bm25_sql.idfs(conn, TURN_POSTINGS, parsed, totals[0], _cache(conn))
    return bm25_sql.ranked(TURN_POSTINGS, parsed, _WEIGHTS, restrict, idfs, totals)


def turn_total(conn: Any) -> int:
    """How many turns the turn index holds: the N of its BM25 IDF."""
    return _totals(conn)[0]


def turn_phrase_frequency(conn: Any, expression: str) -> int:
    """How many turns (of any collection) match ``expression``: the df of its BM25 IDF."""
    parsed = parse(expression)
    if isinstance(parsed.root, Phrase):
        return bm25_sql.phrase_frequencies(conn, TURN_POSTINGS, [parsed.root], _cache(conn))[0]
    matched = bm25_sql.matching(TURN_POSTINGS, parsed, None)
    sql = bm25_sql.Sql().add("SELECT count(*) FROM (").extend(matched).add(") AS m")
    return int(conn.execute(sql.sql, sql.params).fetchone()[0])


def turn_phrase_bm25(conn: Any, expression: str, ids: Sequence[int]) -> dict[int, float]:
    """Raw bm25 of one phrase for these turns (absent: the turn does not contain it)."""
    if not ids:
        return {}
    rows = bm25_sql.run_ranked(
        conn, TURN_POSTINGS, parse(expression), _WEIGHTS, sorted(set(ids)), _cache(conn), lambda sql: sql
    )
    return {int(row[0]): float(row[1]) for row in rows}


def search_groups(
    conn: Any, expression: str, filters: TurnFilter, level: str, limit: int | None
) -> tuple[list[GroupRow], int]:
    """The best turn of each unit of ``level`` that matches, best first, and how many units match."""
    ranked = _ranked(conn, expression, None)
    where, params = _where(filters)
    matched = (
        "SELECT t.id AS id, t.doc_id AS doc_id, t.epoch AS epoch, m.score AS score,"
        f" {LEVEL_KEYS[level]} AS unit FROM ({ranked.sql}) AS m"
        f" JOIN transcript_turns AS t ON t.id = m.id WHERE {where}"
    )
    return _groups(conn, matched, [*ranked.params, *params], limit)


def vector_groups(
    conn: Any,
    chunks: Sequence[tuple[int, int, float]],
    filters: TurnFilter,
    level: str,
    limit: int | None,
) -> tuple[list[GroupRow], int]:
    """As :func:`search_groups`, for vector hits (store/transcripts.py's)."""
    if not chunks:
        return [], 0
    where, params = _where(filters)
    matched = (
        "SELECT t.id AS id, t.doc_id AS doc_id, t.epoch AS epoch, min(-c.similarity) AS score,"
        f" {LEVEL_KEYS[level]} AS unit"
        " FROM unnest(%s::bigint[], %s::integer[], %s::float8[]) AS c(doc_id, line, similarity)"
        " JOIN transcript_turns AS t ON t.doc_id = c.doc_id AND c.line BETWEEN t.start_line AND t.end_line"
        f" WHERE {where} GROUP BY t.id"
    )
    columns = [[int(c[0]) for c in chunks], [int(c[1]) for c in chunks], [float(c[2]) for c in chunks]]
    return _groups(conn, matched, [*columns, *params], limit)


def _groups(conn: Any, matched: str, args: list[Any], limit: int | None) -> tuple[list[GroupRow], int]:
    """store/transcripts.py's rule: matched turns grouped by unit, each unit shown by its best turn
    (lowest score, then lowest id), best first."""
    sql = (
        f"WITH m AS MATERIALIZED ({matched}),"
        " g AS (SELECT unit, min(score) AS best, count(*) AS n, min(epoch) AS first, max(epoch) AS last,"
        " count(DISTINCT doc_id) AS docs FROM m GROUP BY unit),"
        " b AS (SELECT unit, id, row_number() OVER (PARTITION BY unit ORDER BY score, id) AS rank FROM m)"
        " SELECT b.id, g.best, g.n, g.first, g.last, g.docs, count(*) OVER () AS units"
        " FROM g JOIN b ON b.unit = g.unit AND b.rank = 1 ORDER BY g.best, b.id"
    )
    if limit is not None:
        sql += " LIMIT %s"
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


def turns_by_ids(conn: Any, ids: Sequence[int]) -> dict[int, TurnView]:
    if not ids:
        return {}
    rows = conn.execute(f"{_TURN_VIEW} WHERE t.id = ANY(%s)", (list(ids),))
    return {int(row[0]): _view(row) for row in rows}


def session_turns(
    conn: Any, doc_id: int, *, from_line: int = 1, run: int | None = None, limit: int | None = None
) -> list[TurnView]:
    sql = f"{_TURN_VIEW} WHERE t.doc_id = %s AND t.line >= %s"
    args: list[Any] = [doc_id, from_line]
    if run is not None:
        sql += " AND t.run_index = %s"
        args.append(run)
    sql += " ORDER BY t.seq"
    if limit is not None:
        sql += " LIMIT %s"
        args.append(limit)
    return [_view(row) for row in conn.execute(sql, args)]


def focus_seqs(conn: Any, doc_id: int, line: int) -> tuple[int, int, int] | None:
    """The first and last turn (by seq) at source line ``line``, and that line; when no turn is
    there, the nearest turn after it (else before it). None for a session without turns."""
    at = conn.execute(
        "SELECT min(seq), max(seq) FROM transcript_turns WHERE doc_id = %s AND line = %s", (doc_id, line)
    ).fetchone()
    if at[0] is not None:
        return int(at[0]), int(at[1]), line
    near = conn.execute(
        "SELECT line FROM transcript_turns WHERE doc_id = %s ORDER BY line > %s DESC, abs(line - %s), seq"
        " LIMIT 1",
        (doc_id, line, line),
    ).fetchone()
    return None if near is None else focus_seqs(conn, doc_id, int(near[0]))


def turns_by_seq(conn: Any, doc_id: int, first: int, last: int) -> list[TurnView]:
    """The session's turns with ``first <= seq <= last``, in order."""
    rows = conn.execute(
        f"{_TURN_VIEW} WHERE t.doc_id = %s AND t.seq BETWEEN %s AND %s ORDER BY t.seq", (doc_id, first, last)
    )
    return [_view(row) for row in rows]


def session_turn_count(conn: Any, doc_id: int) -> int:
    row = conn.execute("SELECT count(*) FROM transcript_turns WHERE doc_id = %s", (doc_id,)).fetchone()
    return int(row[0])


def run_prompts(conn: Any, doc_id: int, indexes: Iterable[int]) -> dict[int, str]:
    wanted = sorted(set(indexes))
    if not wanted:
        return {}
    rows = conn.execute(
        "SELECT run_index, prompt FROM transcript_runs WHERE doc_id = %s AND run_index = ANY(%s)",
        (doc_id, wanted),
    )
    return {int(row[0]): row[1] for row in rows}


def redaction_total(conn: Any, collection: str) -> int:
    row = conn.execute(
        "SELECT coalesce(sum(s.redacted), 0) FROM transcript_sessions AS s"
        " JOIN documents AS d ON d.id = s.doc_id WHERE d.collection = %s",
        (collection,),
    ).fetchone()
    return int(row[0])
