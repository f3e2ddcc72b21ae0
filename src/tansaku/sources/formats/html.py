"""HTML -> Markdown-like text. The page is parsed by lexbor (``selectolax``, in the ``docs``
extra) when it is installed, else by the standard library's streaming parser; either way the
same writer turns the start tags, texts and end tags into text, and the tree is walked without
recursion, so a deeply nested page cannot exhaust the stack. lexbor parses about ten times
faster and mends broken markup as browsers do (an unclosed ``<p>`` or ``<li>``).

What is kept: headings (``#`` lines), paragraphs, list items (``- ``), preformatted blocks
(fenced), table rows (``| a | b |``). What is left out: scripts, styles, navigation (``<nav>``,
``role="navigation"``), forms, asides, footers, Sphinx's heading permalinks and sidebars, and the
navigation that documentation generators mark with a class on a ``<div>``: DocBook XSL's
``navheader`` and ``navfooter`` (the ``Prev | Up | Home | Next`` tables: PostgreSQL, debmake),
makeinfo's ``header`` (texinfo 6: ``Next: ..., Up: ...``, and on a ``<table>`` too: texinfo
6.8's ``[ < ] [ Up ] [ > ]`` bar; on pages whose ``<meta name="generator">`` is makeinfo or
texi2any only) and ``nav-panel`` (texinfo 7),
``navigation``, and SQLite's ``nosearch`` (its site menu, and the page's title and table of
contents repeated: what SQLite's own search leaves out too), and tables of contents and indexes:
a list, table or ``<dl>`` of at least MIN_LINK_LIST items or rows nearly all of which are nothing
but links (``_Writer._drop_link_lists``). When the page marks its main
content (``<main>`` or ``role="main"``), only that is kept: the rest is the site around the page.

Title: the page's ``<title>`` (the first, outside ``<svg>``), without the site's name. The
title is cut at each separator (`` — ``, `` – ``, `` | ``, `` · ``, `` » ``, `` - ``, `` :: ``, ``: ``)
into a part before and a part after; the first of these parts that reads the same as the page's
own name (``og:title``, else the first ``<h1>``; case, spacing and a trailing ``¶`` aside) is
the title: "pathlib — Object-oriented filesystem paths — Python 3.11 documentation" with that
``<h1>`` gives "pathlib — Object-oriented filesystem paths", "PostgreSQL: Documentation: 15:
CREATE INDEX" with an ``<h1>`` "CREATE INDEX" gives "CREATE INDEX". Else a first or last part
that is the site's declared name (``og:site_name``, ``application-name``) is dropped. Else the
``<title>`` stays whole: the site's name is only left in, never a part of the page's own name
guessed away. Without a ``<title>``: ``og:title``, else the first ``<h1>``. (The first ``<h1>``
used to come first: SQLite's pages begin with "1. Overview" or "1. Syntax".) An update cuts off a
part more: one that the collection's pages repeat as a block of their own (index/repeated.py).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from . import Extracted, Limits

_SKIPPED = frozenset(
    {"script", "style", "noscript", "template", "svg", "math", "nav", "aside", "footer", "form",
     "button", "select", "iframe", "canvas", "object", "head"}
)  # fmt: skip
_SKIPPED_ROLES = frozenset({"navigation", "search", "banner", "contentinfo", "complementary"})
_SKIPPED_CLASSES = frozenset({"headerlink", "sphinxsidebar", "related"})
# Navigation marked by documentation generators, on a <div> only (an <h1 class="header"> stays).
_SKIPPED_DIV_CLASSES = frozenset({"navheader", "navfooter", "nav-panel", "navigation", "nosearch"})
# makeinfo's class for its navigation ("header") is a common name: only on its pages.
_MAKEINFO = ("makeinfo", "texi2any")
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
     "track", "wbr"}
)  # fmt: skip
_BLOCKS = frozenset(
    {"p", "div", "section", "article", "main", "header", "body", "blockquote", "ul", "ol", "dl", "dt",
     "dd", "figure", "figcaption", "table", "thead", "tbody", "hr", "address", "details", "summary",
     "caption"}
)  # fmt: skip
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_TAG = re.compile(r"<(/?)([A-Za-z][^\s/>]*)")
# Deeper pages go to the standard library's parser, whose time grows with the page's length only.
MAX_TREE_DEPTH = 1000
# A list or table of at least this many items or rows, each nothing but links, is a table of
# contents or an index, not the page's text.
MIN_LINK_LIST = 3
LINK_LIST_SHARE = 0.9
_SPACE = re.compile(r"\s+")
_BREAK = "\ue000"  # a <br> while inline text is gathered (source newlines are only spaces)
_MAIN = re.compile(rb"<main[\s>]|role\s*=\s*[\"']?main\b", re.I)
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_\-]+)""", re.I)
# Where a <title> is cut into the page's name and the site's: the spaced dashes and bars, and ": ".
SEPARATOR = re.compile(r" (?:—|–|\||·|»|-|::) |: ")
_META_NAMES = {"og:title": "og_title", "og:site_name": "site_name", "application-name": "site_name",
               "generator": "generator"}  # fmt: skip


def decode(raw: bytes) -> str:
    """Bytes -> text: a BOM, else the page's <meta charset>, else UTF-8 (bad bytes replaced)."""
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw[3:].decode("utf-8", "replace")
    found = _META_CHARSET.search(raw[:4096])
    if found:
        try:
            return raw.decode(found.group(1).decode("ascii"), "replace")
        except LookupError:
            pass
    return raw.decode("utf-8", "replace")


def extract(raw: bytes, limits: Limits | None = None) -> Extracted:
    """``limits``: none applies to HTML itself (any depth reads in linear time, below)."""
    return to_markdown(decode(raw), main_only=_MAIN.search(raw) is not None)


def to_markdown(page: str, main_only: bool = False, *, tree: bool = True) -> Extracted:
    """``tree``: parse with lexbor when it is installed (False: always the standard library)."""
    writer = _Writer(main_only)
    if not (tree and _walk_tree(writer, page)):
        writer.feed(page)
        writer.close()
    return Extracted(text=writer.text(), title=writer.page_title())


def page_title(title: str, names: tuple[str, ...], site_names: tuple[str, ...] = ()) -> str:
    """``title`` (the page's ``<title>``) without the site's name: the part before or after one
    of its separators that reads as one of ``names`` (the page's ``og:title``, its first
    ``<h1>``), else ``title`` with a first or last part that is one of ``site_names`` dropped,
    else ``title`` whole."""
    cuts = list(SEPARATOR.finditer(title))
    if not cuts:
        return title
    parts = {}  # each part (before or after a cut) as it reads -> as it is written
    for cut in cuts:
        for part in (title[: cut.start()], title[cut.end() :]):
            parts.setdefault(_same(part), part.strip())
    for name in map(_same, names):
        if name and name in parts:
            return parts[name]
    sites = {_same(n) for n in site_names if n}
    first, last = title[: cuts[0].start()], title[cuts[-1].end() :]
    if _same(last) in sites and title[: cuts[-1].start()].strip():
        return title[: cuts[-1].start()].strip()
    if _same(first) in sites and title[cuts[0].end() :].strip():
        return title[cuts[0].end() :].strip()
    return title


def _same(text: str) -> str:
    return _SPACE.sub(" ", text).strip().rstrip("¶#").strip().casefold()


def nesting_depth(page: str, stop: int) -> int:
    """How deep the page's tags nest, counted from its start and end tags (at most ``stop``)."""
    depth = deepest = 0
    for match in _TAG.finditer(page):
        if match.group(1):
            depth = max(0, depth - 1)
        elif match.group(2).lower() not in _VOID:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest >= stop:
                    break
    return deepest


def _walk_tree(writer: _Writer, page: str) -> bool:
    """Feed ``writer`` the events of lexbor's tree of ``page``; False when lexbor is missing, or
    when the page nests too deep for it (lexbor's parsing time grows with the square of the
    depth: 20,000 nested elements take a second, 100,000 over a minute)."""
    try:
        from selectolax.lexbor import LexborHTMLParser
    except ImportError:
        return False
    if nesting_depth(page, MAX_TREE_DEPTH) >= MAX_TREE_DEPTH:
        return False
    node = LexborHTMLParser(page).root
    depth = 0  # below the root: climbing back to 0 ends the walk
    while node is not None:
        tag = node.tag
        if tag == "-text":
            writer.handle_data(node.text_content or "")
        elif not tag.startswith(("-", "!", "#")):  # comments, the doctype
            writer.handle_starttag(tag, list(node.attributes.items()))
            child = node.child if tag not in _VOID else None
            if child is not None:
                node, depth = child, depth + 1
                continue
            if tag not in _VOID:
                writer.handle_endtag(tag)
        # Next: the sibling, else the closest ancestor's sibling, closing the ancestors passed.
        while node is not None:
            sibling = node.next if depth else None
            if sibling is not None:
                node = sibling
                break
            node = node.parent if depth else None
            depth -= 1
            if node is not None:
                writer.handle_endtag(node.tag)
    return True


class _Writer(HTMLParser):
    def __init__(self, main_only: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[tuple[str, str]] = []  # (kind, text); items and rows join without a gap
        self.inline: list[str] = []
        self.title = ""
        self.first_h1 = ""
        self.meta: dict[str, str] = {}  # og_title, site_name, generator: the first of each
        self._in_title = False
        self._title_done = False
        self._skip: tuple[str, int] | None = None  # (tag, nesting) of the region being left out
        self._main: tuple[str, int] | None = None  # (tag, nesting) of the main content, when inside
        self._main_only = main_only
        self._heading = 0
        self._pre: list[str] | None = None
        self._lists = 0
        self._item = False
        self._cells: list[str] | None = None
        # Lists and tables of nothing but links (tables of contents, indexes: _drop_link_lists).
        self._links = 0  # <a href> elements open
        self._anchors: list[bool] = []  # the open <a> elements: a link (href) or not
        self._linked = self._plain = 0  # characters of the item or row being read, in links or not
        self._link_only: set[int] = set()  # blocks (items, rows) that are one link or a few
        self._link_lists: set[int] = set()  # blocks of the lists and tables left out
        self._list_start = self._table_start = self._dl_start = 0
        self._tables = self._dls = 0

    # -- parser events -----------------------------------------------------------------------

    def page_title(self) -> str:
        """The title, by the rule of the module's docstring."""
        og_title = self.meta.get("og_title", "")
        if self.title:
            return page_title(self.title, (og_title, self.first_h1), (self.meta.get("site_name", ""),))
        return og_title or self.first_h1

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            # The page's <title> is the first one, in the <head> or loose (not an <svg>'s).
            self._in_title = not self._title_done and (self._skip is None or self._skip[0] == "head")
        elif tag == "meta":
            self._meta(attrs)
        if self._skip is not None:
            if tag == self._skip[0] and tag not in _VOID:
                self._skip = (tag, self._skip[1] + 1)
            return
        attributes = dict(attrs)
        classes = set((attributes.get("class") or "").split())
        footnote = tag == "aside" and any(c.startswith("footnote") for c in classes)  # Sphinx: text
        skipped = (tag in _SKIPPED and not footnote) or attributes.get("role") in _SKIPPED_ROLES
        if skipped or classes & _SKIPPED_CLASSES or self._navigation(tag, classes):
            if tag not in _VOID:
                self._skip = (tag, 1)
            return
        if self._main is not None:
            if tag == self._main[0]:
                self._main = (tag, self._main[1] + 1)
        elif self._main_only and (tag == "main" or attributes.get("role") == "main"):
            self._main = (tag, 1)
        if not self._keeping():
            return
        self._start(tag)
        if tag == "a":
            # Only a link is one: DocBook's anchors (<a id=.../>) wrap the text after them.
            self._anchors.append("href" in attributes)
            self._links += "href" in attributes

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._skip is None and self._keeping() and tag == "br":
            self.inline.append(_BREAK)

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self._in_title:
            self._in_title = False
            self._title_done = True
        if self._skip is not None:
            if tag == self._skip[0]:
                depth = self._skip[1] - 1
                self._skip = (tag, depth) if depth else None
            return
        if self._keeping():
            self._end(tag)
        if self._main is not None and tag == self._main[0]:
            depth = self._main[1] - 1
            self._main = (tag, depth) if depth else None

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = (self.title + " " + _SPACE.sub(" ", data)).strip()
            return
        if self._skip is not None or not self._keeping():
            return
        if self._pre is not None:
            self._pre.append(data)
        else:
            self.inline.append(data)
            if data.isspace():
                pass
            elif self._links:
                self._linked += len(data)
            else:
                self._plain += len(data)

    def _navigation(self, tag: str, classes: set[str]) -> bool:
        if tag == "div" and classes & _SKIPPED_DIV_CLASSES:
            return True
        # texinfo 6.8 puts its "[ < ] [ Up ] [ > ]" bar in a <table class="header">, 6.x's
        # "Next: ..., Up: ..." in a <div class="header">.
        return (
            tag in ("div", "table")
            and "header" in classes
            and self.meta.get("generator", "").lower().startswith(_MAKEINFO)
        )

    def _meta(self, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        key = _META_NAMES.get((attributes.get("property") or attributes.get("name") or "").lower())
        content = _SPACE.sub(" ", attributes.get("content") or "").strip()
        if key and content and key not in self.meta:
            self.meta[key] = content

    # -- structure ---------------------------------------------------------------------------

    def _keeping(self) -> bool:
        return not self._main_only or self._main is not None

    def _start(self, tag: str) -> None:
        if tag in _HEADINGS:
            self._flush()
            self._heading = _HEADINGS[tag]
        elif tag == "pre":
            self._flush()
            self._pre = []
        elif tag in ("ul", "ol"):
            self._flush()
            if not self._lists:
                self._list_start = len(self.blocks)
            self._lists += 1
        elif tag == "li":
            self._flush()
            self._item = True
        elif tag == "tr":
            self._flush()
            self._cells = []
            self._linked = self._plain = 0
        elif tag in ("td", "th"):
            self._cell()
        elif tag == "br":
            self.inline.append(_BREAK)
        elif tag in _BLOCKS:
            self._flush()
        if tag == "table":
            if not self._tables:
                self._table_start = len(self.blocks)
            self._tables += 1
        elif tag == "dl":  # DocBook's tables of contents
            if not self._dls:
                self._dl_start = len(self.blocks)
            self._dls += 1

    def _end(self, tag: str) -> None:
        if tag in _HEADINGS and self._heading:
            text = _SPACE.sub(" ", "".join(self.inline)).strip().rstrip("¶#").strip()
            self.inline = []
            self._linked = self._plain = 0
            if text:
                self.blocks.append(("heading", "#" * self._heading + " " + text))
                if self._heading == 1 and not self.first_h1:
                    self.first_h1 = text
            self._heading = 0
        elif tag == "pre" and self._pre is not None:
            code = "".join(self._pre).strip("\n")
            self._pre = None
            if code.strip():
                self.blocks.append(("code", "```\n" + code + "\n```"))
        elif tag in ("ul", "ol"):
            self._flush()
            self._lists = max(0, self._lists - 1)
            if not self._lists:
                self._drop_link_lists(self._list_start)
        elif tag == "li":
            self._flush()
        elif tag in ("tr", "table") and self._cells is not None:  # a row whose </tr> was left out
            self._cell()
            cells, self._cells = self._cells, None
            if any(cells):
                if self._is_link_only():
                    self._link_only.add(len(self.blocks))
                self.blocks.append(("row", "| " + " | ".join(cells) + " |"))
        elif tag == "a" and self._anchors:
            self._links -= self._anchors.pop()
        elif tag in _BLOCKS:
            self._flush()
        if tag == "table" and self._tables:
            self._tables -= 1
            if not self._tables:
                self._drop_link_lists(self._table_start)
        elif tag == "dl" and self._dls:
            self._dls -= 1
            if not self._dls:
                self._drop_link_lists(self._dl_start)

    def _drop_link_lists(self, start: int) -> None:
        """Leave out the list or table that began at block ``start`` when it is a table of
        contents or an index: at least MIN_LINK_LIST items or rows, nearly all (LINK_LIST_SHARE)
        nothing but links (an index's header and letter rows are not)."""
        found = range(start, len(self.blocks))
        links = sum(1 for n in found if n in self._link_only)
        if links >= MIN_LINK_LIST and links >= LINK_LIST_SHARE * len(found):
            self._link_lists.update(found)

    def _is_link_only(self) -> bool:
        """Whether the item or row just read is links, a separator (":", ",") aside."""
        only = self._linked > 0 and self._plain <= max(2, self._linked // 10)
        self._linked = self._plain = 0
        return only

    def _cell(self) -> None:
        if self._cells is None:
            return
        text = _SPACE.sub(" ", "".join(self.inline)).strip()
        self.inline = []
        if text or self._cells:
            self._cells.append(text.replace("|", "\\|"))

    def _flush(self) -> None:
        if self._cells is not None:
            return  # a block inside a table cell stays in the cell
        raw = "".join(self.inline)
        self.inline = []
        lines = [_SPACE.sub(" ", line).strip() for line in raw.split(_BREAK)]
        text = "\n".join(line for line in lines if line)
        if not text:
            return
        kind = "paragraph"
        if self._is_link_only():
            self._link_only.add(len(self.blocks))
        if self._item:
            text = "  " * max(0, self._lists - 1) + "- " + text
            self._item = False
            kind = "item"
        self.blocks.append((kind, text))

    def text(self) -> str:
        self._flush()
        out: list[str] = []
        previous = ""
        # Also on a page that is nothing but an index or a table of contents: it is found by its
        # title, and its entries would rank it for every word of the manual (evals/RESULTS-formats.md).
        blocks = [b for n, b in enumerate(self.blocks) if n not in self._link_lists]
        for kind, text in blocks:
            if out:
                out.append("\n" if kind == previous and kind in ("item", "row") else "\n\n")
            out.append(text)
            previous = kind
        return "".join(out) + ("\n" if out else "")
