"""Files the tests write for themselves (never committed): pages heavy with markup, broken
documents, files over a limit."""

from __future__ import annotations

from pathlib import Path


def marked_up_page(path: Path, paragraphs: int = 100) -> str:
    """An HTML page about 5 times larger on disk than its text (~20 KB of file, ~4 KB of words),
    like a generated manual page; returns the words, one paragraph a line."""
    words = [f"Paragraph {i:04d} of the howto, plain words." for i in range(paragraphs)]
    body = "\n".join(
        f'<div class="sect1 paragraph-block" id="_p{i}" data-section="{i}"><p><span class="plain"'
        f' style="font-family: Helvetica, Arial, sans-serif; color: #333333">{text}</span></p></div>'
        for i, text in enumerate(words)
    )
    path.write_text(
        f"<!DOCTYPE html>\n<html><head><title>Howto</title></head><body>\n{body}\n</body></html>\n",
        encoding="utf-8",
    )
    return "\n".join(words)


def corrupt_pdf(path: Path) -> None:
    """A file that says it is a PDF and is not one: every PDF reader refuses it."""
    path.write_bytes(b"%PDF-1.7\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nthis is not a pdf\n%%E")


def too_large_text(path: Path, size: int) -> None:
    """A text file of ``size`` bytes, each line a readable sentence."""
    line = b"a line of an overly long log file\n"
    path.write_bytes(line * (size // len(line) + 1))
