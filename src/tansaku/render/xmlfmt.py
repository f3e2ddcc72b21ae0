"""The "xml" format: always well-formed XML 1.0, whatever bytes the documents contain.

Characters XML 1.0 cannot carry at all (control characters other than tab, newline and carriage
return; lone surrogates; U+FFFE and U+FFFF) are replaced with U+FFFD. Everything else survives a
parse unchanged: CR, and tab/newline inside attributes, are written as character references
because a parser would otherwise normalise them away.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from tansaku import types as _types
from tansaku.render.shared import RenderOptions, field_text, round_float, show_docid
from tansaku.types import Hit, Notice, SearchResult

if TYPE_CHECKING:
    from tansaku.types import ContextPack, DocumentSlice, MultiGetResult, PackItem

# Get and multi-get results are looked up as ``_types.X`` after the search test: tansaku.types
# builds those classes on first look-up, and printing a search result should not.

_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_TEXT_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\r": "&#13;"}
_ATTR_ESCAPES = {**_TEXT_ESCAPES, "\n": "&#10;", "\t": "&#9;"}
_TEXT_SPECIAL = re.compile('[&<>"\r]')
_ATTR_SPECIAL = re.compile('[&<>"\r\n\t]')


def xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def text(value: str) -> str:
    return _TEXT_SPECIAL.sub(lambda m: _TEXT_ESCAPES[m.group()], xml_safe(value))


def attrs(**values: object) -> str:
    """Attributes in the given order; None leaves one out, booleans become true/false."""
    parts = []
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            shown = "true" if value else "false"
        elif isinstance(value, float):
            shown = str(round_float(value))
        else:
            shown = str(value)
        escaped = _ATTR_SPECIAL.sub(lambda m: _ATTR_ESCAPES[m.group()], xml_safe(shown))
        parts.append(f' {name}="{escaped}"')
    return "".join(parts)


def element(name: str, content: str, **values: object) -> str:
    return f"<{name}{attrs(**values)}>{text(content)}</{name}>"


def render(result: SearchResult | DocumentSlice | MultiGetResult, opts: RenderOptions) -> str:
    # opts.full_path does not apply: every element carries both the virtual and the disk path.
    if isinstance(result, SearchResult):
        lines = _search(result)
    elif isinstance(result, _types.DocumentSlice):
        lines = _document(result)
    else:
        lines = _multi(result)
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', *lines]) + "\n"


def _indent(items: list[str]) -> list[str]:
    # Each item is one element whose text may span lines; only its first line is indented,
    # because indenting the others would change the text.
    return ["  " + item for item in items]


def _warnings(warnings: tuple[Notice, ...]) -> list[str]:
    return [element("warning", w.message, code=w.code) for w in warnings]


def _search(result: SearchResult) -> list[str]:
    body: list[str] = []
    for hit in result.hits:
        body += _hit(hit)
    body += _warnings(result.warnings)
    exact = None if result.total_exact else False  # shown only when total is a lower bound
    values = attrs(
        query=result.query, mode=result.mode, total=result.total, total_exact=exact, limit=result.limit
    )
    head = f"<search{values}>"
    return [head, *_indent(body), "</search>"]


def _hit(hit: Hit) -> list[str]:
    head = attrs(
        docid=show_docid(hit.docid),
        score=float(hit.score),
        collection=hit.collection,
        path=hit.path,
        virtual_path=hit.virtual_path,
        disk_path=hit.disk_path,
        stale=hit.stale,
        matched_terms=hit.matched_terms,
        total_terms=hit.total_terms,
        page=hit.page,
    )
    children = [element("title", hit.title)]
    if hit.transcript is not None:
        from tansaku.render.transcripts import fields

        values = fields(hit.transcript)
        prompt = values.pop("run_prompt")
        children.append(element("transcript", "" if prompt is None else str(prompt), **values))
    children += [element("also_at", p) for p in hit.also_at]
    children += [element("also_in", language) for language in hit.also_in]
    children += [element("context", c) for c in hit.contexts]
    children += [_field(name, value) for name, value in hit.fields or ()]
    children.append(element("snippet", "\n".join(hit.snippet.lines), start_line=hit.snippet.start_line))
    if hit.body is not None:
        children.append(element("body", hit.body))
    return [f"<result{head}>", *_indent(children), "</result>"]


def _field(name: str, value: object) -> str:
    """A front-matter field (--fields): its text, or a list field's elements as <value>s."""
    if isinstance(value, tuple):
        values = "".join(element("value", field_text(item)) for item in value)
        return f"<field{attrs(name=name, list=True)}>{values}</field>"
    return f"<field{attrs(name=name)}>{text(field_text(value))}</field>"


def _document(doc: DocumentSlice) -> list[str]:
    head = attrs(
        docid=show_docid(doc.docid),
        collection=doc.collection,
        path=doc.path,
        virtual_path=doc.virtual_path,
        disk_path=doc.disk_path,
        size=doc.size,
        total_lines=doc.total_lines,
        from_line=doc.from_line,
        truncated=doc.truncated,
        stale=doc.stale,
        missing=doc.missing,
    )
    children = [element("title", doc.title), *(element("also_at", p) for p in doc.also_at or ())]
    children += [element("context", c) for c in doc.contexts]
    children.append(element("text", "\n".join(doc.lines)))
    return [f"<document{head}>", *_indent(children), "</document>"]


def _multi(result: MultiGetResult) -> list[str]:
    body: list[str] = []
    for doc in result.documents:
        body += _document(doc)
    for s in result.skipped:
        shown = attrs(virtual_path=s.virtual_path, size=s.size, text_bytes=s.text_bytes, reason=s.reason)
        body.append(f"<skipped{shown}/>")
    body += _warnings(result.warnings)
    head = attrs(pattern=result.pattern, max_bytes=result.max_bytes, max_lines=result.max_lines)
    return [f"<documents{head}>", *_indent(body), "</documents>"]


def render_pack(pack: ContextPack, opts: RenderOptions) -> str:
    # Like the search result, each item carries both paths, so opts.full_path does not apply.
    body: list[str] = []
    for item in pack.items:
        body += _pack_item(item)
    body += _warnings(pack.warnings)
    head = attrs(
        query=pack.query,
        bytes_used=pack.bytes_used,
        max_bytes=pack.max_bytes,
        max_items=pack.max_items,
        omitted=pack.omitted,
        used=pack.used,
    )
    lines = [f"<pack{head}>", *_indent(body), "</pack>"]
    return "\n".join(['<?xml version="1.0" encoding="UTF-8"?>', *lines]) + "\n"


def _pack_item(item: PackItem) -> list[str]:
    head = attrs(
        docid=show_docid(item.docid),
        score=float(item.score),
        collection=item.collection,
        path=item.path,
        virtual_path=item.virtual_path,
        disk_path=item.disk_path,
        start_line=item.start_line,
        end_line=item.end_line,
        stale=item.stale,
    )
    children = [element("title", item.title)]
    # One element per heading, outermost first: a heading may itself contain " > ".
    children += [element("heading", h) for h in item.heading_path]
    children += [element("context", c) for c in item.contexts]
    children.append(element("text", item.text))
    return [f"<item{head}>", *_indent(children), "</item>"]
