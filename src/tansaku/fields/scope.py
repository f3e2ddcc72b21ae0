"""What ``--where`` and ``--fields`` change about a search before and after it runs: the document
filter, the collections searched (files only), and the fields put on the hits. fields/lookup.py
(and the store's field SQL) is imported only when they are given: a plain search pays nothing."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..config.selection import files_only, searched_collections
from ..config.settings import Config
from ..types import Notice, SearchResult


def where_filter(where: Sequence[str]) -> Any:
    """The filter of ``--where`` conditions (store/fields.py), None without any; a bad one is a
    usage error."""
    if not where:
        return None
    from .lookup import document_filter

    return document_filter(where)


def where_scope(
    config: Config, collections: Sequence[str], where: Sequence[str]
) -> tuple[list[str], list[Notice]] | None:
    """With ``where``, the file collections to search and the notices: those of the collections
    chosen, and the one naming the transcript collections left out (they have no front matter).
    None without ``where`` or with no transcript collection among those searched."""
    if not where or files_only(config, collections):
        return None
    from .lookup import file_scope

    chosen, warnings = searched_collections(config, collections)
    files, notice = file_scope(chosen)
    return files, [*warnings, notice]


def fields_shown(conn: Any, result: SearchResult, fields: bool) -> SearchResult:
    """With ``fields``, each hit carries its document's fields; else the result unchanged."""
    if not fields:
        return result
    from .lookup import with_fields

    return with_fields(conn, result)
