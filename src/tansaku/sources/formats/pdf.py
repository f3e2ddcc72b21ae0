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
"""

from __future__ import annotations

import re
import time

from . import Extracted, ExtractionFailed, missing_extra

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


def extract(raw: bytes, max_pages: int | None = None, max_seconds: float | None = None) -> Extracted:
    """The PDF's text; the limits default to the package's (read at call time)."""
    from . import MAX_PDF_PAGES, MAX_PDF_SECONDS

    try:
        import pypdfium2 as pdfium
    except ImportError:
        raise missing_extra("pdf", "pypdfium2") from None
    try:
        document = pdfium.PdfDocument(raw)
    except pdfium.PdfiumError as exc:
        if getattr(exc, "err_code", None) == _PASSWORD_ERROR:
            raise ExtractionFailed(
                "encrypted", "the PDF needs a password to open; tansaku does not ask for one"
            ) from exc
        raise ExtractionFailed("corrupt", f"PDFium cannot open it: {exc}") from exc
    try:
        return _read(
            document,
            MAX_PDF_PAGES if max_pages is None else max_pages,
            MAX_PDF_SECONDS if max_seconds is None else max_seconds,
        )
    finally:
        document.close()


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
