"""Schema questions on PostgreSQL, as store/db.py answers them for SQLite."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def has_table(conn: Any, name: str) -> bool:
    """Whether the schema has a table of that name (vectors' tables come with `embed`)."""
    return conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None


def insert_rows(conn: Any, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
    """New rows of ``table`` in one COPY (store/db.py's, for SQLite, is an INSERT)."""
    if rows:
        with conn.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)


def read_snapshot(conn: Any) -> None:
    """Nothing to start: a PostgreSQL read block is one REPEATABLE READ transaction already."""


def deferred(conn: Any, name: str, prune: Callable[[], object]) -> bool:
    """Whether ``prune`` is left to the end of a collection writer's transaction (it runs then if
    no other writer is about: PostgresBackend._prune_if_alone); False for any other writer,
    which runs it now."""
    if not getattr(conn, "shared_writer", False):
        return False
    conn.deferred_prunes.setdefault(name, prune)
    return True
