"""PDF, HTML, DOCX and EPUB files in a collection: indexed as their text, bad ones reported with
their reason and never fatal, and each file's bytes extracted once (the ``extractions`` table)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlean

from tansaku.sources.formats import extractor_id

CliResult = Any
Cli = Callable[..., CliResult]
FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "formats"
GOOD = ["guide.docx", "guide.epub", "guide.pdf", "page.html"]
BAD = {
    "bomb.docx": "zip-bomb",
    "encrypted.pdf": "encrypted",
    "image-only.pdf": "no-text-layer",
    "truncated.docx": "corrupt",
    "truncated.pdf": "corrupt",
}
MASK = "**/*.{pdf,html,docx,epub}"
SENTINEL = "2000-01-01T00:00:00Z"

pytest.importorskip("pypdfium2")


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in GOOD:
        shutil.copy(FIXTURES / name, folder / name)
    for name in BAD:
        shutil.copy(FIXTURES / "bad" / name, folder / name)
    return folder


def add(cli: Cli, folder: Path, *extra: str, mask: str = MASK) -> dict:
    """`collection add` (which indexes the folder at once); its update report."""
    result = cli("collection", "add", str(folder), "--name", "docs", "--mask", mask, "--json", *extra)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    [collection] = result.json()["collections"]
    return collection


def update(cli: Cli, *args: str) -> dict:
    result = cli("update", "--json", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    [collection] = result.json()["collections"]
    return collection


def extractions(index_path: Path) -> dict[tuple[str, str], tuple]:
    conn = sqlean.connect(str(index_path))
    try:
        rows = conn.execute("SELECT hash, extractor, failure, extracted_at FROM extractions").fetchall()
    finally:
        conn.close()
    return {(r[0], r[1]): (r[2], r[3]) for r in rows}


def stamp(index_path: Path) -> None:
    """Mark every cached extraction: a row extracted again loses the mark."""
    conn = sqlean.connect(str(index_path))
    with conn:
        conn.execute("UPDATE extractions SET extracted_at = ?", (SENTINEL,))
    conn.close()


def codes(report: dict) -> dict[str, str]:
    return {s["path"]: s["reason"].split(" ", 1)[0] for s in report["skipped"]}


def test_documents_are_indexed_and_bad_files_reported(cli: Cli, docs: Path) -> None:
    report = add(cli, docs)
    assert sorted(report["added"]) == GOOD
    assert codes(report) == BAD
    assert all("(" in s["reason"] for s in report["skipped"])  # a code, then the detail in words
    listed = cli("ls", "docs", "--json").json()
    assert sorted(item["virtual_path"] for item in listed) == [f"tansaku://docs/{n}" for n in GOOD]
    again = update(cli)
    assert again["unchanged"] == len(GOOD) and codes(again) == BAD


def test_update_text_summary_names_each_reason(cli: Cli, docs: Path) -> None:
    add(cli, docs)
    docs.joinpath("guide.pdf").unlink()
    shutil.copy(FIXTURES / "bad" / "encrypted.pdf", docs / "guide.pdf")
    text = cli("update").stdout
    assert "skipped guide.pdf: encrypted (the PDF needs a password to open" in text
    assert "skipped image-only.pdf: no-text-layer (no text on its one page" in text
    assert "OCR is not done" in text
    assert "skipped bomb.docx: zip-bomb (word/document.xml inflates past 64 MiB" in text
    assert "skipped truncated.docx: corrupt (" in text


def test_search_and_get_show_the_extracted_text_with_the_files_path(cli: Cli, docs: Path) -> None:
    add(cli, docs)
    hits = cli("search", "velvet swimming crab", "--json").json()
    assert {h["path"] for h in hits["results"]} >= {"guide.docx", "guide.pdf", "guide.epub"}
    got = cli("get", "docs/guide.pdf", "--json").json()
    assert got["disk_path"] == str(docs / "guide.pdf")
    assert got["title"] == "Field Guide to Tide Pools"
    assert "# Crabs" in got["lines"] and "velvet swimming crab 8 cm" in got["lines"]
    page = cli("get", "docs/page.html").stdout
    assert "## Checking the tides" in page and "<p>" not in page and "trackingPixel" not in page


@pytest.mark.sqlite_only("reads and stamps the SQLite file's extractions table")
def test_unchanged_bytes_are_never_extracted_again(cli: Cli, docs: Path, index_path: Path) -> None:
    add(cli, docs)
    first = extractions(index_path)
    assert len(first) == len(GOOD) + len(BAD)
    stamp(index_path)
    # New mtimes, same bytes: every file is read and hashed again, none extracted.
    for path in docs.iterdir():
        os.utime(path, (1_700_000_000, 1_700_000_000))
    report = update(cli)
    assert report["unchanged"] == len(GOOD) and codes(report) == BAD
    assert {v[1] for v in extractions(index_path).values()} == {SENTINEL}
    # Gone and back (the document left the index in between): its text comes from the cache.
    moved = docs.parent / "elsewhere.docx"
    (docs / "guide.docx").rename(moved)
    assert update(cli)["removed"] == ["guide.docx"]
    moved.rename(docs / "guide.docx")
    assert update(cli)["added"] == ["guide.docx"]
    assert {v[1] for v in extractions(index_path).values()} == {SENTINEL}
    assert "velvet swimming crab" in cli("get", "docs/guide.docx").stdout


@pytest.mark.sqlite_only("reads and stamps the SQLite file's extractions table")
def test_changed_bytes_are_extracted_again(cli: Cli, docs: Path, index_path: Path) -> None:
    add(cli, docs)
    stamp(index_path)
    page = docs / "page.html"
    page.write_text(page.read_text().replace("North ledge", "South cove"))
    report = update(cli)
    assert report["updated"] == ["page.html"]
    fresh = [key for key, (_, when) in extractions(index_path).items() if when != SENTINEL]
    assert len(fresh) == 1 and fresh[0][1] == extractor_id("html")
    assert "South cove" in cli("get", "docs/page.html").stdout


def test_dry_run_extracts_but_stores_nothing(cli: Cli, docs: Path, index_path: Path) -> None:
    report = add(cli, docs, "--dry-run")
    assert sorted(report["added"]) == GOOD and codes(report) == BAD
    if index_path.exists():
        assert extractions(index_path) == {}


@pytest.mark.sqlite_only("reads and stamps the SQLite file's extractions table")
def test_missing_extra_is_a_skip_reason_and_tried_again(
    cli: Cli, docs: Path, index_path: Path, without_pdf_extra: Callable[[], None]
) -> None:
    report = add(cli, docs)
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert reasons["guide.pdf"].startswith("extra-missing (reading PDF files needs pypdfium2:")
    assert "pip install 'tansaku[docs]'" in reasons["guide.pdf"]
    assert not [key for key in extractions(index_path) if key[1] == "pdf/1"]  # nothing cached
    without_pdf_extra()
    assert update(cli)["added"] == ["guide.pdf"]


def test_a_pdf_past_the_page_limit_is_indexed_in_part_with_a_warning(
    cli: Cli, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tansaku.sources import formats

    monkeypatch.setattr(formats, "MAX_PDF_PAGES", 2)
    report = add(cli, docs, mask="guide.pdf")
    assert report["added"] == ["guide.pdf"]
    assert report["warnings"] == [
        {
            "code": "PARTIAL_DOCUMENT",
            "message": "guide.pdf: indexed the first 2 of 3 pages (the page limit per PDF)",
        }
    ]
    text = cli("get", "docs/guide.pdf").stdout
    assert "Crabs" in text and "Safety" not in text


def collection_masks(cli: Cli) -> list[str]:
    return cli("collection", "show", "docs", "--json").json()["collection"]["masks"]


def test_formats_add_their_masks_to_the_default(cli: Cli, docs: Path) -> None:
    (docs / "notes.md").write_text("# Notes\n\nLimpets graze on algae.\n")
    report = add_formats(cli, docs, "--formats", "pdf,docx", "--formats", "EPUB")
    assert sorted(report["added"]) == ["guide.docx", "guide.epub", "guide.pdf", "notes.md"]
    assert collection_masks(cli) == ["**/*.md", "**/*.pdf", "**/*.docx", "**/*.epub"]


def test_formats_add_their_masks_to_the_users(cli: Cli, docs: Path) -> None:
    (docs / "notes.md").write_text("# Notes\n")
    report = add_formats(cli, docs, "--mask", "*.txt", "--formats", "html")
    assert report["added"] == ["page.html"]
    assert collection_masks(cli) == ["*.txt", "**/*.html", "**/*.htm"]


def test_an_unknown_format_is_a_usage_error(cli: Cli, docs: Path) -> None:
    result = cli("collection", "add", str(docs), "--formats", "pdf,doc", "--json")
    assert result.exit_code == 2
    assert result.error()["message"] == "unknown format 'doc' in --formats"
    assert "pdf, html, docx, epub" in result.error()["hint"]
    assert cli("collection", "list", "--json").json() == []


def add_formats(cli: Cli, folder: Path, *args: str) -> dict:
    result = cli("collection", "add", str(folder), "--name", "docs", "--json", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    [collection] = result.json()["collections"]
    return collection


@pytest.mark.subprocess
def test_bad_files_never_fail_the_update_process(docs: Path) -> None:
    """The real entry point: bad files are reported on stdout and the update exits 0."""
    import subprocess

    from .conftest import REPO

    env = {**os.environ, "TANSAKU_PYTHON": sys.executable}
    added = subprocess.run(
        [str(REPO / "bin" / "tansaku"), "collection", "add", str(docs), "--formats", "pdf,docx"],
        capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "skipped encrypted.pdf: encrypted (" in added.stdout
    assert "skipped bomb.docx: zip-bomb (" in added.stdout
    assert "Traceback" not in added.stderr


def test_a_hit_in_a_pdf_says_its_page(cli: Cli, docs: Path) -> None:
    add(cli, docs)
    pages = {}
    for query in ("beadlet anemone", "velvet swimming", "incoming tide"):
        hits = cli("search", query, "--json").json()["results"]
        pages[query] = {h["path"]: h.get("page") for h in hits}
    assert pages["beadlet anemone"]["guide.pdf"] == 1
    assert pages["velvet swimming"]["guide.pdf"] == 2
    assert pages["incoming tide"]["guide.pdf"] == 3
    assert pages["incoming tide"]["guide.docx"] is None  # only PDFs have pages
    assert "tansaku://docs/guide.pdf page 3" in cli("search", "incoming tide").stdout


def test_a_vector_hit_in_a_pdf_says_its_page(cli: Cli, docs: Path, model: Path) -> None:
    add(cli, docs, mask="guide.pdf")
    assert cli("embed").exit_code == 0
    [hit] = cli("vsearch", "crabs shedding their shells", "-n", "1", "--json").json()["results"]
    assert hit["path"] == "guide.pdf" and hit["page"] in (1, 2, 3)
    lines = cli("get", "docs/guide.pdf", "--json").json()["lines"]
    firsts = ("# Field Guide to Tide Pools", "# Crabs", "# Safety")
    starts = [i + 1 for i, line in enumerate(lines) if line in firsts]
    assert len(starts) == 3
    expected = sum(1 for start in starts if start <= hit["snippet"]["start_line"])
    assert hit["page"] == expected


def test_get_a_page_of_a_pdf(cli: Cli, docs: Path) -> None:
    add(cli, docs)
    page = cli("get", "docs/guide.pdf:page=2", "--json").json()
    assert page["lines"][0] == "# Crabs" and page["lines"][-1] == "velvet swimming crab 8 cm"
    assert "Safety" not in page["lines"] and "Anemones" not in page["lines"]
    last = cli("get", "docs/guide.pdf:page=3", "--json").json()
    assert last["lines"][0] == "# Safety" and not last["truncated"]
    assert cli("get", "docs/guide.pdf:page=2", "-l", "1", "--json").json()["lines"] == ["# Crabs"]


def test_get_a_page_past_the_end_or_of_a_text_without_pages(cli: Cli, docs: Path) -> None:
    add(cli, docs)
    past = cli("get", "docs/guide.pdf:page=4", "--json")
    assert past.exit_code == 1 and past.error()["code"] == "PAGE_OUT_OF_RANGE"
    assert past.error()["message"] == "tansaku://docs/guide.pdf has 3 pages: there is no page 4"
    none = cli("get", "docs/guide.docx:page=1", "--json")
    assert none.exit_code == 2 and none.error()["message"] == "tansaku://docs/guide.docx has no pages"


def test_a_document_over_its_size_limit_is_skipped(
    cli: Cli, docs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tansaku.sources import formats

    monkeypatch.setattr(formats, "MAX_DOCUMENT_BYTES", 20_000)  # guide.pdf is about 40 KB
    report = add(cli, docs, mask="guide.*")
    reasons = {s["path"]: s["reason"] for s in report["skipped"]}
    assert reasons == {
        "guide.pdf": f"too-large ({(docs / 'guide.pdf').stat().st_size} bytes > limit 20000 for pdf files)"
    }
    assert sorted(report["added"]) == ["guide.docx", "guide.epub"]


def test_a_text_file_with_a_documents_bytes_keeps_its_own_text(cli: Cli, docs: Path) -> None:
    """page.html and a byte-for-byte copy named page.txt: one is extracted, the other is text."""
    shutil.copy(docs / "page.html", docs / "page.txt")
    add(cli, docs, mask="page.*")
    html = cli("get", "docs/page.html", "--json").json()
    text = cli("get", "docs/page.txt", "--json").json()
    assert "<main>" in text["lines"] and "<main>" not in html["lines"]
    assert html["docid"] != text["docid"]


def test_a_2100_page_pdf_is_indexed_up_to_the_page_limit(cli: Cli, tmp_path: Path) -> None:
    """A real 2,100-page PDF (the guide's pages, imported 700 times by PDFium): its first 2,000
    pages are indexed, and the summary says so."""
    import pypdfium2 as pdfium

    folder = tmp_path / "big"
    folder.mkdir()
    guide = pdfium.PdfDocument(str(FIXTURES / "guide.pdf"))
    big = pdfium.PdfDocument.new()
    for _ in range(700):
        big.import_pages(guide)
    big.save(str(folder / "big.pdf"))
    result = cli("collection", "add", str(folder), "--name", "docs", "--formats", "pdf", "--json")
    assert result.exit_code == 0, result.stderr
    [report] = result.json()["collections"]
    assert report["added"] == ["big.pdf"]
    assert report["warnings"] == [
        {
            "code": "PARTIAL_DOCUMENT",
            "message": "big.pdf: indexed the first 2000 of 2100 pages (the page limit per PDF)",
        }
    ]
    past = cli("get", "docs/big.pdf:page=2001", "--json")
    assert past.error()["message"] == "tansaku://docs/big.pdf has 2000 pages: there is no page 2001"
    # Page 2,000 is the guide's second page; imported pages come without the outline (no "#").
    assert cli("get", "docs/big.pdf:page=2000", "--json").json()["lines"][0] == "Crabs"
