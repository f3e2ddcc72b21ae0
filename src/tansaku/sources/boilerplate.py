"""Blocks a site repeats on its pages (menus, banners, breadcrumbs, footers, "report a bug"
boxes), found by comparing a collection's HTML pages with each other and left out of their text.

Generators' own navigation is dropped while a page is read (``formats/html.py``); what is left
is the site's template, which no markup names: Apache's manual starts every page with
"Modules | Directives | FAQ | Glossary | Sitemap | Report a bug", its version line and a
breadcrumb, and ends it with a copyright; texi2any ends chapters with "This document was
generated on ... using texi2any". Such blocks put the same words in hundreds of documents and
become the snippets of pages they say nothing about.

A page's text (as the HTML reader writes it) is cut into blocks: a heading, a paragraph, a list
item, a table row, a code block. A block is **repeated** when the same text (spacing aside) is
a block of at least :data:`MIN_PAGES` distinct pages and of at least :data:`MIN_SHARE` of the
distinct pages below one folder of the page (the collection's root, or any folder between it
and the page): a template is shared by the pages of one site, one manual or one language, while
a collection may hold many. Copies of one page (the same text at two paths) count once, so
a page copied five times is not its own template.

A repeated block is left out of a page when it is where a template puts it:

- at the start or the end of the page: the repeated blocks before the first block of the page's
  own (its unique headings are passed over, so a language bar under the title still goes),
  and those after its last;
- or inside the page, in a run of at least :data:`MIN_RUN` repeated blocks under one heading
  (a sidebar's list).

A repeated block alone inside the page stays: "Note", "| Tip |", a table's header row, "New in
version 2.1." are the page's own words that happen to recur. Code blocks always stay, and a
repeated heading goes only with its whole section. A page whose every block would go is
left whole.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

MIN_PAGES = 5
MIN_SHARE = 0.15
MIN_RUN = 3
EDGE = 3
MAX_KEY_CHARS = 1000  # a longer block is the page's own text
_FENCE = "```"


@dataclass(frozen=True)
class Block:
    kind: str  # heading, paragraph, item, row, code
    lines: tuple[str, ...]
    blank_before: bool  # a blank line separated it from the block before
    # Its text, spacing aside; "" for code and for a block too long to be a template's.
    key: str

    @property
    def level(self) -> int:
        return len(self.lines[0]) - len(self.lines[0].lstrip("#"))


def blocks(text: str) -> list[Block]:
    """The text's blocks, in order; ``join(blocks(text))`` gives the text back (trailing spaces
    and extra blank lines aside)."""
    found: list[Block] = []
    lines = text.split("\n")
    i, blank = 0, False
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            blank, i = True, i + 1
            continue
        if line.startswith(_FENCE):
            end = i + 1
            while end < len(lines) and not lines[end].startswith(_FENCE):
                end += 1
            end += 1
            kind = "code"
        else:
            # The reader separates blocks by a blank line, but list items and table rows by a
            # line break: a block runs to a blank line, an item or a row also to the next one.
            kind = _kind(line)
            end = i + 1
            while end < len(lines) and lines[end].strip():
                if kind in ("item", "row") and _kind(lines[end]) in ("item", "row"):
                    break
                end += 1
        found.append(Block(kind, tuple(lines[i:end]), blank, _key(kind, lines[i:end])))
        i = end
        blank = False
    return found


def _key(kind: str, lines: list[str]) -> str:
    if kind == "code" or sum(map(len, lines)) > MAX_KEY_CHARS:
        return ""
    return " ".join(" ".join(lines).split())


def _kind(line: str) -> str:
    if line.startswith("#"):
        return "heading"
    if line.startswith("| "):
        return "row"
    return "item" if line.lstrip().startswith("- ") else "paragraph"


def join(kept: list[Block]) -> str:
    out: list[str] = []
    for block in kept:
        if out:
            out.append("\n\n" if block.blank_before else "\n")
        out.append("\n".join(block.lines))
    return "".join(out) + ("\n" if out else "")


class RepeatedBlocks:
    """The repeated blocks of a set of pages (path -> text), by the rule of the module's
    docstring; :meth:`strip` leaves them out of one page."""

    def __init__(self, pages: Mapping[str, str], same_page: Callable[[str], str] | None = None) -> None:
        """``same_page``: a path -> the name shared by the versions of one page at several paths
        (its translations: ``en/intro.html``, ``fr/intro.html``); each page votes once."""
        # One vote per distinct text: copies of a page are one page.
        distinct: dict[str, str] = {}
        for path in sorted(pages):
            distinct.setdefault(pages[path], path)
        # A page's versions vote once: a paragraph left untranslated in its six translations is
        # the page's own text, not a template.
        voters: dict[str, dict[str, _Votes]] = defaultdict(lambda: defaultdict(_Votes))
        for text, path in distinct.items():
            votes = _Votes.of(text)
            voter = same_page(path) if same_page is not None else path
            for folder in _folders(path):
                voters[voter][folder].add(votes)
        # Most blocks are on one page only: counting them by folder would be wasted work.
        overall = Counter(key for folders in voters.values() for key in folders[""].keys)
        candidates = {key for key, count in overall.items() if count >= MIN_PAGES}
        pages_below: Counter[str] = Counter()
        counts: dict[str, Counter[str]] = defaultdict(Counter)  # folder -> key -> pages
        at_edges: dict[str, Counter[str]] = defaultdict(Counter)  # ... on which it is at an end
        for folders in voters.values():
            for folder, votes in folders.items():
                pages_below[folder] += 1
                counts[folder].update(votes.keys & candidates)
                at_edges[folder].update(votes.edges & candidates)
        self._repeated: dict[str, frozenset[str]] = {}  # folder -> its repeated keys
        self._edges: dict[str, frozenset[str]] = {}  # folder -> those a template puts at an end
        self._by_folder: dict[str, tuple[frozenset[str], frozenset[str]]] = {}  # repeated_in's
        for folder, below in pages_below.items():
            need = max(MIN_PAGES, MIN_SHARE * below)
            repeated = frozenset(k for k, n in counts[folder].items() if n >= need)
            self._repeated[folder] = repeated
            self._edges[folder] = frozenset(
                k for k in repeated if at_edges[folder][k] * 2 >= counts[folder][k]
            )

    def repeated_in(self, path: str) -> tuple[frozenset[str], frozenset[str]]:
        """The keys repeated in any folder that holds ``path``, and those of them that the pages
        mostly have at their start or end."""
        folder = path.rpartition("/")[0]
        if folder not in self._by_folder:
            repeated: frozenset[str] = frozenset()
            edges: frozenset[str] = frozenset()
            for above in _folders(path):
                repeated |= self._repeated.get(above, frozenset())
                edges |= self._edges.get(above, frozenset())
            self._by_folder[folder] = (repeated, edges)
        return self._by_folder[folder]

    def strip(self, path: str, text: str) -> tuple[str, int]:
        """``text`` without its template blocks, and how many blocks were left out."""
        repeated, edges = self.repeated_in(path)
        if not repeated:
            return text, 0
        parts = blocks(text)
        gone = _template(parts, repeated, edges)
        if not gone or len(gone) == len(parts):
            return text, 0
        return join([b for n, b in enumerate(parts) if n not in gone]), len(gone)


def strip_repeated(pages: Mapping[str, str], same_page: Callable[[str], str] | None = None) -> dict[str, str]:
    """Every page's text without the blocks the pages repeat (path -> text)."""
    found = RepeatedBlocks(pages, same_page)
    return {path: found.strip(path, text)[0] for path, text in pages.items()}


@dataclass
class _Votes:
    """A page's blocks (their keys), and those among its first and last :data:`EDGE` blocks."""

    keys: set[str] = field(default_factory=set)
    edges: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, text: str) -> _Votes:
        keys = [block.key for block in blocks(text) if block.key]
        return cls(set(keys), set(keys[:EDGE]) | set(keys[-EDGE:]))

    def add(self, other: _Votes) -> None:
        self.keys |= other.keys
        self.edges |= other.edges


def _folders(path: str) -> list[str]:
    """The folders holding ``path``, from the root (``""``) down to its own."""
    parts = path.split("/")[:-1]
    return [""] + ["/".join(parts[: n + 1]) for n in range(len(parts))]


def _template(parts: list[Block], repeated: frozenset[str], edges: frozenset[str]) -> set[int]:
    """The positions of the blocks to leave out."""
    is_repeated = [bool(b.key) and b.key in repeated for b in parts]
    gone: set[int] = set()
    # The start and the end: repeated blocks up to the page's first (from its last) own block
    # that is not a heading.
    for order in (range(len(parts)), range(len(parts) - 1, -1, -1)):
        for n in order:
            if is_repeated[n] and parts[n].key in edges:
                if parts[n].kind != "heading":
                    gone.add(n)
            elif parts[n].kind != "heading":
                break
    # Inside: runs of at least MIN_RUN repeated blocks within one section (a heading ends a run).
    n = 0
    while n < len(parts):
        end = n
        while end < len(parts) and is_repeated[end] and parts[end].kind != "heading":
            end += 1
        if end - n >= MIN_RUN:
            gone.update(range(n, end))
        n = end + 1
    # A repeated heading goes with its section: when nothing of its own is left under it.
    for n in range(len(parts) - 1, -1, -1):  # from the end, so emptied sections nest
        block = parts[n]
        if block.kind == "heading" and is_repeated[n] and n not in gone:
            following = next((k for k in range(n + 1, len(parts)) if k not in gone), None)
            if following is None or (
                parts[following].kind == "heading" and parts[following].level <= block.level
            ):
                gone.add(n)
    return gone
