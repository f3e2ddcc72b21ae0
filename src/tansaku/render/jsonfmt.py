"""The "json" format: the stable contract for scripts and agents (field names in docs/formats.md)."""

from __future__ import annotations

import json
from dataclasses import fields, is_dataclass
from typing import TYPE_CHECKING, Any

from tansaku.render.shared import RenderOptions, fields_object, round_float, show_docid
from tansaku.types import Hit, SearchResult, UpdateReport

if TYPE_CHECKING:
    from tansaku.types import ContextPack


def render(result: object, opts: RenderOptions) -> str:
    return dumps(to_data(result))


def dumps(data: Any) -> str:
    # default=str: error details may carry paths or other objects; a message beats a crash.
    return json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n"


def to_data(obj: Any) -> Any:
    """Plain JSON-able data: dataclasses to dicts, tuples/sets to lists, floats to 4 decimals."""
    if isinstance(obj, SearchResult):
        return _search(obj)
    if isinstance(obj, Hit):
        data = _drop_missing_body(_fields(obj))
        if obj.fields is not None:  # values as written: not rounded like the scores
            data["fields"] = fields_object(obj.fields)
        return data
    if isinstance(obj, UpdateReport):
        return _update(obj)
    if is_dataclass(obj) and not isinstance(obj, type):
        return _fields(obj)
    if isinstance(obj, dict):
        return {str(key): to_data(value) for key, value in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_data(item) for item in obj]
    if isinstance(obj, set | frozenset):
        return sorted((to_data(item) for item in obj), key=str)
    if isinstance(obj, float):
        return round_float(obj)
    return obj


def _update(report: UpdateReport) -> dict[str, Any]:
    from tansaku.render.admin import update_counts

    data = _fields(report)
    # The counts in words, as the cli line says them: "would add 3, ..." in a dry run.
    for c, out in zip(report.collections, data["collections"], strict=True):
        out["summary"] = None if c.failed else update_counts(c, report.dry_run)
    # `ok` is a property, not a field, but it is what a script checks first.
    return {**data, "ok": report.ok}


def _fields(obj: Any) -> dict[str, Any]:
    data = {
        f.name: to_data(getattr(obj, f.name))
        for f in fields(obj)
        if not (f.metadata.get("omit_if_none") and getattr(obj, f.name) is None)
    }
    if isinstance(data.get("docid"), str):
        data["docid"] = show_docid(data["docid"])
    return data


def _drop_missing_body(data: dict[str, Any]) -> dict[str, Any]:
    # Optional fields appear only when set: `body` with --full, `chunk_lines` for vector hits,
    # `transcript` for hits in agent transcripts, `fields` with --fields, `page` for hits in PDFs,
    # `also_at` for a text also found at other paths (exact copies, shown once), `also_in` for a
    # page also found in other languages.
    for key in ("body", "chunk_lines", "transcript", "fields", "page"):
        if data.get(key) is None:
            data.pop(key, None)
    for key in ("also_at", "also_in"):
        if not data.get(key):
            data.pop(key, None)
    return data


def _search(result: SearchResult) -> dict[str, Any]:
    data = {
        "query": result.query,
        "mode": result.mode,
        "results": [to_data(hit) for hit in result.hits],
        "total": result.total,
        "total_exact": result.total_exact,
        "limit": result.limit,
        "warnings": to_data(result.warnings),
        "took_ms": round_float(result.took_ms),
        "collections": list(result.collections),
    }
    # `query` only: which retrievals ran, and with --explain how each result was ranked.
    if result.used is not None:
        data["used"] = result.used
    if result.explain is not None:
        data["explain"] = to_data(result.explain)
    return data


def render_pack(pack: ContextPack, opts: RenderOptions) -> str:
    # Spelled out rather than taken from the dataclass so the key order is the documented one.
    return dumps(
        {
            "query": pack.query,
            "items": [to_data(item) for item in pack.items],
            "bytes_used": pack.bytes_used,
            "max_bytes": pack.max_bytes,
            "max_items": pack.max_items,
            "omitted": pack.omitted,
            "warnings": to_data(pack.warnings),
            "used": pack.used,
        }
    )
