"""Document formats: extraction speed and memory per format, and ranking over PDFs beside text.

    .venv/bin/python evals/bench_formats.py [--cache evals/cache] [--pdfs 200] [--office 100]
                                            [--skip-mrr] [--json OUT]

Not a test (CI does not run it). The documents are real and made here from registry packages:

- HTML: the Python 3.11 HTML documentation (``evals/fetch_corpora.py python-html``, 497 pages);
- PDF: ``--pdfs`` of those pages printed by headless Chromium (Debian's ``chromium``), the pages
  the judged set ``python-docs-v1`` names first, then every k-th other page; cached in
  ``evals/cache/formats/pdf/`` (printing takes a few seconds a page, once);
- DOCX and EPUB: ``--office`` of the same pages' reST sources converted by pandoc (Debian's
  ``pandoc``), cached in ``evals/cache/formats/{docx,epub}/``.

Speed: each format in its own process (so peak memory is that format's), every file read into
memory first, then ``tansaku.sources.formats.extract`` timed over all of them: files/s, MB/s, and
the peak resident memory of the process beside that of the same process before extracting.
For HTML, the standard library's parser (what HTML falls back to without lexbor) and
``markdownify`` (with BeautifulSoup, when installed) are timed on the same pages, as the
alternatives; for PDF, ``pypdf`` likewise.

Ranking: the queries of ``evals/sets/python-docs-v1.jsonl`` over three collections of the same
documents (the PDFs, their HTML pages, their reST sources as text), each query's judged paths
mapped to the collection's file names; ``tansaku bench --mode search`` gives MRR@10 per
collection. Uses its own config and index in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

EVALS = Path(__file__).resolve().parent
REPO = EVALS.parent
SET = EVALS / "sets" / "python-docs-v1.jsonl"
sys.path.insert(0, str(EVALS))

import fetch_corpora  # noqa: E402  (a sibling script, not a package)

SUFFIX = {"pdf": ".pdf", "html": ".html", "docx": ".docx", "epub": ".epub"}


def judged_pages() -> list[str]:
    """The set's judged documents as HTML page paths, primary answers first."""
    seen: dict[str, None] = {}
    for line in SET.read_text(encoding="utf-8").splitlines():
        if line.strip():
            for rel in json.loads(line)["relevant"]:
                seen[rel.removesuffix(".rst.txt") + ".html"] = None
    return list(seen)


def choose(html_root: Path, count: int) -> list[str]:
    """The judged pages, then every k-th other page (sorted) up to ``count``."""
    judged = [p for p in judged_pages() if (html_root / p).is_file()]
    every = sorted(str(p.relative_to(html_root)) for p in html_root.rglob("*.html"))
    others = [p for p in every if p not in judged]
    need = max(0, count - len(judged))
    step = max(1, len(others) // need) if need else 1
    return (judged + others[::step][:need])[:count] if count >= len(judged) else judged[:count]


def print_pdfs(html_root: Path, pages: list[str], out: Path, outline: bool = False) -> None:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("the PDFs are printed by headless Chromium: apt-get install chromium")
    for done, page in enumerate(pages, start=1):
        target = out / (page.removesuffix(".html") + ".pdf")
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
             *(["--generate-pdf-document-outline"] if outline else []),
             f"--print-to-pdf={target}", (html_root / page).as_uri()],
            capture_output=True, timeout=180, check=False,
        )  # fmt: skip
        if done % 20 == 0:
            print(f"  printed {done}/{len(pages)} PDFs", file=sys.stderr)


def convert_office(rst_root: Path, pages: list[str], out: Path, fmt: str) -> None:
    pandoc = shutil.which("pandoc")
    if pandoc is None:
        raise SystemExit("DOCX and EPUB files are made by pandoc: apt-get install pandoc")
    for page in pages:
        source = rst_root / (page.removesuffix(".html") + ".rst.txt")
        target = out / (page.removesuffix(".html") + SUFFIX[fmt])
        if target.exists() or not source.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [pandoc, "-f", "rst", str(source), "-o", str(target)],
            capture_output=True,
            timeout=120,
            check=False,
        )


# -- speed ---------------------------------------------------------------------------------------


def measure(fmt: str, folder: str, library: str) -> dict:
    """In this (child) process: extract every file of ``folder``; the figures as a dict."""
    files = sorted(p for p in Path(folder).rglob("*" + SUFFIX[fmt]) if p.is_file())
    raw = [p.read_bytes() for p in files]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    extract = _extractor(fmt, library)
    failures = 0
    chars = 0
    started = time.perf_counter()
    for data in raw:
        try:
            chars += extract(data)
        except Exception:
            failures += 1
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    size = sum(len(d) for d in raw)
    return {
        "format": fmt,
        "library": library,
        "files": len(files),
        "failed": failures,
        "mb": round(size / 1e6, 1),
        "seconds": round(seconds, 2),
        "files_per_s": round(len(files) / seconds, 1) if seconds else None,
        "mb_per_s": round(size / 1e6 / seconds, 2) if seconds else None,
        "chars": chars,
        "peak_rss_mb": round(peak / 1024),
        "rss_before_mb": round(before / 1024),
    }


def _extractor(fmt: str, library: str):  # type: ignore[no-untyped-def]
    if library == "tansaku":
        from tansaku.sources.formats import extract

        return lambda data: len(extract(fmt, data, 1 << 30).text)
    if library == "stdlib":  # the HTML path without lexbor
        from tansaku.sources.formats import html

        return lambda data: len(
            html.to_markdown(html.decode(data), html._MAIN.search(data) is not None, tree=False).text
        )
    if library == "markdownify":
        from markdownify import markdownify

        return lambda data: len(markdownify(data.decode("utf-8", "replace")))
    if library == "pypdf":
        import io

        import pypdf

        return lambda data: sum(len(p.extract_text() or "") for p in pypdf.PdfReader(io.BytesIO(data)).pages)
    raise ValueError(library)


def speed(fmt: str, folder: Path, library: str = "tansaku") -> dict | None:
    code = (
        "import json, sys; sys.path.insert(0, sys.argv[1]); import bench_formats as b;"
        " print(json.dumps(b.measure(sys.argv[2], sys.argv[3], sys.argv[4])))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, str(EVALS), fmt, str(folder), library],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        print(
            f"  {fmt} with {library}: not measured ({result.stderr.strip().splitlines()[-1:]})",
            file=sys.stderr,
        )
        return None
    return json.loads(result.stdout)


# -- ranking -------------------------------------------------------------------------------------


def mrr(collections: dict[str, tuple[Path, str]], pages: list[str]) -> dict[str, dict]:
    """MRR@10 of ``tansaku bench --mode search`` per collection (name -> (folder, suffix))."""
    chosen = {p.removesuffix(".html") for p in pages}
    queries = [json.loads(line) for line in SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    out: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "TANSAKU_CONFIG_DIR": f"{tmp}/config",
            "TANSAKU_INDEX_PATH": f"{tmp}/index.sqlite",
        }
        for name, (folder, suffix) in collections.items():
            kept = []
            for q in queries:
                stems = [r.removesuffix(".rst.txt") for r in q["relevant"]]
                if all(s in chosen for s in stems):
                    kept.append({**q, "corpus": name, "relevant": [s + suffix for s in stems]})
            set_file = Path(tmp) / f"{name}.jsonl"
            set_file.write_text("".join(json.dumps(q) + "\n" for q in kept), encoding="utf-8")
            started = time.perf_counter()
            added = _tansaku(env, "collection", "add", str(folder), "--name", name, "--mask", f"**/*{suffix}")
            indexing = time.perf_counter() - started
            report = json.loads(
                _tansaku(env, "bench", str(set_file), "-c", name, "--mode", "search", "--json")
            )
            [overall] = [s for s in report["summaries"] if s["kind"] == "all"]
            out[name] = {
                "queries": overall["queries"],
                "mrr_at_10": overall["mrr_at_10"],
                "documents": len(list(folder.rglob(f"*{suffix}"))),
                "index_seconds": round(indexing, 1),
                "skipped": len(json.loads(added)["collections"][0]["skipped"]) if added else None,
            }
    return out


def _tansaku(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "tansaku", *args, *(["--json"] if args[0] == "collection" else [])],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        raise SystemExit(f"tansaku {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cache", type=Path, default=EVALS / "cache")
    parser.add_argument("--pdfs", type=int, default=200, help="PDFs to print and measure (default 200)")
    parser.add_argument("--office", type=int, default=100, help="DOCX and EPUB files to make (default 100)")
    parser.add_argument("--skip-mrr", action="store_true", help="measure speed only")
    parser.add_argument("--only", action="append", default=[], metavar="RUN", help="only these speed runs"
                        " (FORMAT or FORMAT:LIBRARY, e.g. html or html:stdlib; repeatable)")  # fmt: skip
    parser.add_argument(
        "--outline",
        action="store_true",
        help="print the PDFs with Chromium's document outline (bookmarks: headings) into formats/pdf-outline",
    )
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()

    html_root = fetch_corpora.ensure_corpus("python-html", args.cache)
    rst_root = fetch_corpora.ensure_corpus("python-docs", args.cache)
    work = args.cache / "formats"
    pages = choose(html_root, args.pdfs)
    pdf_dir = work / ("pdf-outline" if args.outline else "pdf")
    print(f"printing {len(pages)} PDFs (cached in {pdf_dir}) ...", file=sys.stderr)
    print_pdfs(html_root, pages, pdf_dir, args.outline)
    for fmt in ("docx", "epub"):
        convert_office(rst_root, pages[: args.office], work / fmt, fmt)

    figures: dict = {"load": os.getloadavg(), "speed": [], "mrr": None}
    runs = [
        ("html", html_root, "tansaku"), ("html", html_root, "stdlib"), ("html", html_root, "markdownify"),
        ("pdf", pdf_dir, "tansaku"), ("pdf", pdf_dir, "pypdf"),
        ("docx", work / "docx", "tansaku"), ("epub", work / "epub", "tansaku"),
    ]  # fmt: skip
    if args.only:
        runs = [r for r in runs if r[0] in args.only or f"{r[0]}:{r[2]}" in args.only]
    for fmt, folder, library in runs:
        got = speed(fmt, folder, library)
        if got is not None:
            figures["speed"].append(got)
            print(
                f"{fmt:5} {library:12} {got['files']:4} files {got['mb']:6.1f} MB {got['seconds']:7.2f} s"
                f" {got['files_per_s']:7.1f} files/s {got['mb_per_s']:6.2f} MB/s"
                f" peak {got['peak_rss_mb']} MB (before {got['rss_before_mb']} MB), {got['failed']} failed"
            )
    if not args.skip_mrr:
        html_copy = work / "html-chosen"
        text_copy = work / "text-chosen"
        for page in pages:
            rst = page.removesuffix(".html") + ".rst.txt"
            for src, dest in ((html_root / page, html_copy / page), (rst_root / rst, text_copy / rst)):
                if src.is_file() and not dest.exists():
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(src, dest)
        figures["mrr"] = mrr(
            {"pdf": (pdf_dir, ".pdf"), "html": (html_copy, ".html"), "text": (text_copy, ".rst.txt")},
            pages,
        )
        for name, got in figures["mrr"].items():
            print(f"MRR@10 {name:5} {got['mrr_at_10']:.3f} over {got['queries']} queries,"
                  f" {got['documents']} documents (indexed in {got['index_seconds']} s)")  # fmt: skip
    figures["load_after"] = os.getloadavg()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
