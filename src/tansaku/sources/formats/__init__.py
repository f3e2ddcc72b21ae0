"""Text out of PDF, HTML, Word (DOCX) and EPUB files, for indexing like any text file.

Each format has its own module, imported only when a file of that format is met. An extractor
turns the file's bytes into Markdown-like text (headings as ``#`` lines, so the chunker's heading
paths follow the document's sections), a title (the document's metadata, else its first
heading) and, for PDF, where each page starts. A file that cannot be read raises
:class:`ExtractionFailed` with a reason code of its own; nothing here writes or prints.

Bounds (a hostile or enormous file costs a stated, limited amount), one set for every format
(:class:`Limits`); the indexer runs extractors in a worker process (``guard.py``) that adds the
two a parser cannot enforce on itself, a wall-clock limit and a memory limit:

- archives (DOCX, EPUB) are read member by member and stop past ``MAX_UNZIPPED_BYTES`` actually
  inflated, whatever their headers claim (``zip-bomb``); a PDF's compressed streams are inflated
  once, counted, before PDFium reads them (``decompression-bomb``);
- XML (DOCX parts, EPUB package files) nests at most ``MAX_NESTING`` elements deep
  (``too-deep``); HTML of any depth is read in time linear in its length (``html.py``);
- a PDF is read up to ``MAX_PDF_PAGES`` pages or ``MAX_PDF_SECONDS`` seconds, and says how far
  it got (a notice, not a failure);
- the text kept is at most the collection's file size limit, cut at a line (a notice says so).
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

from ...errors import UsageError

# Suffix (lower case) -> format name.
SUFFIXES = {
    ".pdf": "pdf",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".docx": "docx",
    ".epub": "epub",
}
FORMATS = ("pdf", "html", "docx", "epub")
# The masks `collection add --formats` adds for each format.
MASKS = {
    "pdf": ("**/*.pdf",),
    "html": ("**/*.html", "**/*.htm"),
    "docx": ("**/*.docx",),
    "epub": ("**/*.epub",),
}
# A format's extractor version: bump it when the same bytes would give a different text, so
# cached extractions made by the older one are not used; bump sources/reader.py's
# INDEXER_VERSION with it, so that files unchanged on disk are read again.
# html 2: the title is <title> without the site's name; generators' navigation divs left out.
# html 3: the blocks a collection's pages repeat are left out of them (index/repeated.py): the
#   same bytes now index as a different text.
# html 4: lists, tables and DocBook <dl>s of nothing but links (tables of contents, indexes) left
#   out (formats/html.py).
VERSIONS = {"pdf": 1, "html": 4, "docx": 1, "epub": 1}
_MODULES = {
    "pdf": "tansaku.sources.formats.pdf",
    "html": "tansaku.sources.formats.html",
    "docx": "tansaku.sources.formats.docx",
    "epub": "tansaku.sources.formats.epub",
}

# Document files are larger than text for the same words: their own input limit.
MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
MAX_UNZIPPED_BYTES = 64 * 1024 * 1024
MAX_ARCHIVE_MEMBERS = 10_000
MAX_PDF_PAGES = 2000
# A PDF stops taking pages at this point, so its first pages are kept before the hard limit.
MAX_PDF_SECONDS = 50.0
# Inflated bytes of one PDF stream, and of all of them: a page's content stream is kilobytes, so
# a stream past this is a bomb, not a document.
MAX_PDF_STREAM_BYTES = 64 * 1024 * 1024
MAX_PDF_INFLATED_BYTES = 512 * 1024 * 1024
# XML elements inside each other: Word's own documents nest about 20 deep (a table in a table
# adds 3), and a parser's cost grows with the depth.
MAX_NESTING = 256
# The worker process: wall-clock seconds for one file, and its address space.
MAX_EXTRACT_SECONDS = 60.0
MAX_EXTRACT_MEMORY = 2 * 1024 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    """The caps one extraction runs under; read from the module when an extraction starts, so the
    worker process applies the values of the process that asked."""

    pdf_pages: int
    pdf_seconds: float
    pdf_stream_bytes: int
    pdf_inflated_bytes: int
    unzipped_bytes: int
    nesting: int

    @classmethod
    def current(cls) -> Limits:
        return cls(
            MAX_PDF_PAGES,
            MAX_PDF_SECONDS,
            MAX_PDF_STREAM_BYTES,
            MAX_PDF_INFLATED_BYTES,
            MAX_UNZIPPED_BYTES,
            MAX_NESTING,
        )


@dataclass(frozen=True)
class Extracted:
    text: str
    title: str  # "" when the document names none: the caller falls back to the file name
    pages: tuple[int, ...] = ()  # 1-based first line of each page (PDF only)
    notices: tuple[str, ...] = ()  # what was left out, in words


class ExtractionFailed(Exception):
    """Why a file gave no text. ``code`` is stable (the summary's reason starts with it);
    ``cacheable`` is False when trying again later may work (a missing extra)."""

    def __init__(self, code: str, detail: str, *, cacheable: bool = True) -> None:
        super().__init__(f"{code} ({detail})")
        self.code = code
        self.detail = detail
        self.cacheable = cacheable

    @property
    def reason(self) -> str:
        return f"{self.code} ({self.detail})"


def format_masks(names: Sequence[str]) -> list[str]:
    """The masks for ``--formats pdf,html``: a comma list (or repeated), names checked."""
    wanted = [n.strip().lower() for value in names for n in value.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in MASKS]
    if unknown:
        raise UsageError(
            f"unknown format {unknown[0]!r} in --formats",
            hint=f"choose from {', '.join(FORMATS)} (a comma list: --formats pdf,docx)",
        )
    return [mask for n in dict.fromkeys(wanted) for mask in MASKS[n]]


def format_of(rel_path: str) -> str | None:
    return SUFFIXES.get(PurePosixPath(rel_path).suffix.lower())


def extractor_id(fmt: str) -> str:
    return f"{fmt}/{VERSIONS[fmt]}"


def extract(fmt: str, raw: bytes, max_chars: int, limits: Limits | None = None) -> Extracted:
    """The text of a file of format ``fmt`` (its bytes), at most ``max_chars`` characters kept.

    In this process, under the caps a parser keeps itself (``limits``, the module's by default);
    the indexer calls it through :class:`~tansaku.sources.formats.guard.ExtractionWorker`."""
    module = importlib.import_module(_MODULES[fmt])
    found: Extracted = module.extract(raw, limits or Limits.current())
    if len(found.text) <= max_chars:
        return found
    cut = found.text.rfind("\n", 0, max_chars) + 1 or max_chars
    pages = tuple(p for p in found.pages if p <= found.text.count("\n", 0, cut) + 1)
    notice = f"text cut at {cut} of {len(found.text)} characters (the file size limit)"
    return Extracted(found.text[:cut], found.title, pages, (*found.notices, notice))


def missing_extra(fmt: str, package: str) -> ExtractionFailed:
    return ExtractionFailed(
        "extra-missing",
        f"reading {fmt.upper()} files needs {package}: pip install 'tansaku[docs]'",
        cacheable=False,
    )
