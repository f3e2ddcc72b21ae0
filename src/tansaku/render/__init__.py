"""Turn typed results into text, one module per output format.

Renderers never query anything: the CLI (and later the servers) hand them finished results.
Format modules are imported on demand so a command only pays for the format it prints. What they
share (RenderOptions and the helpers) is render/shared.py's, so that none of them imports this
module back.
"""

from __future__ import annotations

import importlib
from typing import Any

from tansaku import types as _types
from tansaku.errors import TansakuError, UsageError
from tansaku.render.shared import RenderOptions, duration_words
from tansaku.types import SearchResult

__all__ = ["FORMATS", "RenderOptions", "admin_kind", "duration_words", "render", "render_error"]

# The other result types are looked up as ``_types.X`` only where they are needed, after the
# SearchResult test: tansaku.types builds them on first look-up, and a search need not pay for them.

FORMATS = ("cli", "json", "csv", "md", "xml", "files")
ADMIN_FORMATS = ("cli", "json")

_MODULES = {
    "cli": "terminal",
    "json": "jsonfmt",
    "csv": "csvfmt",
    "md": "markdown",
    "xml": "xmlfmt",
    "files": "files",
}


_DEFAULT_OPTIONS = RenderOptions()


def render(result: object, fmt: str, opts: RenderOptions = _DEFAULT_OPTIONS) -> str:
    """Render a result in one of FORMATS; the text always ends with one newline (or is empty)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown output format {fmt!r}", hint=f"use one of: {', '.join(FORMATS)}")
    # No result is an instance of two of these classes, so the order of the tests is free: the
    # search result goes first, and alone, so that rendering it builds no other class.
    if isinstance(result, SearchResult):
        return _format_module(fmt).render(result, opts)
    if isinstance(result, _types.DocumentSlice | _types.MultiGetResult):
        return _format_module(fmt).render(result, opts)
    if isinstance(result, _types.ContextPack):
        return _format_module(fmt).render_pack(result, opts)
    if isinstance(result, _types.DocumentChunks):
        from tansaku.render import chunks

        return chunks.render(result, fmt, opts)
    if isinstance(result, _types.SessionRead):
        from tansaku.render import sessions

        return sessions.render(result, fmt, opts)
    kind = admin_kind(result)
    if fmt not in ADMIN_FORMATS:
        raise UsageError(
            f"the {fmt} format is not available for {kind}",
            hint=f"use one of: {', '.join(ADMIN_FORMATS)}",
            format=fmt,
            supported=list(ADMIN_FORMATS),
        )
    text_module = "bench" if isinstance(result, _types.BenchReport) else "admin"
    module_name = "jsonfmt" if fmt == "json" else text_module
    module = importlib.import_module(f"tansaku.render.{module_name}")
    return module.render(result, opts)


def _format_module(fmt: str) -> Any:
    return importlib.import_module(f"tansaku.render.{_MODULES[fmt]}")


def render_error(error: TansakuError, fmt: str) -> str:
    if fmt == "json":
        from tansaku.render import jsonfmt

        return jsonfmt.dumps({"error": error.to_dict()})
    lines = [f"error: {error.message}"]
    if error.hint:
        lines.append(f"hint: {error.hint}")
    return "\n".join(lines) + "\n"


def admin_kind(result: object) -> str:
    """Name the non-search result (for messages); TypeError for anything we cannot render."""
    if isinstance(result, _types.UpdateReport):
        return "update"
    if isinstance(result, _types.StatusReport):
        return "status"
    if isinstance(result, _types.BenchReport):
        return "bench"
    if isinstance(result, _types.EmbedReport):
        return "embed"
    if isinstance(result, _types.CollectionInfo):
        return "collection show"
    if isinstance(result, dict):
        return "messages"
    if isinstance(result, list | tuple):
        kinds = (
            (_types.CollectionInfo, "collection list"),
            (_types.FileEntry, "ls"),
            (_types.Context, "context list"),
            (_types.DoctorCheck, "doctor"),
        )
        for cls, kind in kinds:
            if result and all(isinstance(item, cls) for item in result):
                return kind
        if not result:
            return "an empty list"
    raise TypeError(f"cannot render a {type(result).__name__}")
