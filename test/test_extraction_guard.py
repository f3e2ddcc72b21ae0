"""Hostile documents cost a bounded amount: the extraction worker's time and memory limits, a PDF's
inflated bytes, XML nesting; each a named skip reason, never the end of the update, and the files
beside them indexed. The files are made here (test/hostile_files.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tansaku.sources import formats
from tansaku.sources.formats import ExtractionFailed
from tansaku.sources.formats.guard import ExtractionWorker

from .conftest import REPO
from .hostile_files import nested_docx, nested_epub, nested_html, pdf_bomb, pdf_text

Cli = Callable[..., Any]
MIB = 1024 * 1024

pytest.importorskip("pypdfium2")


def add(cli: Cli, folder: Path, *args: str) -> dict:
    result = cli("collection", "add", str(folder), "--name", "docs", "--json", *args)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    [collection] = result.json()["collections"]
    return collection


def reasons(report: dict) -> dict[str, str]:
    return {skip["path"]: skip["reason"] for skip in report["skipped"]}


# A wrapper that runs the real command under an address-space limit and prints the peak resident
# memory of it and every process it started (the extraction worker included), in KiB, on stderr.
_MEASURED = textwrap.dedent(
    """
    import resource, subprocess, sys
    limit = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    done = subprocess.run(sys.argv[2:], stdin=subprocess.DEVNULL)
    print("peak-kib", resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
    sys.exit(done.returncode)
    """
)


@pytest.mark.subprocess
def test_a_pdf_bomb_is_skipped_by_name_in_bounded_memory_and_its_neighbour_indexed(tmp_path: Path) -> None:
    """The issue's case: under a 2.5 GB address-space limit, `collection add` of a PDF whose one
    stream inflates to 512 MiB and a Markdown file beside it."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "bomb.pdf").write_bytes(pdf_bomb(512))
    (folder / "healthy.md").write_text("# Healthy\n\nLimpets graze on algae at low tide.\n")
    env = {**os.environ, "TANSAKU_PYTHON": sys.executable}
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, str(2500 * MIB), str(REPO / "bin" / "tansaku"),
         "collection", "add", str(folder), "--name", "docs", "--formats", "pdf", "--json"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [report] = json.loads(done.stdout)["collections"]
    assert report["added"] == ["healthy.md"]
    assert reasons(report)["bomb.pdf"] == (
        "decompression-bomb (the stream at byte 292 inflates past 64 MiB"
        " (the limit for one stream of a PDF); not read)"
    )
    peak_mib = int(done.stderr.split("peak-kib")[-1]) // 1024
    assert peak_mib < 400, f"collection add peaked at {peak_mib} MiB"


def test_the_memory_limit_stops_a_reader_and_the_next_file_gets_a_fresh_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the count of inflated bytes (here lifted), the worker's address-space limit is what
    stops PDFium: it aborts, and the file is skipped as too-much-memory."""
    monkeypatch.setattr(formats, "MAX_PDF_STREAM_BYTES", 4096 * MIB)
    monkeypatch.setattr(formats, "MAX_PDF_INFLATED_BYTES", 4096 * MIB)
    with ExtractionWorker(memory=384 * MIB) as worker:
        with pytest.raises(ExtractionFailed) as failed:
            worker.extract("pdf", pdf_bomb(512), 1_000_000)
        assert failed.value.code == "too-much-memory"
        assert "more than 384 MiB (the memory limit per file)" in failed.value.detail
        assert failed.value.cacheable
        assert worker.extract("pdf", pdf_text("Limpets graze"), 1_000_000).text.strip() == "Limpets graze"
        assert worker.started == 2


def test_a_reader_past_the_time_limit_is_stopped_and_the_next_file_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A DOCX 4,000 tables deep read the slow way (the nesting limit lifted) takes over ten
    seconds; the worker is killed at the file's time limit."""
    monkeypatch.setattr(formats, "MAX_NESTING", 1_000_000)
    with ExtractionWorker(seconds=1.0) as worker:
        with pytest.raises(ExtractionFailed) as failed:
            worker.extract("docx", nested_docx(4000), 1_000_000)
        assert failed.value.reason == "too-slow (reading stopped after 1 s (the time limit per file))"
        assert worker.extract("html", b"<p>Crabs moult.</p>", 1_000_000).text == "Crabs moult.\n"
        assert worker.started == 2


def test_a_deeply_nested_docx_is_refused_at_once(cli: Cli, tmp_path: Path) -> None:
    """The issue's 2,859-byte DOCX of 20,000 nested tables ran for over 300 s."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "nested.docx").write_bytes(nested_docx(20_000))
    (folder / "notes.md").write_text("# Notes\n\nCrabs moult in spring.\n")
    report = add(cli, folder, "--formats", "docx")
    assert report["added"] == ["notes.md"]
    assert reasons(report) == {
        "nested.docx": "too-deep (word/document.xml nests elements more than 256 deep"
        " (the limit per document))"
    }


@pytest.mark.parametrize(("name", "make"), [("nested.html", nested_html), ("nested.epub", nested_epub)])
def test_the_same_shape_in_html_and_epub_is_read_whole(
    cli: Cli, tmp_path: Path, name: str, make: Callable[[int], str | bytes]
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    made = make(20_000)
    (folder / name).write_bytes(made.encode() if isinstance(made, str) else made)
    report = add(cli, folder, "--formats", "html,epub")
    assert report["added"] == [name] and report["skipped"] == []
    text = cli("get", f"docs/{name}").stdout
    assert "Shallow words." in text and "Deep words." in text


def test_a_worker_that_cannot_start_is_not_blamed_on_the_file(tmp_path: Path) -> None:
    """A worker that exits before answering (here: a tansaku package that fails to import) says
    so, and the file is not cached as bad: the next update tries it again."""
    broken = tmp_path / "broken" / "tansaku"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise SystemExit(3)\n")
    worker = ExtractionWorker()
    import tansaku.sources.formats.guard as guard

    original = guard._PACKAGE_ROOT
    guard._PACKAGE_ROOT = str(broken.parent)
    try:
        with pytest.raises(ExtractionFailed) as failed:
            worker.extract("html", b"<p>x</p>", 100)
    finally:
        guard._PACKAGE_ROOT = original
        worker.close()
    assert failed.value.code == "reader-unavailable"
    assert failed.value.detail.startswith("the document reader exited with 3")
    assert not failed.value.cacheable


def test_a_pool_reads_side_by_side_and_answers_each_file_with_its_own_text() -> None:
    from tansaku.sources.formats.guard import ExtractionPool

    pages = [f"<h1>Page {n}</h1><p>Crab number {n} moults.</p>".encode() for n in range(8)]
    with ExtractionPool(size=2) as pool:
        asked = [pool.submit("html", page, 1_000_000) for page in pages]
        texts = [future.result().text for future in asked]
        assert 1 <= len(pool._workers) <= 2
    assert texts == [f"# Page {n}\n\nCrab number {n} moults.\n" for n in range(8)]


def test_an_interrupted_update_does_not_wait_for_the_file_being_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ctrl-C while a slow file is read (a DOCX that takes over ten seconds) stops its worker."""
    import time

    from tansaku.sources.formats.guard import ExtractionPool

    monkeypatch.setattr(formats, "MAX_NESTING", 1_000_000)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), ExtractionPool(size=1) as pool:
        pool.submit("docx", nested_docx(4000), 1_000_000)
        time.sleep(0.5)
        raise KeyboardInterrupt
    assert time.monotonic() - started < 5
