"""The "csv" format: RFC 4180 (quoted as needed, CRLF line ends) with a header row."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING

from tansaku import types as _types
from tansaku.render.shared import RenderOptions, fields_object, show_docid, shown_path, split_body
from tansaku.types import SearchResult

if TYPE_CHECKING:
    from tansaku.types import ContextPack, DocumentSlice, MultiGetResult

# Get and multi-get results are looked up as ``_types.X`` after the search test: tansaku.types
# builds those classes on first look-up, and printing a search result should not.

SEARCH_COLUMNS = ("docid", "score", "collection", "path", "title", "context", "line", "snippet", "stale")
# --fields: the document's front-matter fields as one JSON object (a list field as a list).
FIELDS_COLUMN = "fields"
# A text found at several paths (exact copies, shown once): the others, " | " between them.
ALSO_AT_COLUMN = "also_at"
# A page found in several languages (shown once): the others' languages, " | " between them.
ALSO_IN_COLUMN = "also_in"
DOCUMENT_COLUMNS = ("docid", "path", "line", "text")
PACK_COLUMNS = (
    "docid",
    "score",
    "collection",
    "path",
    "title",
    "context",
    "start_line",
    "end_line",
    "heading_path",
    "text",
    "stale",
)


def render(result: SearchResult | DocumentSlice | MultiGetResult, opts: RenderOptions) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    if isinstance(result, SearchResult):
        # Transcript hits add their columns, only to a search that has some; --fields its own,
        # and copies theirs.
        extra = any(hit.transcript is not None for hit in result.hits)
        with_fields = any(hit.fields is not None for hit in result.hits)
        with_copies = any(hit.also_at for hit in result.hits)
        with_languages = any(hit.also_in for hit in result.hits)
        field_columns = (FIELDS_COLUMN,) if with_fields else ()
        field_columns += (ALSO_AT_COLUMN,) if with_copies else ()
        field_columns += (ALSO_IN_COLUMN,) if with_languages else ()
        rows = _search_rows(result, opts)
        if with_fields:
            rows = [[*row, _fields_cell(hit)] for hit, row in zip(result.hits, rows, strict=True)]
        if with_copies:
            rows = [[*row, " | ".join(hit.also_at)] for hit, row in zip(result.hits, rows, strict=True)]
        if with_languages:
            rows = [[*row, " | ".join(hit.also_in)] for hit, row in zip(result.hits, rows, strict=True)]
        if extra:
            from tansaku.render.transcripts import COLUMNS, fields

            writer.writerow((*SEARCH_COLUMNS, *field_columns, *COLUMNS))
            for hit, row in zip(result.hits, rows, strict=True):
                values = fields(hit.transcript) if hit.transcript is not None else {}
                writer.writerow([*row, *("" if values.get(c) is None else values[c] for c in COLUMNS)])
        else:
            writer.writerow((*SEARCH_COLUMNS, *field_columns))
            writer.writerows(rows)
    else:
        writer.writerow(DOCUMENT_COLUMNS)
        documents = result.documents if isinstance(result, _types.MultiGetResult) else (result,)
        for doc in documents:
            docid, path = show_docid(doc.docid), shown_path(doc, opts)
            writer.writerows([docid, path, n, line] for n, line in enumerate(doc.lines, doc.from_line))
        if isinstance(result, _types.MultiGetResult):
            # Skipped documents have no docid (they were never read); the row keeps them visible.
            writer.writerows(["", s.virtual_path, "", f"SKIPPED: {s.reason}"] for s in result.skipped)
    return buffer.getvalue()


def _fields_cell(hit: object) -> str:
    import json

    fields = getattr(hit, "fields", None) or ()
    return json.dumps(fields_object(fields), ensure_ascii=False, separators=(",", ":"))


def _search_rows(result: SearchResult, opts: RenderOptions) -> list[list[object]]:
    rows: list[list[object]] = []
    for hit in result.hits:
        # With --full the body takes the snippet's place, starting at line 1.
        if hit.body is not None:
            line, text = 1, "\n".join(split_body(hit.body))
        else:
            line, text = hit.snippet.start_line, "\n".join(hit.snippet.lines)
        rows.append(
            [
                show_docid(hit.docid),
                f"{round(hit.score, 4)}",
                hit.collection,
                shown_path(hit, opts),
                hit.title,
                " | ".join(hit.contexts),
                line,
                text,
                "true" if hit.stale else "false",
            ]
        )
    return rows


def render_pack(pack: ContextPack, opts: RenderOptions) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(PACK_COLUMNS)
    writer.writerows(
        [
            show_docid(item.docid),
            f"{round(item.score, 4)}",
            item.collection,
            shown_path(item, opts),
            item.title,
            " | ".join(item.contexts),
            item.start_line,
            item.end_line,
            " > ".join(item.heading_path),
            item.text,
            "true" if item.stale else "false",
        ]
        for item in pack.items
    )
    return buffer.getvalue()
