"""The "cli" format: what a person reads in a terminal.

ANSI codes are written by hand (no rich) because start-up time matters more than styling.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tansaku import types as _types
from tansaku.render.shared import (
    RenderOptions,
    copies_note,
    disk_note,
    fields_line,
    heading_trail,
    number_lines,
    pack_footer,
    results_footer,
    show_docid,
    show_score,
    shown_path,
    split_body,
    truncation_note,
)
from tansaku.types import Hit, Notice, SearchResult

if TYPE_CHECKING:
    from tansaku.types import ContextPack, DocumentSlice, MultiGetResult, PackItem

# Get and multi-get results are looked up as ``_types.X`` after the search test: tansaku.types
# builds those classes on first look-up, and printing a search result should not.

_RESET = "\x1b[0m"
_STYLES = {"docid": "\x1b[33m", "score": "\x1b[2m", "path": "\x1b[36m", "title": "\x1b[1m"}

# Search output mixes document text into our own layout, so a stray escape or newline in a
# title or snippet must not be able to drive the terminal or break the layout. Tab is harmless.
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f]")

INDENT = "  "


def clean(text: str) -> str:
    return _CONTROL.sub("\ufffd", text)


def paint(text: str, style: str, opts: RenderOptions) -> str:
    return f"{_STYLES[style]}{text}{_RESET}" if opts.color else text


def warning_lines(warnings: tuple[Notice, ...] | list[Notice]) -> list[str]:
    return [f"warning [{w.code}]: {clean(w.message)}" for w in warnings]


def render(result: SearchResult | DocumentSlice | MultiGetResult, opts: RenderOptions) -> str:
    if isinstance(result, SearchResult):
        return _search(result, opts)
    if isinstance(result, _types.DocumentSlice):
        return "\n".join(_document_lines(result, opts)) + "\n"
    return _multi(result, opts)


def _search(result: SearchResult, opts: RenderOptions) -> str:
    if not result.hits and result.total == 0:
        return "\n".join(["No results.", *warning_lines(result.warnings)]) + "\n"
    blocks = ["\n".join(_hit_lines(hit, opts)) for hit in result.hits]
    if result.explain is not None:
        blocks = [
            block + "\n" + _explain_lines(explained)
            for block, explained in zip(blocks, result.explain.hits, strict=True)
        ]
        blocks.insert(0, _explain_header(result.explain))
    tail = "\n".join([*warning_lines(result.warnings), results_footer(result)])
    return "\n\n".join([*blocks, tail]) + "\n"


def _explain_header(explain: _types.QueryExplanation) -> str:
    lines = ["explain:"]
    lines += [
        f"  list {w.name}: weight {w.weight:.2f}, {w.count} documents ({w.reason})" for w in explain.lists
    ]
    lines += [f"  {note}" for note in explain.notes]
    if explain.stages:
        lines.append("  time: " + ", ".join(f"{t.stage} {t.seconds * 1000:.0f} ms" for t in explain.stages))
    return "\n".join(lines)


def _explain_lines(explained: _types.HitExplanation) -> str:
    ranks = ", ".join(f"{r.name} #{r.rank} (score {r.score:.3f}, rrf {r.rrf:.4f})" for r in explained.ranks)
    text = f"  explain: {ranks}; bonus {explained.bonus:.3f}; fused {explained.fused:.4f}"
    if explained.rrf_rank:
        text += f" (#{explained.rrf_rank})"
    if explained.rerank is not None and explained.blended is not None:
        text += f"; rerank {explained.rerank:.3f}, blended {explained.blended:.4f}"
    return text


def _hit_lines(hit: Hit, opts: RenderOptions) -> list[str]:
    header = " ".join(
        [
            paint(show_docid(hit.docid), "docid", opts),
            paint(show_score(hit.score), "score", opts),
            paint(clean(shown_path(hit, opts)), "path", opts),
        ]
    )
    page = f" page {hit.page}" if hit.page is not None else ""
    lines = [header + page + (" [stale]" if hit.stale else "")]
    if hit.title:
        lines.append(INDENT + paint(clean(hit.title), "title", opts))
    if hit.also_at:
        lines.append(f"{INDENT}also at: {clean(', '.join(hit.also_at))}")
    if hit.also_in:
        lines.append(f"{INDENT}also in: {clean(', '.join(hit.also_in))}")
    if hit.transcript is not None:
        from tansaku.render.transcripts import summary_lines

        lines += [INDENT + clean(line) for line in summary_lines(hit.transcript)]
    # A context written over several lines reads fine as one line here.
    lines += [f"{INDENT}context: {clean(' '.join(c.splitlines()))}" for c in hit.contexts]
    if hit.fields is not None:
        lines.append(f"{INDENT}fields: {clean(fields_line(hit.fields))}")
    if hit.body is not None:
        text, start = split_body(hit.body), 1
    else:
        text, start = list(hit.snippet.lines), hit.snippet.start_line
    text = [clean(line) for line in text]
    if opts.line_numbers:
        text = number_lines(text, start)
    lines += [(INDENT + line).rstrip() for line in text]
    return lines


def _document_lines(doc: DocumentSlice, opts: RenderOptions) -> list[str]:
    # `get` prints the document's own text, untouched, so it can be piped like `cat`.
    lines = [clean(note) for note in (copies_note(doc), disk_note(doc)) if note]
    if opts.line_numbers:
        width = len(str(doc.total_lines))
        lines += number_lines(doc.lines, doc.from_line, width)
    else:
        lines += doc.lines
    if doc.truncated:
        lines.append(truncation_note(doc))
    return lines


def _multi(result: MultiGetResult, opts: RenderOptions) -> str:
    blocks = []
    for doc in result.documents:
        path = paint(clean(shown_path(doc, opts)), "path", opts)
        header = f"==> {path} ({paint(show_docid(doc.docid), 'docid', opts)}) <=="
        blocks.append("\n".join([header, *_document_lines(doc, opts)]))
    tail = [f"skipped {clean(s.virtual_path)}: {clean(s.reason)}" for s in result.skipped]
    tail += warning_lines(result.warnings)
    if not result.documents and not result.skipped:
        tail.insert(0, f"No documents match {clean(result.pattern)}.")
    if tail:
        blocks.append("\n".join(tail))
    return "\n\n".join(blocks) + "\n"


def render_pack(pack: ContextPack, opts: RenderOptions) -> str:
    blocks = ["\n".join(_pack_item_lines(item, opts)) for item in pack.items]
    if not pack.items and not pack.omitted:
        blocks.append("No passages.")
    tail = warning_lines(pack.warnings)
    if pack.items or pack.omitted:
        tail.append(pack_footer(pack))
    blocks.append("\n".join(tail))
    return "\n\n".join(block for block in blocks if block) + "\n"


def _pack_item_lines(item: PackItem, opts: RenderOptions) -> list[str]:
    header = [
        paint(show_score(item.score), "score", opts),
        paint(show_docid(item.docid), "docid", opts),
        paint(clean(shown_path(item, opts)), "path", opts),
        f"lines {item.start_line}-{item.end_line}",
    ]
    if item.heading_path:
        header.append(clean(heading_trail(item)))
    lines = [" ".join(header) + (" [stale]" if item.stale else "")]
    if item.title:
        lines.append(INDENT + paint(clean(item.title), "title", opts))
    lines += [f"{INDENT}context: {clean(' '.join(c.splitlines()))}" for c in item.contexts]
    text = [clean(line) for line in item.text.split("\n")]
    if opts.line_numbers:
        text = number_lines(text, item.start_line)
    # A blank separates the citation from the passage, which is then shown as it is in the file
    # (only indented), so it reads, and copies, like the source.
    lines.append("")
    lines += [(INDENT + line).rstrip() for line in text]
    return lines
