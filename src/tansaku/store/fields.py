"""SQL for front-matter fields (document_fields, keyed by document id): writing a document's
fields, the document filter of ``--where``, and the fields of the documents a search returns.

A filter is built apart from running it (``DocumentFilter``): keyword search puts its SQL into the
FTS5 query, so the filter applies before the limit; vector search asks for its document ids.
Written once for both backends (store/dialect.py) but ``matching_ids``: PostgreSQL's
(store/postgres/fields.py) writes the filter from its conditions (``passing`` below), matching a
field's name in any case with ``lower(name)`` where SQLite's column is COLLATE NOCASE.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from . import routed
from .dialect import both, run

# (position, seq, name, many, kind, value, folded, number, day): one value of one field.
FieldRow = tuple[int, int, str, int, str, str, str, float | None, str | None]

COMPARISONS = {">=": ">=", "<=": "<=", ">": ">", "<": "<"}


@dataclass(frozen=True)
class Condition:
    """One ``--where``: ``name op operand``. ``day`` or ``number`` is set for a comparison (the
    operand as a date or a number); ``=`` and ``!=`` match the case-folded text, or the day or
    number when the operand is one."""

    name: str
    op: str  # = != >= <= > <
    folded: str
    number: float | None = None
    day: str | None = None


@dataclass(frozen=True)
class DocumentFilter:
    """A subquery giving the ids of the documents that pass every condition (SQLite's SQL), and
    the conditions it was written from (another backend writes its own)."""

    sql: str
    params: tuple[Any, ...]
    conditions: tuple[Condition, ...] = ()


@both
def add_fields(conn: Any, rows: Sequence[tuple[Any, ...]]) -> None:
    """Fields of new documents: (doc_id, *FieldRow) rows, in one statement."""
    routed.db.insert_rows(
        conn, "document_fields", "doc_id, position, seq, name, many, kind, value, folded, number, day", rows
    )


@both
def delete_fields(conn: Any, doc_id: int) -> None:
    run(conn, "DELETE FROM document_fields WHERE doc_id = ?", (doc_id,))


def _test(condition: Condition) -> tuple[str, list[Any]]:
    if condition.op in ("=", "!="):
        tests, params = ["folded = ?"], [condition.folded]
        if condition.number is not None:
            tests.append("number = ?")
            params.append(condition.number)
        if condition.day is not None:
            tests.append("day = ?")
            params.append(condition.day)
        return "(" + " OR ".join(tests) + ")", params
    if condition.day is not None:
        return f"day {COMPARISONS[condition.op]} ?", [condition.day]
    return f"number {COMPARISONS[condition.op]} ?", [condition.number]


def passing(
    conditions: Sequence[Condition], id_column: str, same_name: str = "name = ?"
) -> tuple[str, list[Any]]:
    """The test of ``id_column`` (a document id) that passes every condition, with ``?``
    placeholders, and its parameters; ``same_name`` tests a field's name (PostgreSQL's has no
    COLLATE NOCASE column). No conditions: an empty test."""
    clauses: list[str] = []
    params: list[Any] = []
    for condition in conditions:
        test, values = _test(condition)
        member = "NOT IN" if condition.op == "!=" else "IN"
        clauses.append(
            f"{id_column} {member} (SELECT doc_id FROM document_fields WHERE {same_name} AND {test})"
        )
        params += [condition.name, *values]
    return " AND ".join(clauses), params


def document_filter(conditions: Sequence[Condition]) -> DocumentFilter:
    """Documents whose text has every condition: a list field passes when any element does;
    ``!=`` passes when no element equals the operand (a document without the field passes)."""
    where, params = passing(conditions, "id")
    return DocumentFilter(f"SELECT id FROM documents WHERE {where or '1'}", tuple(params), tuple(conditions))


def matching_ids(conn: Any, where: DocumentFilter) -> frozenset[int]:
    return frozenset(row[0] for row in conn.execute(where.sql, where.params))


@both
def fields_of(conn: Any, documents: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[Any]]:
    """Each (collection, path)'s field rows, in the order written: (name, many, kind, value)."""
    found: dict[tuple[str, str], list[Any]] = {}
    for collection, path in dict.fromkeys(documents):
        rows = run(
            conn,
            "SELECT f.name, f.many, f.kind, f.value FROM documents AS d"
            " JOIN document_fields AS f ON f.doc_id = d.id"
            " WHERE d.collection = ? AND d.path = ? ORDER BY f.position, f.seq",
            (collection, path),
        )
        found[(collection, path)] = [tuple(row) for row in rows]
    return found
