"""Front-matter fields on PostgreSQL: what differs from store/fields.py (written once for both).

``--where``: store/fields.DocumentFilter's SQL is SQLite's, so the test is written here again from
its conditions (store/fields.passing), with the same meaning: a field's name in any case (SQLite's
COLLATE NOCASE, ``lower(name)`` here, which the index on it serves), a list field passing when any
element does, and ``!=`` passing a document without the field.
"""

from __future__ import annotations

from typing import Any

from ..dialect import POSTGRES
from ..fields import DocumentFilter
from ..fields import passing as _passing


def passing(where: DocumentFilter, id_column: str) -> tuple[str, list[Any]]:
    """The condition on ``id_column`` (a document id) that passes every condition of ``where``,
    and its parameters, in psycopg's placeholders: for keyword search to filter inside its
    statement."""
    test, params = _passing(where.conditions, id_column, same_name="lower(name) = lower(?)")
    return "(" + (POSTGRES.sql(test) or "true") + ")", params


def matching_ids(conn: Any, where: DocumentFilter) -> frozenset[int]:
    """The ids of the documents that pass every condition of ``where``."""
    condition, params = passing(where, "id")
    rows = conn.execute(f"SELECT id FROM documents WHERE {condition}", params)
    return frozenset(int(row[0]) for row in rows)
