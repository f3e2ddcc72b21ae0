"""The "md" format: results as a Markdown document, for notes and for pasting into a chat."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tansaku import types as _types
from tansaku.render.shared import (
    RenderOptions,
    citation,
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
from tansaku.render.terminal import clean
from tansaku.types import Hit, Notice, SearchResult

if TYPE_CHECKING:
    from tansaku.types import ContextPack, DocumentSlice, MultiGetResult, PackItem

# Get and multi-get results are looked up as ``_types.X`` after the search test: tansaku.types
# builds those classes on first look-up, and printing a search result should not.

_BACKTICKS = re.compile(r"`+")
# Characters that could turn a title or context into markup (or raw HTML) when rendered.
_SPECIAL = re.compile(r"([\\`*_\[\]<>&#|])")


def escape(text: str) -> str:
    return _SPECIAL.sub(r"\\\1", clean(" ".join(text.splitlines())))


def _longest_backtick_run(lines: list[str] | tuple[str, ...]) -> int:
    return max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)


def fence(lines: list[str] | tuple[str, ...]) -> str:
    # A fence longer than any backtick run in the content cannot be closed by the content.
    marker = "`" * max(3, _longest_backtick_run(lines) + 1)
    return "\n".join([marker, *lines, marker])


def code_span(text: str) -> str:
    text = " ".join(text.splitlines())
    ticks = "`" * (_longest_backtick_run([text]) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def render(result: SearchResult | DocumentSlice | MultiGetResult, opts: RenderOptions) -> str:
    if isinstance(result, SearchResult):
        blocks = _search(result, opts)
    elif isinstance(result, _types.DocumentSlice):
        blocks = _document(result, opts)
    else:
        blocks = _multi(result, opts)
    return "\n\n".join(blocks) + "\n"


def _warnings(warnings: tuple[Notice, ...]) -> list[str]:
    if not warnings:
        return []
    return ["\n".join(f"- warning \\[{w.code}\\]: {escape(w.message)}" for w in warnings)]


def _search(result: SearchResult, opts: RenderOptions) -> list[str]:
    if not result.hits and result.total == 0:
        return ["No results.", *_warnings(result.warnings)]
    blocks: list[str] = []
    for hit in result.hits:
        blocks += _hit(hit, opts)
    return [*blocks, *_warnings(result.warnings), results_footer(result)]


def _hit(hit: Hit, opts: RenderOptions) -> list[str]:
    path = shown_path(hit, opts)
    meta = [code_span(path), show_docid(hit.docid), f"score {show_score(hit.score)}"]
    if hit.page is not None:
        meta.append(f"page {hit.page}")
    if hit.stale:
        meta.append("stale")
    blocks = [f"## {escape(hit.title) if hit.title else code_span(path)}", " · ".join(meta)]
    if hit.also_at:
        blocks.append("also at: " + ", ".join(code_span(p) for p in hit.also_at))
    if hit.also_in:
        blocks.append("also in: " + escape(", ".join(hit.also_in)))
    if hit.transcript is not None:
        from tansaku.render.transcripts import summary_lines

        blocks.append("  \n".join(escape(line) for line in summary_lines(hit.transcript)))
    if hit.contexts:
        # The empty quote line keeps each context its own paragraph once rendered.
        blocks.append("\n>\n".join(f"> {escape(c)}" for c in hit.contexts))
    if hit.fields is not None:
        blocks.append(f"fields: {escape(fields_line(hit.fields))}")
    if hit.body is not None:
        lines, start = split_body(hit.body), 1
    else:
        lines, start = list(hit.snippet.lines), hit.snippet.start_line
    blocks.append(fence(number_lines(lines, start) if opts.line_numbers else lines))
    return blocks


def _document(doc: DocumentSlice, opts: RenderOptions, level: str = "##") -> list[str]:
    last = doc.from_line + len(doc.lines) - 1
    span = f"lines {doc.from_line}-{last} of {doc.total_lines}" if doc.lines else f"{doc.total_lines} lines"
    meta = [show_docid(doc.docid), escape(doc.title), span] if doc.title else [show_docid(doc.docid), span]
    blocks = [f"{level} {code_span(shown_path(doc, opts))}", " · ".join(meta)]
    blocks += [escape(note) for note in (copies_note(doc), disk_note(doc)) if note]
    lines: list[str] | tuple[str, ...] = doc.lines
    if opts.line_numbers:
        lines = number_lines(doc.lines, doc.from_line, len(str(doc.total_lines)))
    blocks.append(fence(lines))
    if doc.truncated:
        blocks.append(escape(truncation_note(doc)))
    return blocks


def _multi(result: MultiGetResult, opts: RenderOptions) -> list[str]:
    blocks = [f"# Documents matching {code_span(result.pattern)}"]
    for doc in result.documents:
        blocks += _document(doc, opts)
    if result.skipped:
        blocks.append(
            "\n".join(f"- skipped {code_span(s.virtual_path)}: {escape(s.reason)}" for s in result.skipped)
        )
    if not result.documents and not result.skipped:
        blocks.append("No documents matched.")
    return [*blocks, *_warnings(result.warnings)]


def render_pack(pack: ContextPack, opts: RenderOptions) -> str:
    blocks = [f"# Context for {code_span(pack.query)}"]
    for item in pack.items:
        blocks += _pack_item(item, opts)
    if not pack.items and not pack.omitted:
        blocks.append("No passages.")
    blocks += _warnings(pack.warnings)
    if pack.items or pack.omitted:
        blocks.append(escape(pack_footer(pack)))
    return "\n\n".join(blocks) + "\n"


def _pack_item(item: PackItem, opts: RenderOptions) -> list[str]:
    # The heading is the citation itself, so a pasted pack says where each passage comes from.
    meta = [show_docid(item.docid)]
    if item.title:
        meta.append(escape(item.title))
    if item.heading_path:
        meta.append(escape(heading_trail(item)))
    meta.append(f"score {show_score(item.score)}")
    if item.stale:
        meta.append("stale")
    blocks = [f"## {code_span(citation(item, opts))}", " · ".join(meta)]
    if item.contexts:
        blocks.append("\n>\n".join(f"> {escape(c)}" for c in item.contexts))
    lines = item.text.split("\n")
    blocks.append(fence(number_lines(lines, item.start_line) if opts.line_numbers else lines))
    return blocks
