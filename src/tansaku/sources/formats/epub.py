"""EPUB -> Markdown-like text: the spine's XHTML documents in reading order, each through the
HTML path (so chapter headings become heading paths). Read with the standard library (zip +
ElementTree), within the archive's budget of inflated bytes. Title: the package's ``dc:title``,
else the first heading. The navigation document (the table of contents) is left out: it repeats
the headings and would be a search hit for every one of them.
"""

from __future__ import annotations

import posixpath
import re
from urllib.parse import unquote

from . import Extracted, ExtractionFailed, Limits
from .archive import Archive
from .html import decode, to_markdown
from .markup import parse_xml

_CONTAINER = "{urn:oasis:names:tc:opendocument:xmlns:container}"
_OPF = "{http://www.idpf.org/2007/opf}"
_DC_TITLE = "{http://purl.org/dc/elements/1.1/}title"
_SPACE = re.compile(r"\s+")
_DOCUMENT_TYPES = frozenset({"application/xhtml+xml", "text/html"})


def extract(raw: bytes, limits: Limits | None = None) -> Extracted:
    limits = limits or Limits.current()
    archive = Archive(raw, "EPUB", limits.unzipped_bytes)
    container = parse_xml(archive.read("META-INF/container.xml"), "META-INF/container.xml", limits.nesting)
    rootfile = container.find(f"{_CONTAINER}rootfiles/{_CONTAINER}rootfile")
    opf_path = rootfile.get("full-path") if rootfile is not None else None
    if not opf_path:
        raise ExtractionFailed("corrupt", "META-INF/container.xml names no package document")
    package = parse_xml(archive.read(opf_path), opf_path, limits.nesting)
    base = posixpath.dirname(opf_path)
    manifest: dict[str, tuple[str, str, str]] = {}
    for item in package.iter(f"{_OPF}item"):
        href = posixpath.normpath(posixpath.join(base, unquote(item.get("href") or "")))
        manifest[item.get("id") or ""] = (href, item.get("media-type") or "", item.get("properties") or "")
    parts: list[str] = []
    first_heading = ""
    for ref in package.iter(f"{_OPF}itemref"):
        entry = manifest.get(ref.get("idref") or "")
        if entry is None:
            continue
        href, media_type, properties = entry
        if media_type not in _DOCUMENT_TYPES or "nav" in properties.split():
            continue
        chapter = to_markdown(decode(archive.read(href)))
        if chapter.text.strip():
            parts.append(chapter.text.rstrip("\n"))
            first_heading = first_heading or chapter.title
    title_el = package.find(f"{_OPF}metadata/{_DC_TITLE}")
    title = _SPACE.sub(" ", title_el.text or "").strip() if title_el is not None else ""
    text = "\n\n".join(parts)
    return Extracted(text=text + ("\n" if text else ""), title=title or first_heading)
