"""Schema questions on PostgreSQL, as store/db.py answers them for SQLite."""

from __future__ import annotations

from typing import Any


def has_table(conn: Any, name: str) -> bool:
    """Whether the schema has a table of that name (vectors' tables come with `embed`)."""
    return conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None


def read_snapshot(conn: Any) -> None:
    """Nothing to start: a PostgreSQL read block is one REPEATABLE READ transaction already."""
