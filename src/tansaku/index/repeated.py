"""An update leaves the blocks a site repeats on its pages (``sources/boilerplate.py``) out of the
HTML pages it reads: the collection's HTML pages vote, the ones read in this update and the
others (their text as extracted, from the extraction cache), and the pages read lose the blocks
found repeated.

Pages not read in this update keep the text they were indexed with: a block that becomes
repeated when pages are added stays in the older pages until they change (or the indexer's
version does). A collection with many HTML pages is judged on a sample of them, at most
:data:`MAX_VOTERS`, chosen by path (every k-th), so an update's cost stays bounded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..search.languages import neutral
from ..sources.boilerplate import RepeatedBlocks
from ..sources.formats import extractor_id, format_of
from ..sources.formats.html import SEPARATOR, page_title
from ..sources.reader import ReadDocument
from ..store.backend import extractions as cache

if TYPE_CHECKING:
    from ..store.backend import documents as store
    from .plan import Plan

MAX_VOTERS = 20_000
MAX_SITE_NAME = 80  # a repeated block longer than this is not read as the site's name


def leave_out_repeated(
    conn: object, work: Plan, existing: dict[str, store.StoredDocument], seen: set[str]
) -> None:
    """Replace the text of the HTML pages in ``work`` (added, changed) by their text without the
    collection's repeated blocks; count them in ``work.repeated_blocks``/``repeated_pages``."""
    read = {item.rel_path: doc for item, doc in work.add}
    read.update({item.rel_path: doc for _, item, doc in work.change})
    html = {path: doc for path, doc in read.items() if format_of(path) == "html" and doc.text}
    if not html:
        return
    extractor = extractor_id("html")
    voters = sorted({*html} | {p for p in existing if p in seen and p not in read and format_of(p) == "html"})
    if len(voters) > MAX_VOTERS:
        step = len(voters) / MAX_VOTERS
        voters = [voters[int(n * step)] for n in range(MAX_VOTERS)]
    pages: dict[str, str] = {}
    for path in voters:
        if path in html:
            pages[path] = html[path].text
            continue
        found = cache.get(conn, existing[path].hash, extractor)
        if found is not None and found.body:
            pages[path] = found.body
            work.extractions.seen.append((found.hash, extractor))
    repeated = RepeatedBlocks(pages, _same_page)
    stripped: dict[str, ReadDocument] = {}
    for path, doc in html.items():
        text, left_out = repeated.strip(path, doc.text)
        title = _title(doc.title, repeated.repeated_in(path)[0])
        if left_out or title != doc.title:
            stripped[path] = replace(doc, text=text, title=title)
            work.repeated_blocks += left_out
    if stripped:
        work.repeated_pages += len(stripped)
        work.add = [(item, stripped.get(item.rel_path, doc)) for item, doc in work.add]
        work.change = [(old, item, stripped.get(item.rel_path, doc)) for old, item, doc in work.change]


def _title(title: str, repeated: frozenset[str]) -> str:
    """``title`` without a first or last part that the site repeats as a block of its own: the
    site's name, when the page names it nowhere else ("mod_alias - Apache HTTP Server Version
    2.4", and every page of the manual has the line "Apache HTTP Server Version 2.4")."""
    if not SEPARATOR.search(title):
        return title
    names = tuple(key for key in repeated if len(key) <= MAX_SITE_NAME)
    return page_title(title, (), names)


def _same_page(path: str) -> str:
    """Translations of one page (``en/a.html``, ``fr/a.html``) share this name."""
    found = neutral(path)
    return found[0] if found is not None else path
