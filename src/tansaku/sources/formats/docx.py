"""Word (DOCX) -> Markdown-like text, read with the standard library (zip + ElementTree).

A paragraph whose style is a heading (its style name is "heading N" or "Title", or it sets an
outline level) becomes a ``#`` line; list paragraphs become ``- `` items; table rows become
``| a | b |`` lines. Deleted text of tracked changes is left out. Title: the document's
properties (``dc:title``), else its first Title or level-1 heading paragraph.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from . import Extracted, ExtractionFailed, Limits
from .archive import Archive
from .markup import parse_xml

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.I)
_SPACE = re.compile(r"[ \t\r\n]+")


def extract(raw: bytes, limits: Limits | None = None) -> Extracted:
    limits = limits or Limits.current()
    archive = Archive(raw, "DOCX", limits.unzipped_bytes)
    document = parse_xml(archive.read("word/document.xml"), "word/document.xml", limits.nesting)
    levels = _style_levels(archive, limits.nesting)
    body = document.find(f"{_W}body")
    if body is None:
        raise ExtractionFailed("corrupt", "word/document.xml has no body")
    blocks: list[tuple[str, str]] = []
    first_heading = ""
    for kind, text in _blocks(body, levels):
        blocks.append((kind, text))
        if kind == "heading" and not first_heading and text.startswith("# "):
            first_heading = text[2:]
    title = _core_title(archive, limits.nesting) or first_heading
    out: list[str] = []
    previous = ""
    for kind, text in blocks:
        if out:
            out.append("\n" if kind == previous and kind in ("item", "row") else "\n\n")
        out.append(text)
        previous = kind
    return Extracted(text="".join(out) + ("\n" if out else ""), title=title)


def _core_title(archive: Archive, max_depth: int) -> str:
    if "docProps/core.xml" not in archive.names:
        return ""
    core = parse_xml(archive.read("docProps/core.xml"), "docProps/core.xml", max_depth)
    found = core.find(_DC_TITLE)
    return _SPACE.sub(" ", found.text or "").strip() if found is not None else ""


def _style_levels(archive: Archive, max_depth: int) -> dict[str, int]:
    """styleId -> heading level (Title counts as 1), from the style names and outline levels."""
    if "word/styles.xml" not in archive.names:
        return {}
    styles = parse_xml(archive.read("word/styles.xml"), "word/styles.xml", max_depth)
    levels: dict[str, int] = {}
    for style in styles.iter(f"{_W}style"):
        style_id = style.get(f"{_W}styleId") or ""
        name_el = style.find(f"{_W}name")
        name = (name_el.get(f"{_W}val") or "") if name_el is not None else ""
        found = _HEADING_NAME.match(name) or _HEADING_NAME.match(style_id)
        outline = style.find(f"{_W}pPr/{_W}outlineLvl")
        if found:
            levels[style_id] = int(found.group(1))
        elif name.lower() == "title" or style_id.lower() == "title":
            levels[style_id] = 1
        elif outline is not None and (outline.get(f"{_W}val") or "9").isdigit():
            level = int(outline.get(f"{_W}val") or "9") + 1
            if level <= 6:
                levels[style_id] = level
    return levels


def _blocks(body: ET.Element, levels: dict[str, int]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    # Content controls (w:sdt) wrap paragraphs and tables: walk into them, in order.
    stack = [iter(body)]
    while stack:
        element = next(stack[-1], None)
        if element is None:
            stack.pop()
            continue
        if element.tag == f"{_W}p":
            block = _paragraph(element, levels)
            if block is not None:
                out.append(block)
        elif element.tag == f"{_W}tbl":
            out.extend(("row", row) for row in _rows(element))
        elif element.tag in (f"{_W}sdt", f"{_W}sdtContent", f"{_W}customXml"):
            stack.append(iter(element))
    return out


def _text(element: ET.Element, line_break: str = "\n") -> str:
    parts: list[str] = []
    for node in element.iter():
        if node.tag == f"{_W}t":
            parts.append(node.text or "")
        elif node.tag == f"{_W}tab":
            parts.append("\t")
        elif node.tag in (f"{_W}br", f"{_W}cr"):
            parts.append(line_break)
    return "".join(parts)


def _paragraph(p: ET.Element, levels: dict[str, int]) -> tuple[str, str] | None:
    props = p.find(f"{_W}pPr")
    style = ""
    level = 0
    listed = False
    if props is not None:
        style_el = props.find(f"{_W}pStyle")
        style = (style_el.get(f"{_W}val") or "") if style_el is not None else ""
        level = levels.get(style, 0)
        outline = props.find(f"{_W}outlineLvl")
        if outline is not None and (outline.get(f"{_W}val") or "").isdigit():
            level = int(outline.get(f"{_W}val") or "9") + 1
            level = level if level <= 6 else 0
        listed = props.find(f"{_W}numPr") is not None
    if level:
        text = _SPACE.sub(" ", _text(p, " ")).strip()
        return ("heading", "#" * level + " " + text) if text else None
    lines = [_SPACE.sub(" ", line).strip() for line in _text(p).split("\n")]
    text = "\n".join(line for line in lines if line)
    if not text:
        return None
    if listed:
        return ("item", "- " + text)
    return ("paragraph", text)


def _rows(table: ET.Element) -> list[str]:
    rows: list[str] = []
    for row in table.iter(f"{_W}tr"):
        cells = [
            _SPACE.sub(" ", _text(cell, " ")).strip().replace("|", "\\|") for cell in row.findall(f"{_W}tc")
        ]
        if any(cells):
            rows.append("| " + " | ".join(cells) + " |")
    return rows
