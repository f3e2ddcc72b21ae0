"""How much of the database each of tansaku's tables takes (heap, TOAST and indexes)."""

from __future__ import annotations

from typing import Any


def relation_sizes(conn: Any) -> dict[str, int]:
    """Bytes per table of the current schema (with its indexes and TOAST), largest first."""
    rows = conn.execute(
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class AS c"
        " WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace"
        " ORDER BY 2 DESC, 1"
    ).fetchall()
    return {str(name): int(size) for name, size in rows}
