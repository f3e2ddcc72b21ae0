"""Read-only consistency queries for `tansaku doctor` on PostgreSQL, beside store/health.py's
``stored_vectors`` (written for both backends)."""

from __future__ import annotations

from typing import Any


def keyword_totals_drift(conn: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """((documents, tokens) kept by update, (documents, tokens) counted now)."""
    return _drift(conn, "SELECT docs, tokens FROM keyword_totals", "documents")


def turn_totals_drift(conn: Any) -> tuple[tuple[int, int], tuple[int, int]]:
    """((turns, tokens) kept by update, (turns, tokens) counted now): the N and average length
    of the transcript turns' BM25."""
    return _drift(conn, "SELECT turns, tokens FROM turn_totals", "transcript_turns")


def _drift(conn: Any, kept_sql: str, table: str) -> tuple[tuple[int, int], tuple[int, int]]:
    kept = conn.execute(kept_sql).fetchone()
    counted = conn.execute(f"SELECT count(*), coalesce(sum(fts_tokens), 0) FROM {table}").fetchone()
    return (int(kept[0]), int(kept[1])), (int(counted[0]), int(counted[1]))


def term_stats_drift(conn: Any, limit: int = 5) -> tuple[int, list[str]]:
    """How many terms' kept document frequency differs from a count of their postings, and the
    first few of them (a full pass over ``postings``: doctor --deep only)."""
    rows = conn.execute(
        "WITH counted AS (SELECT p.term, count(DISTINCT u.d) AS df FROM postings AS p, unnest(p.docs) AS u(d)"
        " GROUP BY p.term)"
        " SELECT coalesce(c.term, s.term) FROM counted AS c FULL JOIN term_stats AS s ON s.term = c.term"
        " WHERE c.df IS DISTINCT FROM s.df ORDER BY 1"
    ).fetchall()
    return len(rows), [row[0] for row in rows[:limit]]
