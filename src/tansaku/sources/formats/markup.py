"""XML parts of a document (a DOCX's ``word/document.xml``, an EPUB's package files) parsed into a
tree, refusing one that nests deeper than a document does.

Depth is what makes a small XML part cost minutes: a 3 KB DOCX of 20,000 tables inside each
other took over 300 s to read, since every walk over a cell re-reads the tables inside it. The
tree is built by the same C parser as ``ElementTree.fromstring``, and the depth is counted from its
start and end events as it goes, so a part is read once, and refused at the first element past
the limit.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from . import ExtractionFailed

_FEED_BYTES = 256 * 1024


def parse_xml(data: bytes, what: str, max_depth: int) -> ET.Element:
    """The root element of ``data`` (the part named ``what``); ``corrupt`` when it is not
    well-formed XML, ``too-deep`` when elements nest more than ``max_depth`` deep."""
    parser = ET.XMLPullParser(events=("start", "end"))
    depth = 0
    root: ET.Element | None = None
    try:
        for at in range(0, len(data), _FEED_BYTES):
            parser.feed(data[at : at + _FEED_BYTES])
            for event, element in parser.read_events():
                if event == "end":
                    depth -= 1
                    continue
                depth += 1
                root = element if root is None else root
                if depth > max_depth:
                    raise ExtractionFailed(
                        "too-deep",
                        f"{what} nests elements more than {max_depth} deep (the limit per document)",
                    )
        parser.close()
    except ET.ParseError as exc:
        raise ExtractionFailed("corrupt", f"{what} is not well-formed XML: {exc}") from exc
    if root is None:
        raise ExtractionFailed("corrupt", f"{what} is empty")
    return root
