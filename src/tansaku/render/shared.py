"""What the format modules share: the options of a rendering and the helpers that word a result the
same way in every format. render/__init__.py dispatches to the format modules; they import this
module, never that one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tansaku.types import ContextPack, DocumentSlice, PackItem, SearchResult


@dataclass(frozen=True)
class RenderOptions:
    color: bool = False  # ANSI colour; the CLI sets it only for a terminal without NO_COLOR
    line_numbers: bool = False  # the CLI turns this on by default for `get`
    full_path: bool = False  # show disk_path instead of virtual_path


def show_docid(docid: str) -> str:
    # Docids are shown with their '#' everywhere so they can be pasted straight into `get`.
    return "#" + docid.lstrip("#")


def shown_path(item: Any, opts: RenderOptions) -> str:
    return item.disk_path if opts.full_path else item.virtual_path


def show_score(score: float) -> str:
    return f"{score:.2f}" if math.isfinite(score) else str(score)


def duration_words(seconds: float) -> str:
    """A wait as a person says it: "about a minute or less", "about 12 minutes", "about 3.5 hours"."""
    if seconds < 90:
        return "about a minute or less"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} minutes"
    return f"about {seconds / 3600:.1f} hours"


def round_float(value: float) -> float | None:
    # NaN and infinities are not JSON; null says "no meaningful value" honestly.
    return round(value, 4) if math.isfinite(value) else None


def split_body(body: str) -> list[str]:
    """Split a --full body into lines the way the indexer counts them (\\n, \\r\\n)."""
    lines = body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def number_lines(lines: list[str] | tuple[str, ...], start: int, width: int = 0) -> list[str]:
    """Prefix lines with right-aligned source line numbers and ': '."""
    width = max(width, len(str(start + len(lines) - 1)))
    return [f"{n:>{width}}: {line}" for n, line in enumerate(lines, start)]


def truncation_note(doc: DocumentSlice) -> str:
    last = doc.from_line + len(doc.lines) - 1
    shown = f"lines {doc.from_line}-{last}" if doc.lines else "no lines"
    return f"[truncated: showing {shown} of {doc.total_lines}; use --from/-l to read more]"


STALE_NOTE = "[stale: the file changed on disk since it was indexed; run tansaku update]"
GONE_NOTE = "[gone: the file is no longer on disk (deleted or moved); this is the indexed text]"


def copies_note(doc: DocumentSlice) -> str | None:
    """`get #docid` of a text at several paths: which one is shown, and the others."""
    if not doc.also_at:
        return None
    return (
        f"[{show_docid(doc.docid)} is at {len(doc.also_at) + 1} paths: showing {doc.virtual_path};"
        f" also at: {', '.join(doc.also_at)}]"
    )


def disk_note(doc: DocumentSlice) -> str | None:
    """What a reader must know about the file behind a document, if anything."""
    if doc.missing:
        return GONE_NOTE
    return STALE_NOTE if doc.stale else None


def field_text(value: Any) -> str:
    """A front-matter value for the text formats: a list's elements joined by commas."""
    if isinstance(value, tuple | list):
        return ", ".join(field_text(item) for item in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def fields_line(fields: tuple[tuple[str, Any], ...]) -> str:
    """--fields in one line: ``tags: a, b · date: 2024-05-01`` (``none`` when there are none)."""
    # A value written over several lines (a YAML block scalar) reads as one line here.
    return " · ".join(f"{name}: {' '.join(field_text(value).split())}" for name, value in fields) or "none"


def fields_object(fields: tuple[tuple[str, Any], ...]) -> dict[str, Any]:
    """--fields as JSON: name -> value, a list field as a list."""
    return {name: list(value) if isinstance(value, tuple) else value for name, value in fields}


def results_footer(result: SearchResult) -> str:
    shown, total = len(result.hits), result.total
    if shown < total:
        more = " (use -n or --all for more)" if result.limit is not None else ""
        of = f"of {total}" if result.total_exact else f"of at least {total}"
        return f"{shown} {of} results{more}"
    return "1 result" if shown == 1 else f"{shown} results"


def citation(item: PackItem, opts: RenderOptions) -> str:
    """Where a pack item comes from, as one token: PATH:START-END."""
    return f"{shown_path(item, opts)}:{item.start_line}-{item.end_line}"


def heading_trail(item: PackItem) -> str:
    """The headings above a pack item as one line: § Install > On Linux ('' when there are none).

    The section sign keeps a heading apart from a title that says the same words."""
    return "§ " + " > ".join(item.heading_path) if item.heading_path else ""


def pack_footer(pack: ContextPack) -> str:
    shown = len(pack.items)
    count = "1 passage" if shown == 1 else f"{shown} passages"
    text = f"{count}, {pack.bytes_used} of {pack.max_bytes} bytes"
    if pack.omitted:
        # The budget, not the search, left these out: say which knobs bring them in.
        text += f"; {pack.omitted} more did not fit (raise --max-items or --max-bytes)"
    return text
