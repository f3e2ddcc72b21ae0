"""Hostile documents, made by the tests (and evals/bench_abuse.py) that use them: a few lines of
Python each, never committed as binaries."""

from __future__ import annotations

import io
import zipfile
import zlib

_W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def pdf_with_content(compressed: bytes) -> bytes:
    """A one-page PDF whose content stream is ``compressed`` (Flate), with a correct xref table."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(compressed) + compressed + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def pdf_bomb(inflated_mib: int, words: str = "Bomb page") -> bytes:
    """A PDF of a few MB whose one content stream inflates to ``inflated_mib`` MiB (of spaces after
    one line of text); 512 MiB is made in under a second."""
    deflate = zlib.compressobj(1)
    parts = [deflate.compress(f"BT /F1 12 Tf 72 720 Td ({words}) Tj ET\n".encode())]
    block = b" " * (1024 * 1024)
    parts.extend(deflate.compress(block) for _ in range(inflated_mib))
    parts.append(deflate.flush())
    return pdf_with_content(b"".join(parts))


def pdf_text(words: str) -> bytes:
    """A small, healthy PDF with one line of text."""
    return pdf_with_content(zlib.compress(f"BT /F1 12 Tf 72 720 Td ({words}) Tj ET\n".encode()))


def nested_docx(depth: int) -> bytes:
    """A DOCX (under 3 KB for 20,000) of ``depth`` tables, each in a cell of the one before."""
    body = "<w:tbl><w:tr><w:tc>" * depth + "<w:p><w:r><w:t>deep</w:t></w:r></w:p>"
    body += "</w:tc></w:tr></w:tbl>" * depth
    document = f'<?xml version="1.0"?><w:document {_W}><w:body>{body}</w:body></w:document>'
    return _zip({"word/document.xml": document})


def nested_html(depth: int) -> str:
    """A page of ``depth`` tables, each in a cell of the one before, with a line of text inside."""
    return (
        "<html><head><title>Nested</title></head><body><p>Shallow words.</p>"
        + "<table><tr><td>" * depth
        + "Deep words."
        + "</td></tr></table>" * depth
        + "</body></html>"
    )


def nested_epub(depth: int) -> bytes:
    """An EPUB whose one chapter is :func:`nested_html` as XHTML."""
    container = (
        '<?xml version="1.0"?><container version="1.0"'
        ' xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>'
        '<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
        "</rootfiles></container>"
    )
    package = (
        '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
        '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Nested</dc:title></metadata>'
        '<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/></manifest>'
        '<spine><itemref idref="c1"/></spine></package>'
    )
    chapter = nested_html(depth).replace("<html>", '<html xmlns="http://www.w3.org/1999/xhtml">')
    return _zip(
        {
            "mimetype": "application/epub+zip",
            "META-INF/container.xml": container,
            "OEBPS/content.opf": package,
            "OEBPS/c1.xhtml": chapter,
        }
    )


def _zip(members: dict[str, str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in members.items():
            archive.writestr(name, text)
    return buffer.getvalue()
