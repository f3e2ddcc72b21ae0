"""Front-matter fields on PostgreSQL: store/fields.py's writing and reading functions.

``--where`` is not here yet: its filter (store/fields.DocumentFilter) is SQL written for SQLite
and put into the FTS5 query; the PostgreSQL search needs its own (docs/backends.md, the plan), so
``matching_ids`` is absent and a filtered search answers BACKEND_UNSUPPORTED.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any


def add_fields(conn: Any, rows: Sequence[tuple[Any, ...]]) -> None:
    """Fields of new documents: (doc_id, *FieldRow) rows, in one COPY."""
    if not rows:
        return
    with conn.copy(
        "COPY document_fields (doc_id, position, seq, name, many, kind, value, folded, number, day)"
        " FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row(row)


def delete_fields(conn: Any, doc_id: int) -> None:
    conn.execute("DELETE FROM document_fields WHERE doc_id = %s", (doc_id,))


def fields_of(conn: Any, documents: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[Any]]:
    """Each (collection, path)'s field rows, in the order written: (name, many, kind, value)."""
    found: dict[tuple[str, str], list[Any]] = {}
    for collection, path in dict.fromkeys(documents):
        rows = conn.execute(
            "SELECT f.name, f.many, f.kind, f.value FROM documents AS d"
            " JOIN document_fields AS f ON f.doc_id = d.id"
            " WHERE d.collection = %s AND d.path = %s ORDER BY f.position, f.seq",
            (collection, path),
        )
        found[(collection, path)] = [tuple(row) for row in rows]
    return found
