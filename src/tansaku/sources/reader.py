"""Reading one file into a document: bytes -> hash, text, title. Never writes anything.

Rules for awkward files (stated in docs/architecture.md):
- larger than the size limit: skipped before reading (reason ``too-large``);
- a NUL byte in the first 8 KiB: binary, skipped (``binary``);
- invalid UTF-8: decoded with U+FFFD replacements and marked repaired when at most 1% of the
  bytes are bad (a stray Latin-1 byte in a note should not hide the note), else skipped
  (``invalid-utf8``).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from ..types import SkippedFile

BINARY_SNIFF_BYTES = 8192
MAX_BAD_FRACTION = 0.01
_FRONT_MATTER = re.compile(r"\A(?:\ufeff)?---[ \t]*\r?\n(.*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)", re.S)
_TITLE_LINE = re.compile(r"^title:[ \t]*(.+?)[ \t]*$", re.M)
# TOML front matter (Hugo's +++ ... +++), whose closing line would otherwise underline a title.
_TOML_FRONT_MATTER = re.compile(r"\A(?:\ufeff)?\+\+\+[ \t]*\r?\n(.*?)\r?\n\+\+\+[ \t]*(?:\r?\n|\Z)", re.S)
_TOML_TITLE_LINE = re.compile(r"^title[ \t]*=[ \t]*(.+?)[ \t]*$", re.M)
_HEADING = re.compile(r"^[ ]{0,3}#[ \t]+(.+?)[ \t#]*$", re.M)
# A title underlined with a run of one punctuation character: Markdown setext (= or -) and
# reStructuredText (any of these), e.g. "pathlib\n=======" in Python's .rst sources.
_UNDERLINED = re.compile(
    r"^[ ]{0,3}([^\s=\-~^*+#\"'`._][^\n]*?)[ \t]*\n[ ]{0,3}([=\-~^*+#\"'`:._])\2{2,}[ \t]*$", re.M
)
# Bump when what is derived from a file (title, segmentation, FTS columns) changes for the same
# bytes: `update` then re-reads every file of a collection indexed by an older version.
# 4: a C function pointer type defines its own name, not its return type (sources/outline.py).
# 5: Sphinx's awaitablefunction and awaitablemethod define names (asyncio.gather, anext); a man
#    page's upper-case tags do too (SIGHUP, CAP_NET_BIND_SERVICE, LANG).
# 6: a Markdown file's front matter is stored as fields (fields/frontmatter.py, --where); TOML
#    front matter (+++) gives the title.
# 7: HTML files are indexed as their extracted text, not their markup (sources/formats/).
# 8: an HTML page's title is its <title> without the site's name, and documentation generators'
#    navigation (DocBook, makeinfo, SQLite) is left out of its text (formats/html.py).
# 9: the blocks a site repeats on its HTML pages (menus, footers) are left out of them
#    (sources/boilerplate.py, index/repeated.py).
# 10: an HTML page's tables of contents and index tables (lists of nothing but links) are left
#     out of its text (formats/html.py).
INDEXER_VERSION = 10
TITLE_SEARCH_CHARS = 16_384
# Only prose formats have headings; in code a "# comment" or a docstring closed by '"""' is not
# a title, so code files are titled by their name.
PROSE_SUFFIXES = frozenset({"", ".md", ".markdown", ".mdx", ".rst", ".txt", ".text", ".adoc", ".org"})


@dataclass(frozen=True)
class ReadDocument:
    rel_path: str
    content_hash: str
    text: str
    title: str
    size: int
    repaired: bool
    pages: tuple[int, ...] = ()  # first line of each page, for a PDF
    notices: tuple[str, ...] = ()  # what its extraction left out (pages past the limit, ...)


def content_hash(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def read_document(rel_path: str, abs_path: str, size: int, max_bytes: int) -> ReadDocument | SkippedFile:
    if size > max_bytes:
        return SkippedFile(rel_path, f"too-large ({size} bytes > limit {max_bytes})")
    try:
        with open(abs_path, "rb") as handle:
            raw = handle.read(max_bytes + 1)
    except OSError as exc:
        return SkippedFile(rel_path, f"unreadable ({exc.strerror or exc})")
    if len(raw) > max_bytes:  # grew since it was listed
        return SkippedFile(rel_path, f"too-large (over limit {max_bytes})")
    if b"\x00" in raw[:BINARY_SNIFF_BYTES]:
        return SkippedFile(rel_path, "binary")
    repaired = False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("utf-8", errors="replace")
        bad = text.count("\ufffd") - raw.count("\xef\xbf\xbd".encode("latin-1"))
        if bad > max(1, len(raw) * MAX_BAD_FRACTION):
            return SkippedFile(rel_path, "invalid-utf8")
        repaired = True
    if text.startswith("\ufeff"):
        text = text[1:]
    return ReadDocument(
        rel_path=rel_path,
        content_hash=content_hash(raw),
        text=text,
        title=extract_title(text, rel_path),
        size=len(raw),
        repaired=repaired,
    )


def extract_title(text: str, rel_path: str) -> str:
    """Front-matter ``title``, else the first heading (``#`` or underlined), else the file name."""
    name = PurePosixPath(rel_path).name
    if _prose_suffix(name) not in PROSE_SUFFIXES:
        return name
    body_start = 0
    front, title_line = _FRONT_MATTER.match(text), _TITLE_LINE
    if front is None:
        front, title_line = _TOML_FRONT_MATTER.match(text), _TOML_TITLE_LINE
    if front:
        body_start = front.end()
        found = title_line.search(front.group(1))
        if found:
            title = _unquote(found.group(1))
            if title:
                return title
    # A title is near the top: looking further only costs time on long files without headings.
    end = body_start + TITLE_SEARCH_CHARS
    found = [
        m for m in (_HEADING.search(text, body_start, end), _UNDERLINED.search(text, body_start, end)) if m
    ]
    if found:
        first = min(found, key=lambda m: m.start())
        title = first.group(1).strip()
        if title:
            return title
    return name


def _prose_suffix(name: str) -> str:
    """`.rst.txt` counts as `.txt`; a name without a dot (README) has no suffix."""
    return PurePosixPath(name).suffix.lower()


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1].strip()
    return value.strip()


def line_count(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)
