"""Every output format for `tansaku chunks`: what the chunker made of one document."""

from __future__ import annotations

import csv
import io

from tansaku.render.jsonfmt import dumps, to_data
from tansaku.render.markdown import code_span, escape, fence
from tansaku.render.shared import RenderOptions, show_docid, shown_path
from tansaku.render.terminal import clean, paint, warning_lines
from tansaku.render.xmlfmt import attrs, element
from tansaku.types import ChunkView, DocumentChunks

PREVIEW_LINES = 2


def render(doc: DocumentChunks, fmt: str, opts: RenderOptions) -> str:
    return {"cli": _cli, "json": _json, "csv": _csv, "md": _md, "xml": _xml, "files": _files}[fmt](doc, opts)


def _heading(chunk: ChunkView) -> str:
    return " > ".join(chunk.heading_path)


def _summary(chunk: ChunkView) -> str:
    parts = [f"#{chunk.seq}", f"lines {chunk.start_line}-{chunk.end_line}", f"{chunk.tokens} tokens"]
    if chunk.oversized:
        parts.append("OVERSIZED (one line longer than the budget)")
    if chunk.heading_path:
        parts.append(_heading(chunk))
    return " · ".join(parts)


def _status_line(doc: DocumentChunks) -> str:
    stored = "stored" if doc.stored else "not stored yet (run `tansaku update`)"
    count = "1 chunk" if len(doc.chunks) == 1 else f"{len(doc.chunks)} chunks"
    return f"{count}, {doc.strategy_used}, params {doc.params}, {stored}"


def _lines(chunk: ChunkView) -> list[str]:
    # A chunk ends with the newline of its last line; that newline does not start another line.
    return chunk.text.removesuffix("\n").split("\n")


def _cli(doc: DocumentChunks, opts: RenderOptions) -> str:
    lines = [
        f"{paint(show_docid(doc.docid), 'docid', opts)} {paint(clean(shown_path(doc, opts)), 'path', opts)}",
        f"  {paint(clean(doc.title), 'title', opts)}",
        f"  {_status_line(doc)}",
    ]
    for chunk in doc.chunks:
        lines += ["", f"{clean(_summary(chunk))}"]
        text_lines = _lines(chunk)
        preview = [line for line in text_lines if line.strip()][:PREVIEW_LINES]
        lines += [f"  {clean(line)}" for line in preview]
        hidden = len(text_lines) - len(preview)
        if hidden > 0:
            lines.append(f"  … ({hidden} more lines; --json has the full text)")
    if doc.warnings:
        lines += ["", *warning_lines(doc.warnings)]
    return "\n".join(lines) + "\n"


def _json(doc: DocumentChunks, opts: RenderOptions) -> str:
    data = to_data(doc)
    data["docid"] = show_docid(doc.docid)
    return dumps(data)


def _csv(doc: DocumentChunks, opts: RenderOptions) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(
        ["docid", "path", "seq", "start_line", "end_line", "tokens", "heading_path", "oversized", "text"]
    )
    for c in doc.chunks:
        writer.writerow(
            [
                show_docid(doc.docid),
                shown_path(doc, opts),
                c.seq,
                c.start_line,
                c.end_line,
                c.tokens,
                _heading(c),
                str(c.oversized).lower(),
                c.text,
            ]
        )
    return out.getvalue()


def _md(doc: DocumentChunks, opts: RenderOptions) -> str:
    lines = [
        f"# Chunks of {code_span(shown_path(doc, opts))}",
        "",
        escape(f"{doc.docid} · {_status_line(doc)}"),
    ]
    for c in doc.chunks:
        body = c.text.split("\n")
        lines += ["", f"## {escape(_summary(c))}", "", fence(body)]
    lines += [f"\n> warning `{w.code}`: {escape(w.message)}" for w in doc.warnings]
    return "\n".join(lines) + "\n"


def _xml(doc: DocumentChunks, opts: RenderOptions) -> str:
    items = [
        "  "
        + element(
            "chunk",
            c.text,
            seq=c.seq,
            start_line=c.start_line,
            end_line=c.end_line,
            tokens=c.tokens,
            heading_path=_heading(c),
            oversized=c.oversized,
        )
        for c in doc.chunks
    ]
    items += ["  " + element("warning", w.message, code=w.code) for w in doc.warnings]
    opening = "<chunks" + attrs(
        docid=show_docid(doc.docid),
        virtual_path=doc.virtual_path,
        disk_path=doc.disk_path,
        title=doc.title,
        params=doc.params,
        strategy_used=doc.strategy_used,
        stored=doc.stored,
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        + opening
        + ">\n"
        + "".join(i + "\n" for i in items)
        + "</chunks>\n"
    )


def _files(doc: DocumentChunks, opts: RenderOptions) -> str:
    path = shown_path(doc, opts)
    return "".join(
        f"{show_docid(doc.docid)},{c.seq},{c.start_line}-{c.end_line},{path}\n" for c in doc.chunks
    )
