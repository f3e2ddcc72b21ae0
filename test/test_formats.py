"""Text, headings, titles and pages out of real PDF, HTML, DOCX and EPUB files (fixtures/formats/,
made by pandoc, headless Chromium and qpdf: see fixtures/formats/make.sh), and each bad file's
reason."""

from __future__ import annotations

import io
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from tansaku.chunking import ChunkParams, chunk_text, headings
from tansaku.sources import formats
from tansaku.sources.formats import ExtractionFailed, Limits, extract

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
TITLE = "Field Guide to Tide Pools"
SECTIONS = ["Anemones", "Feeding", "Crabs", "Moulting", "Safety"]


def read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.mark.parametrize("name", ["guide.docx", "guide.epub", "guide-epub2.epub"])
def test_word_and_epub_keep_text_headings_and_title(name: str) -> None:
    got = extract(formats.format_of(name) or "", read(name), 1_000_000)
    assert got.title == TITLE
    found = [h.title for h in headings(got.text, name)]
    assert found == [TITLE, *SECTIONS]
    levels = {h.title: h.level for h in headings(got.text, name)}
    assert levels["Feeding"] == levels["Moulting"] == 2 and levels["Crabs"] == 1
    assert "- small crabs and shrimp" in got.text
    assert "| velvet swimming crab | 8 cm |" in got.text
    assert got.pages == () and got.notices == ()


def test_html_keeps_the_main_content_only() -> None:
    got = extract("html", read("page.html"), 1_000_000)
    assert got.title == "Rock pooling etiquette"  # <title> without the site name (the <h1> says which)
    assert [h.title for h in headings(got.text, "page.html")] == [
        "Rock pooling etiquette",
        "What to bring",
        "Checking the tides",
    ]
    for left_out in ("trackingPixel", "hidden-style-words", "Events calendar", "Sidebar", "Footer", "¶"):
        assert left_out not in got.text
    assert "- a hand lens\n  - 10x magnification is plenty" in got.text
    assert "Low spring tides expose the richest pools.\nArrive an hour" in got.text
    assert "```\ntide_table --port harbour --days 3\n# prints times in local time\n```" in got.text
    assert "| North ledge | May |" in got.text
    assert "Fish & chips afterwards are traditional — not compulsory." in got.text


def test_html_heading_paths_reach_the_chunks() -> None:
    text = extract("html", read("page.html"), 1_000_000).text
    chunks = chunk_text(
        text, "page.html", ChunkParams(max_tokens=40, overlap_tokens=0, window_tokens=40)
    ).chunks
    by_text = {c.heading_path for c in chunks if "North ledge" in c.text}
    assert by_text == {("Rock pooling etiquette", "Checking the tides")}


def test_pdf_text_pages_headings_and_title() -> None:
    pytest.importorskip("pypdfium2")
    got = extract("pdf", read("guide.pdf"), 1_000_000)
    assert got.title == TITLE  # the document's Title property (Chromium takes it from <title>)
    lines = got.text.split("\n")
    assert len(got.pages) == 3
    # Each top-level section was printed on a page of its own (source/print.css).
    assert [lines[start - 1] for start in got.pages] == [f"# {TITLE}", "# Crabs", "# Safety"]
    # The headings are the PDF's outline (bookmarks), found on the pages they point to.
    found = [(h.level, h.title) for h in headings(got.text, "guide.pdf")]
    assert found == [
        (1, TITLE),
        (1, "Anemones"),
        (2, "Feeding"),
        (1, "Crabs"),
        (2, "Moulting"),
        (1, "Safety"),
    ]
    assert "velvet swimming crab 8 cm" in got.text
    assert got.notices == ()


def test_pdf_without_a_title_property_is_titled_by_its_first_line() -> None:
    pdfium = pytest.importorskip("pypdfium2")
    copy = pdfium.PdfDocument.new()  # the guide's pages without its properties or outline
    copy.import_pages(pdfium.PdfDocument(read("guide.pdf")))
    out = io.BytesIO()
    copy.save(out)
    got = extract("pdf", out.getvalue(), 1_000_000)
    assert got.title == TITLE and not got.text.startswith("#")


def test_pdf_with_only_an_owner_password_is_read() -> None:
    pytest.importorskip("pypdfium2")
    got = extract("pdf", read("owner-password.pdf"), 1_000_000)
    assert got.title == TITLE and len(got.pages) == 3 and "velvet swimming crab" in got.text


def test_pdf_past_the_page_limit_is_cut_and_says_so() -> None:
    pytest.importorskip("pypdfium2")
    from tansaku.sources.formats import pdf

    got = pdf.extract(read("guide.pdf"), replace(Limits.current(), pdf_pages=2))
    assert len(got.pages) == 2
    assert "Safety" not in got.text and "# Crabs" in got.text
    assert got.notices == ("indexed the first 2 of 3 pages (the page limit per PDF)",)


def test_pdf_past_the_time_limit_is_cut_and_says_so() -> None:
    pytest.importorskip("pypdfium2")
    from tansaku.sources.formats import pdf

    got = pdf.extract(read("guide.pdf"), replace(Limits.current(), pdf_seconds=1e-9))
    assert len(got.pages) == 1 and "Anemones" in got.text and "Crabs" not in got.text
    assert got.notices == (
        "indexed the first 1 of 3 pages: reading stopped after 1e-09 s (the time limit per PDF)",
    )


def test_text_past_the_size_limit_is_cut_at_a_line() -> None:
    got = extract("docx", read("guide.docx"), 200)
    assert len(got.text) <= 200 and got.text.endswith("\n")
    assert got.notices and got.notices[0].startswith("text cut at")


@pytest.mark.parametrize(
    ("name", "code", "words"),
    [
        ("bad/encrypted.pdf", "encrypted", "needs a password"),
        ("bad/image-only.pdf", "no-text-layer", "OCR is not done"),
        ("bad/truncated.pdf", "corrupt", "PDFium cannot open it"),
        ("bad/truncated.docx", "corrupt", "not a readable DOCX archive"),
        ("bad/bomb.docx", "zip-bomb", "inflates past 64 MiB"),
    ],
)
def test_bad_files_give_their_own_reason(name: str, code: str, words: str) -> None:
    if name.endswith(".pdf"):
        pytest.importorskip("pypdfium2")
    with pytest.raises(ExtractionFailed) as caught:
        extract(formats.format_of(name) or "", read(name), 1_000_000)
    assert caught.value.code == code
    assert words in caught.value.reason and caught.value.reason.startswith(code + " (")


def test_zip_bomb_reading_stops_at_the_budget() -> None:
    """The bomb inflates to 64 MiB; with a 1 MiB budget reading stops after about 1 MiB."""
    from tansaku.sources.formats.archive import Archive

    archive = Archive(read("bad/bomb.docx"), "DOCX", budget=1024 * 1024)
    with pytest.raises(ExtractionFailed, match="zip-bomb"):
        archive.read("word/document.xml")
    assert -64 * 1024 <= archive.left < 0


def test_epub_with_an_unreadable_container_is_corrupt() -> None:
    with pytest.raises(ExtractionFailed) as caught:
        extract("epub", read("guide.docx"), 1_000_000)  # a zip, but no EPUB inside
    assert caught.value.code == "corrupt" and "META-INF/container.xml" in caught.value.reason


def test_missing_extra_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # as if the docs extra were not installed
    with pytest.raises(ExtractionFailed) as caught:
        extract("pdf", read("guide.pdf"), 1_000_000)
    assert caught.value.code == "extra-missing" and not caught.value.cacheable
    assert "pip install 'tansaku[docs]'" in caught.value.reason


@pytest.mark.parametrize(
    ("path", "fmt"),
    [("a/b.PDF", "pdf"), ("x.htm", "html"), ("x.xhtml", "html"), ("r.docx", "docx"), ("b.epub", "epub"),
     ("n.md", None), ("doc", None)],
)  # fmt: skip
def test_format_of(path: str, fmt: str | None) -> None:
    assert formats.format_of(path) == fmt


def test_html_in_a_declared_charset_is_decoded() -> None:
    head = '<html><head><meta charset="iso-8859-1"><title>Caf\xe9</title></head>'
    page = head + "<body><p>cr\xe8me br\xfbl\xe9e</p>"
    got = extract("html", page.encode("latin-1"), 1_000_000)
    assert got.title == "Café" and got.text == "crème brûlée\n"


def test_deeply_nested_html_costs_no_recursion() -> None:
    page = "<div>" * 100_000 + "<h2>Deep</h2><p>still read</p>" + "</div>" * 100_000
    got = extract("html", page.encode(), 1_000_000)
    assert got.text == "## Deep\n\nstill read\n"


def test_an_unclosed_script_or_nav_leaves_the_rest_out_not_the_update() -> None:
    got = extract("html", b"<h1>Top</h1><p>kept</p><nav><p>menu", 1_000_000)
    assert got.text == "# Top\n\nkept\n" and got.title == "Top"


@pytest.mark.parametrize(
    ("title", "names", "sites", "expected"),
    [
        ("pathlib — Object-oriented filesystem paths — Python 3.11 documentation",
         ("", "pathlib — Object-oriented filesystem paths"), (),
         "pathlib — Object-oriented filesystem paths"),
        ("3.12.1. Foo — Python 3.12 documentation", ("", "3.12.1. Foo¶"), (), "3.12.1. Foo"),
        ("PostgreSQL: Documentation: 15: CREATE INDEX", ("", "CREATE INDEX"), (), "CREATE INDEX"),
        ("Harbour News | Tide tables", ("tide tables", "Harbour News"), (), "Tide tables"),  # og:title first
        ("CREATE INDEX", ("", "1. Syntax"), (), "CREATE INDEX"),  # SQLite: the <h1> is a section's
        ("Notes - Ana's blog", ("", ""), ("Ana's Blog",), "Notes"),  # og:site_name, at the end
        ("Ana's blog: Notes", ("", "Something else"), ("Ana's blog",), "Notes"),  # or at the start
        ("Cooking: a primer - Part 2", ("", "Recipes"), (), "Cooking: a primer - Part 2"),  # kept whole
        ("Ana's blog", ("", ""), ("Ana's blog",), "Ana's blog"),  # nothing else to keep
    ],
)  # fmt: skip
def test_the_title_is_the_part_of_title_that_names_the_page(
    title: str, names: tuple[str, ...], sites: tuple[str, ...], expected: str
) -> None:
    from tansaku.sources.formats import html

    assert html.page_title(title, names, sites) == expected


def _page(head: str, body: str) -> bytes:
    return f"<!DOCTYPE html><html><head>{head}</head><body>{body}</body></html>".encode()


TITLE_CASES = [
    (_page("<title>CREATE INDEX</title>", "<h1><span>1. </span>Syntax</h1><p>x</p>"), "CREATE INDEX"),
    (_page("<title>Tides — Harbour Naturalists</title>", "<h1>Tides</h1>"), "Tides"),
    (_page('<meta property="og:site_name" content="Harbour Naturalists"><title>Harbour Naturalists'
           ' | Tides and moons</title>', "<h1>Welcome</h1>"), "Tides and moons"),
    (_page('<meta property="og:title" content="Tides and moons">', "<h1>1. Overview</h1>"),
     "Tides and moons"),
    (_page("", "<h1>Tides</h1><h1>Moons</h1>"), "Tides"),  # no <title>, no og:title: the first <h1>
    (_page("", "<p>x</p><svg><title>a drawing</title></svg>"), ""),  # an <svg>'s is not the page's
    (_page("<title>Tides</title><title>Moons</title>", "<p>x</p>"), "Tides"),
    (_page("", "<p>x</p>"), ""),
]  # fmt: skip


@pytest.mark.parametrize("tree", [True, False], ids=["lexbor", "stdlib"])
@pytest.mark.parametrize(("page", "title"), TITLE_CASES)
def test_the_title_comes_from_title_then_og_title_then_the_first_h1(
    page: bytes, title: str, tree: bool
) -> None:
    from tansaku.sources.formats import html

    if tree:
        pytest.importorskip("selectolax")
    assert html.to_markdown(html.decode(page), tree=tree).title == title


# Navigation as documentation generators write it (the pages of Debian's postgresql-doc-15,
# debmake-doc, bash-doc, sqlite3-doc and zsh-doc (texinfo 6.8's table.header), cut short).
NAVIGATION = _page(
    '<meta name="Generator" content="makeinfo"><title>CREATE INDEX</title>',
    """<div class=nosearch><div class="tagline">Small. Fast. Reliable.<br>Choose any three.</div>
<div class="menu mainmenu"><ul><li><a href="index.html">Home</a><li><a href="about.html">About</a></ul></div>
<div class="fancy_title">CREATE INDEX</div></div>
<div class="navheader"><table summary="Navigation header"><tr><th colspan="5">CREATE INDEX</th></tr>
<tr><td><a accesskey="p" href="a.html">Prev</a></td><td><a accesskey="u" href="b.html">Up</a></td>
<th>SQL Commands</th><td><a accesskey="h" href="index.html">Home</a></td>
<td><a accesskey="n" href="c.html">Next</a></td></tr></table><hr></div>
<div class="header"><p>Next: <a href="#Intro" accesskey="n">Introduction</a>,
Up: <a href="#Top">Top</a></p></div>
<div class="nav-panel"><p>Previous: <a href="#Top">Top</a></p></div>
<table class="header" cellpadding="1" border="0"><tr><td>[<a href="#a"> &lt; </a>]</td>
<td>[<a href="#b"> Up </a>]</td><td>[<a href="#c"> &gt; </a>]</td></tr></table>
<h1 class="header">Synopsis</h1><p>CREATE INDEX — define a new index</p>
<div class="navfooter"><hr><table summary="Navigation footer"><tr><td><a href="a.html">Prev</a></td>
<td><a href="index.html">Home</a></td><td><a href="c.html">Next</a></td></tr></table></div>""",
)


@pytest.mark.parametrize("tree", [True, False], ids=["lexbor", "stdlib"])
def test_navigation_marked_by_documentation_generators_is_left_out(tree: bool) -> None:
    from tansaku.sources.formats import html

    if tree:
        pytest.importorskip("selectolax")
    got = html.to_markdown(html.decode(NAVIGATION), tree=tree)
    assert got.text == "# Synopsis\n\nCREATE INDEX — define a new index\n"  # an <h1 class=header> stays
    assert got.title == "CREATE INDEX"
    # A page not made by makeinfo keeps its div.header (a common name: often the page's <h1>).
    page = _page("<title>Tides</title>", '<div class="header"><h1>Tides</h1></div><p>x</p>')
    assert html.to_markdown(html.decode(page), tree=tree).text == "# Tides\n\nx\n"


LINK_LISTS = (
    "<html><body><h1>Expansion</h1>"
    # A table of contents: left out.
    '<ul><li><a href="#a">14.1 History</a><ul><li><a href="#b">14.1.1 Overview</a></li></ul></li>'
    '<li><a href="#c">14.2 Aliases</a></li><li><a href="#d">14.3 Globbing</a></li></ul>'
    "<p>Globbing expands patterns into file names.</p>"
    # Two links: a short list, kept; links with words of their own: kept.
    '<ul><li><a href="#e">see bash</a></li><li><a href="#f">see ksh</a></li></ul>'
    '<ul><li><a href="#g">glob</a>: match names</li><li><a href="#h">qualifier</a>: filter them</li>'
    '<li><a href="#i">flags</a>: change the match</li></ul>'
    # An index: header and letter rows among link rows, left out.
    "<table><tr><th>Index Entry</th><th>Section</th></tr><tr><th>A</th></tr>"
    + "".join(
        f'<tr><td><a href="#{n}">entry {n}</a></td><td><a href="#s">14.{n}</a></td></tr>' for n in range(30)
    )
    + "</table>"
    # DocBook: a table of contents in a <dl>, left out; anchors (<a id/>) are not links.
    '<dl class="toc"><dt><a href="#x">2.1. Basics</a></dt><dd><dl><dt><a href="#y">2.1.1. Setup</a></dt>'
    '</dl></dd><dt><a href="#z">2.2. More</a></dt></dl>'
    '<p><a id="idm1"></a>Pin-Priority 500 is the default.</p>'
    "<table><tr><th>package</th><th>description</th></tr>"
    '<tr><td><a href="p/apt"><code>apt</code></a></td><td>front-end to manage packages</td></tr>'
    '<tr><td><a href="p/dpkg"><code>dpkg</code></a></td><td>low level package manager</td></tr>'
    '<tr><td><a href="p/aptitude">aptitude</a></td><td>full screen console</td></tr></table>'
    "<dl><dt>glob</dt><dd>a pattern</dd><dt>qualifier</dt><dd>a filter</dd>"
    "<dt>flag</dt><dd>a switch</dd></dl>"
    "</body></html>"
)


def test_html_leaves_out_tables_of_contents_and_indexes() -> None:
    text = extract("html", LINK_LISTS.encode(), 1_000_000).text
    for gone in (
        "14.1 History",
        "14.1.1 Overview",
        "14.3 Globbing",
        "entry 7",
        "Index Entry",
        "2.1.1. Setup",
    ):
        assert gone not in text, gone
    for kept in (
        "Globbing expands patterns",
        "- see bash\n- see ksh",
        "- glob: match names",
        "Pin-Priority 500 is the default.",
        "| apt | front-end to manage packages |",
        "glob\n\na pattern",
    ):
        assert kept in text, kept


HTML_CASES = [
    read("page.html").replace(b"<main>", b"<div>").replace(b"</main>", b"</div>"),
    LINK_LISTS,
    b"<h1>Top</h1><p>kept</p><nav><p>menu",
    b"<ul><li>one<li>two</ul><p>a<p>b<table><tr><td>x<td>y</table>",
    "<div>" * 2000 + "<h2>Deep</h2>" + "</div>" * 2000,
    NAVIGATION,
    *(page for page, _ in TITLE_CASES),
]


@pytest.mark.parametrize(
    "page",
    HTML_CASES,
    ids=[
        "page",
        "link-lists",
        "unclosed-nav",
        "implied-ends",
        "nested",
        "navigation",
        *(f"title-{i}" for i in range(len(TITLE_CASES))),
    ],
)
def test_both_html_parsers_give_the_same_text(page: bytes | str, monkeypatch: pytest.MonkeyPatch) -> None:
    """lexbor (the docs extra) when installed, the standard library's parser without it."""
    pytest.importorskip("selectolax")
    from tansaku.sources.formats import html

    raw = page.encode() if isinstance(page, str) else page
    with_lexbor = extract("html", raw, 1_000_000)
    monkeypatch.setitem(sys.modules, "selectolax.lexbor", None)  # as if the extra were missing
    without = extract("html", raw, 1_000_000)
    assert with_lexbor == without
    assert html.to_markdown(html.decode(raw)) == with_lexbor  # (no <main> in these pages)


def test_a_page_nested_too_deep_for_lexbor_goes_to_the_standard_parser() -> None:
    from tansaku.sources.formats import html

    deep = "<div>" * 5000 + "<p>x</p>" + "</div>" * 5000
    assert html.nesting_depth(deep, html.MAX_TREE_DEPTH) == html.MAX_TREE_DEPTH
    assert html.nesting_depth(read("page.html").decode(), html.MAX_TREE_DEPTH) < 10
    assert html.nesting_depth("<p>a<br><img src=x><hr></p>", 50) == 1  # void elements do not nest


def test_a_pdf_whose_streams_together_inflate_past_the_limit_is_refused() -> None:
    from tansaku.sources.formats import pdf

    from .hostile_files import pdf_bomb

    bomb = pdf_bomb(3)
    pdf.check_inflation(bomb, per_stream=4 * 1024 * 1024, in_all=4 * 1024 * 1024)  # under both
    with pytest.raises(ExtractionFailed) as failed:
        pdf.check_inflation(bomb, per_stream=4 * 1024 * 1024, in_all=2 * 1024 * 1024)
    assert failed.value.reason == (
        "decompression-bomb (its streams inflate past 2 MiB (the limit for one PDF); not read)"
    )
    pdf.check_inflation(read("guide.pdf"), per_stream=1024 * 1024, in_all=1024 * 1024)
