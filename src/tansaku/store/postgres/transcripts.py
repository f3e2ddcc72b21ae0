"""Agent transcripts on PostgreSQL: what differs from store/transcripts.py, under the same names,
arguments and results (store/transcripts.py's ``@both`` functions serve both backends).

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

from ..transcripts import TurnRow, turn_values
from . import bm25_sql
from .bm25_sql import TURN_POSTINGS
from .db import deferred
from .expression import Phrase, parse
from .tokens import text_positions

# bm25(turns_fts) with no weights: its one column weighs 1.
_WEIGHTS = (1.0,)


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
        rows.append((turn_id, *turn_values(doc_id, turn), len(tokens)))
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


def unindex_turns(conn: Any, doc_id: int) -> None:
    """The session's turns and their postings (and the turn totals)."""
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


# --- search ------------------------------------------------------------------------------------


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


def scored_turns(conn: Any, expression: str) -> tuple[str, list[Any]]:
    """The statement of the turns ``expression`` matches, (id, raw bm25), and its parameters."""
    ranked = _ranked(conn, expression, None)
    return ranked.sql, list(ranked.params)


def chunk_rows(conn: Any, chunks: Sequence[tuple[int, int, float]]) -> tuple[str, list[Any]]:
    """``chunks`` as the rows (doc_id, line, similarity) of a statement, and its parameters."""
    columns = [[int(c[0]) for c in chunks], [int(c[1]) for c in chunks], [float(c[2]) for c in chunks]]
    return (
        "SELECT * FROM unnest(%s::bigint[], %s::integer[], %s::float8[]) AS c(doc_id, line, similarity)",
        columns,
    )
