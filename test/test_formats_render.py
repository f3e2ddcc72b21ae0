"""Snapshots of what document formats add to the output: a PDF hit's page in every search format,
and an update's skip reasons and partial-document warning in its formats."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tansaku.render import ADMIN_FORMATS, FORMATS, render
from tansaku.types import CollectionUpdate, Hit, Notice, SearchResult, SkippedFile, Snippet, UpdateReport

PDF_HIT = Hit(
    "184d68", 0.5, "docs", "guide.pdf", "tansaku://docs/guide.pdf", "/home/me/docs/guide.pdf",
    "Field Guide to Tide Pools", (), Snippet(21, ("tide_table --port harbour --days 3",)), False, 2, 2,
    page=3,
)  # fmt: skip
TEXT_HIT = replace(PDF_HIT, docid="aa11bb", path="notes.md", virtual_path="tansaku://docs/notes.md",
                   disk_path="/home/me/docs/notes.md", title="Notes", page=None)  # fmt: skip
SEARCH = SearchResult("harbour days", "keyword", (PDF_HIT, TEXT_HIT), total=2, limit=5, collections=("docs",))
UPDATE = UpdateReport(
    False,
    [
        CollectionUpdate(
            "docs",
            added=["guide.pdf", "page.html"],
            skipped=[
                SkippedFile("bomb.docx", "zip-bomb (word/document.xml inflates past 64 MiB; stopped there)"),
                SkippedFile("encrypted.pdf", "encrypted (the PDF needs a password to open)"),
                SkippedFile("scan.pdf", "no-text-layer (no text on its one page: OCR is not done)"),
            ],
            warnings=[Notice("PARTIAL_DOCUMENT", "big.pdf: indexed the first 2000 of 2400 pages")],
        )
    ],
    3.0,
)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_pdf_hit_says_its_page(fmt: str, snapshot) -> None:
    out = render(SEARCH, fmt)
    assert out == snapshot
    if fmt == "json":
        pages = [hit.get("page") for hit in json.loads(out)["results"]]
        assert pages == [3, None]  # only a hit in a paged document has the field
    if fmt in ("cli", "md", "xml"):
        assert "3" in out.split("notes.md")[0] and "page" in out


@pytest.mark.parametrize("fmt", ADMIN_FORMATS)
def test_update_reports_each_bad_file_and_partial_document(fmt: str, snapshot) -> None:
    out = render(UPDATE, fmt)
    assert out == snapshot
    for code in ("zip-bomb", "encrypted", "no-text-layer", "PARTIAL_DOCUMENT"):
        assert code in out
