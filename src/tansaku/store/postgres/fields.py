"""Front-matter fields on PostgreSQL: store/fields.py's functions with the same names and results.

``--where`` (``matching_ids``): the filter's SQL is SQLite's (store/fields.DocumentFilter), so the
query is written here again from its conditions, with the same meaning: a field's name in any
case (SQLite's COLLATE NOCASE, ``lower(name)`` here, which the index on it serves), a list field
passing when any element does, and ``!=`` passing a document without the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..fields import COMPARISONS, Condition, DocumentFilter


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


def _test(condition: Condition) -> tuple[str, list[Any]]:
    if condition.op in ("=", "!="):
        tests, params = ["folded = %s"], [condition.folded]
        if condition.number is not None:
            tests.append("number = %s")
            params.append(condition.number)
        if condition.day is not None:
            tests.append("day = %s")
            params.append(condition.day)
        return "(" + " OR ".join(tests) + ")", params
    if condition.day is not None:
        return f"day {COMPARISONS[condition.op]} %s", [condition.day]
    return f"number {COMPARISONS[condition.op]} %s", [condition.number]


def passing(where: DocumentFilter, id_column: str) -> tuple[str, list[Any]]:
    """The condition on ``id_column`` (a document id) that passes every condition of ``where``,
    and its parameters: for keyword search to filter inside its statement."""
    clauses: list[str] = []
    params: list[Any] = []
    for condition in where.conditions:
        test, values = _test(condition)
        member = "NOT IN" if condition.op == "!=" else "IN"
        clauses.append(
            f"{id_column} {member} (SELECT doc_id FROM document_fields"
            f" WHERE lower(name) = lower(%s) AND {test})"
        )
        params += [condition.name, *values]
    return "(" + (" AND ".join(clauses) or "true") + ")", params


def matching_ids(conn: Any, where: DocumentFilter) -> frozenset[int]:
    """The ids of the documents that pass every condition of ``where``."""
    condition, params = passing(where, "id")
    rows = conn.execute(f"SELECT id FROM documents WHERE {condition}", params)
    return frozenset(int(row[0]) for row in rows)


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
