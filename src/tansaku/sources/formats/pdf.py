"""PDF -> text with PDFium (``pypdfium2``, the ``docs`` extra), page by page.

Chosen by measurement (docs/formats.md): on 24 Python documentation pages printed to PDF by
Chromium (178 pages), PDFium read 416 pages/s, pypdf 15 and pdfminer.six 9, with the same word
recall against the pages' HTML text (0.997).

Pages are separated by a blank line and ``Extracted.pages`` holds the first line of each, so a
hit can say its page. A PDF holds positioned text, not structure; its headings come from its
outline (bookmarks), when it has one: a bookmark's title found as a line of the page it points
to becomes a ``#`` line of the bookmark's depth. Its title is the document's Title property,
else its first line when that is short, else its first bookmark.
Reading stops after ``MAX_PDF_PAGES`` pages or ``MAX_PDF_SECONDS`` seconds, and says so.

PDFium inflates a page's content stream whole before reading it, so a 2 MB file whose one stream
inflates to 2 GiB once took 3.2 GB of memory. Before PDFium opens the file, every compressed
stream that is not an image (images are never decoded for text) is inflated here in pieces and
counted, and the file is refused (``decompression-bomb``) past the limit for one stream or for
all of them; the pieces are thrown away as they come, so the count costs time, not memory.
"""

from __future__ import annotations

import re
import time
import zlib

from . import Extracted, ExtractionFailed, Limits, missing_extra

# Control characters PDFium leaves in text (e.g. \x02 for a hyphen at a line end), and its
# marker for a soft hyphen.
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
_TRAILING_SPACE = re.compile(r"[ \t]+\n")
_EXCESS_BLANKS = re.compile(r"\n{3,}")
MAX_TITLE_CHARS = 120
MAX_HEADING_DEPTH = 6
MAX_BOOKMARKS = 10_000
# PDFium's FPDF_ERR_PASSWORD (FPDF_GetLastError): the document needs a password to open.
_PASSWORD_ERROR = 4


_STREAM = re.compile(rb"\bstream\r?\n")
_OBJ = re.compile(rb"\d+\s+\d+\s+obj\b")
_INFLATE_PIECE = 1024 * 1024
_DICT_LOOKBACK = 4096


def extract(raw: bytes, limits: Limits | None = None) -> Extracted:
    """The PDF's text, within ``limits`` (the package's, read at call time, by default)."""
    limits = limits or Limits.current()
    try:
        import pypdfium2 as pdfium
    except ImportError:
        raise missing_extra("pdf", "pypdfium2") from None
    check_inflation(raw, limits.pdf_stream_bytes, limits.pdf_inflated_bytes)
    try:
        document = pdfium.PdfDocument(raw)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == _PASSWORD_ERROR:
            raise ExtractionFailed(
                "encrypted", "the PDF needs a password to open; tansaku does not ask for one"
            ) from exc
        raise ExtractionFailed("corrupt", f"PDFium cannot open it: {exc}") from exc
    try:
        return _read(document, limits.pdf_pages, limits.pdf_seconds)
    finally:
        document.close()


def check_inflation(raw: bytes, per_stream: int, in_all: int) -> None:
    """Raise ``decompression-bomb`` when a Flate stream (not an image) of the file inflates past
    ``per_stream`` bytes, or all of them past ``in_all``."""
    total = 0
    for found in _STREAM.finditer(raw):
        head = raw[max(0, found.start() - _DICT_LOOKBACK) : found.start()]
        objects = list(_OBJ.finditer(head))
        if objects:
            head = head[objects[-1].end() :]
        if b"FlateDecode" not in head or b"/Image" in head:
            continue
        size = _inflated_size(raw, found.end(), per_stream + 1)
        total += size
        if size > per_stream:
            raise ExtractionFailed(
                "decompression-bomb",
                f"the stream at byte {found.start()} inflates past {_mib(per_stream)}"
                " (the limit for one stream of a PDF); not read",
            )
        if total > in_all:
            raise ExtractionFailed(
                "decompression-bomb",
                f"its streams inflate past {_mib(in_all)} (the limit for one PDF); not read",
            )


def _mib(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB"


def _inflated_size(raw: bytes, start: int, stop_at: int) -> int:
    """Bytes the zlib stream at ``start`` inflates to, counted up to ``stop_at``; a damaged
    stream counts what inflated before the damage (PDFium meets the same damage)."""
    inflater = zlib.decompressobj()
    size = 0
    view = memoryview(raw)
    at = start
    try:
        while not inflater.eof and size < stop_at:
            data = inflater.unconsumed_tail
            if not data:
                if at >= len(raw):
                    break
                data, at = view[at : at + _INFLATE_PIECE], at + _INFLATE_PIECE
            size += len(inflater.decompress(data, _INFLATE_PIECE))
    except zlib.error:
        pass
    return size


def _read(document: object, max_pages: int, max_seconds: float) -> Extracted:
    total = len(document)  # type: ignore[arg-type]
    started = time.monotonic()
    texts: list[str] = []
    notices: list[str] = []
    for index in range(total):
        if index >= max_pages:
            notices.append(f"indexed the first {max_pages} of {total} pages (the page limit per PDF)")
            break
        if index and time.monotonic() - started > max_seconds:  # the first page is always read
            notices.append(
                f"indexed the first {index} of {total} pages: reading stopped after"
                f" {max_seconds:g} s (the time limit per PDF)"
            )
            break
        page = document[index]  # type: ignore[index]
        try:
            textpage = page.get_textpage()
            try:
                texts.append(_clean(textpage.get_text_bounded()))
            finally:
                textpage.close()
        except Exception as exc:  # PDFium's errors on one damaged page: keep the others
            texts.append("")
            notices.append(f"page {index + 1} could not be read ({exc})")
        finally:
            page.close()
    if not any(t.strip() for t in texts):
        raise ExtractionFailed(
            "no-text-layer",
            f"no text on {'its one page' if total == 1 else f'any of its {total} pages'}:"
            " a scanned or image-only PDF (OCR is not done)",
        )
    headings = _outline(document)
    for index, marks in headings.items():
        if index < len(texts):
            texts[index] = _mark_headings(texts[index], marks)
    text, pages = _join(texts)
    first = next((title for index in sorted(headings) for _, title in headings[index][:1]), "")
    # The first line names a manual or a paper more often than its first bookmark does
    # ("Libtasn1" rather than "1 Introduction").
    title = _metadata_title(document) or _first_line(text) or first
    return Extracted(text=text, title=title, pages=pages, notices=tuple(notices))


def _outline(document: object) -> dict[int, list[tuple[int, str]]]:
    """Page index -> the (depth, title) of the bookmarks pointing at it, in outline order."""
    found: dict[int, list[tuple[int, str]]] = {}
    try:
        for count, item in enumerate(document.get_toc(max_depth=MAX_HEADING_DEPTH)):  # type: ignore[attr-defined]
            if count >= MAX_BOOKMARKS:
                break
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            title = " ".join((item.get_title() or "").split())
            if index is not None and title:
                found.setdefault(index, []).append((item.level, title))
    except Exception:  # a damaged outline costs the headings, not the text
        return found
    return found


def _mark_headings(page: str, marks: list[tuple[int, str]]) -> str:
    """Turn the lines that are these bookmarks' titles into ``#`` headings, in order."""
    lines = page.split("\n")
    at = 0
    for level, title in marks:
        wanted = title.casefold()
        for i in range(at, len(lines)):
            if " ".join(lines[i].split()).casefold() == wanted:
                lines[i] = "#" * min(level + 1, 6) + " " + lines[i].strip()
                at = i + 1
                break
    return "\n".join(lines)


def _clean(text: str) -> str:
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    text = _TRAILING_SPACE.sub("\n", text)
    return _EXCESS_BLANKS.sub("\n\n", text).strip("\n")


def _join(texts: list[str]) -> tuple[str, tuple[int, ...]]:
    """The pages' texts, a blank line between pages, and the first line of each page."""
    starts: list[int] = []
    line = 1
    parts: list[str] = []
    for text in texts:
        starts.append(line)
        body = text + "\n" if text else ""
        parts.append(body + "\n")  # the blank line that ends every page
        line += body.count("\n") + 1
    return "".join(parts).rstrip("\n") + "\n", tuple(starts)


def _metadata_title(document: object) -> str:
    try:
        value = document.get_metadata_value("Title")  # type: ignore[attr-defined]
    except Exception:
        return ""
    return " ".join(str(value or "").split())


def _first_line(text: str) -> str:
    for line in text.splitlines():
        line = line.lstrip("#").strip()
        if line:
            return line if len(line) <= MAX_TITLE_CHARS else ""
    return ""
