"""Between the front matter and the store: the rows a text's fields are stored as, the filter a
search applies, and the fields put on the hits a search returns (``--fields``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..errors import UsageError
from ..store.backend import fields as store
from ..types import Collection, Notice, SearchResult
from .frontmatter import FrontMatter
from .where import parse_where

Shown = tuple[tuple[str, Any], ...]  # (name, value or tuple of values), in the order written


def rows(front: FrontMatter) -> list[store.FieldRow]:
    return [
        (position, seq, field.name, int(field.many), value.kind, value.text, value.text.casefold(),
         value.number, value.day)
        for position, field in enumerate(front.fields)
        for seq, value in enumerate(field.values)
    ]  # fmt: skip


def document_filter(where: Sequence[str]) -> store.DocumentFilter | None:
    """The filter of some ``--where`` expressions (None without any); a usage error names a bad one."""
    conditions = parse_where(where)
    return store.document_filter(conditions) if conditions else None


def with_fields(conn: Any, result: SearchResult) -> SearchResult:
    """The result, each hit carrying its document's fields (an empty tuple when it has none)."""
    found = store.fields_of(conn, [(hit.collection, hit.path) for hit in result.hits])
    hits = tuple(replace(hit, fields=shown(found.get((hit.collection, hit.path), []))) for hit in result.hits)
    return replace(result, hits=hits)


def shown(stored: Sequence[tuple[str, int, str, str]]) -> Shown:
    grouped: dict[str, tuple[bool, list[Any]]] = {}
    for name, many, kind, value in stored:
        grouped.setdefault(name, (bool(many), []))[1].append(_typed(kind, value))
    return tuple((name, tuple(values) if many else values[0]) for name, (many, values) in grouped.items())


def _typed(kind: str, value: str) -> Any:
    """The value as JSON shows it: numbers and booleans as such, dates and text as strings."""
    try:
        if kind == "int":
            return int(value)
        if kind == "float":
            number = float(value)
            return number if math.isfinite(number) else value  # JSON has no NaN
    except ValueError:
        return value
    if kind == "bool":
        return value == "true"
    return value


WHERE_FILES_ONLY = "WHERE_FILES_ONLY"


def file_scope(chosen: Sequence[Collection]) -> tuple[list[str], Notice]:
    """The file collections among ``chosen``, and the notice naming the transcript collections a
    ``--where`` leaves out (sessions have no front matter); a usage error when none is left."""
    files = [c.name for c in chosen if c.type == "files"]
    left = ", ".join(c.name for c in chosen if c.type != "files")
    if not files:
        raise UsageError(
            f"--where filters on front-matter fields, which transcript collections ({left}) do not have",
            hint="search a collection of files, or leave out --where",
        )
    why = "--where filters on front-matter fields; transcript collections have none and were not searched"
    return files, Notice(WHERE_FILES_ONLY, f"{why}: {left}")
