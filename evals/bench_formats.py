"""Document formats: extraction speed and memory per format, and ranking over PDFs beside text;
with ``--fidelity``, what HTML extraction keeps and drops, beside other main-content extractors.

    .venv/bin/python evals/bench_formats.py [--cache evals/cache] [--pdfs 200] [--office 100]
                                            [--skip-mrr] [--json OUT]
    PYTHONPATH=src .venv/bin/python evals/bench_formats.py --fidelity [--fidelity-set SET]
        [--html-manuals-root DIR] [--deb-manuals-root DIR] [--compare-python PYTHON]
        [--extractors NAME,...] [--paired-with OTHER/src] [--repeat N] [--no-speed] [--show-misses]
        [--json OUT]
    PYTHONPATH=src .venv/bin/python evals/bench_formats.py --fidelity-choose

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

Fidelity (``--fidelity``, issue 38; none of the above is run): the labelled pages of
``--fidelity-set`` (``evals/sets/html-fidelity-v1.jsonl``: 49 pages of nine Debian manuals from
nine site generators; see evals/sets/README.md) give, for each page, strings of its main
content a reader needs (``keep``) and strings of its boilerplate (``drop``: menus, breadcrumbs,
prev/next bars, footers). Each extractor's text of the page, table cell bars as spaces and
whitespace collapsed (case kept), is searched for them: **keep-recall** is the share of keep
strings found, **keep-recall deep** the same for the keep strings in the second half of the
page, **drop-rate** the share of drop strings absent (pages without any left out); means over
pages, per generator and overall. The pages come from two roots: ``html-manuals``
(``evals/fetch_corpora.py html-manuals``: sphinx-doc, debian-reference-en, zsh-doc, apache2-doc)
and ``deb-manuals`` (five Debian packages unpacked by hand under ``--deb-manuals-root``, as
``evals/bench_html_pages.py`` describes: git-doc, bash-doc, debmake-doc, sqlite3-doc,
postgresql-doc-15).

Speed: every regular ``*.html`` file of those nine packages (3,411 pages, 88 MB, not only the
sample), read into memory, then extracted ``--repeat`` times after a warm-up of 20 pages, each
call timed in the worker process: pages/s of the best pass, wall-clock and of CPU time (which
other processes on a shared machine move less). Each extractor runs in its own process
(``evals/html_fidelity.py``, the worker, reads a job on stdin). ``--paired-with OTHER/src`` also
runs the tansaku of another tree (another commit) in tansaku's process, page by page in
alternating order, so that before and after are timed under the same load (row
``tansaku-paired``, and their ratio). The extractors:

- ``tansaku``: ``tansaku.sources.formats.html.extract`` of the code on ``PYTHONPATH`` (run the
  bench with another tree's ``src`` to measure that tree);
- ``tansaku+cross-page``: the same, then ``tansaku.sources.boilerplate.strip_repeated`` over each
  package's pages together, as an update of a collection of that package's folder would (paths
  below it, translations of a page counted once), when that module exists (else the row is
  left out);
- ``trafilatura`` (``favor_recall=True``, tables in, formatting out), ``trafilatura-precision``
  (its default balance) and ``readability`` (readability-lxml's ``Document.summary()``, then its
  text by lxml): in the interpreter ``--compare-python`` names (a virtualenv with
  ``trafilatura readability-lxml lxml_html_clean``); none of them is a dependency of tansaku,
  and without ``--compare-python`` only tansaku and the baseline are measured;
- ``all-text``: every text outside ``<head>``, ``<title>``, scripts and styles (the labels' baseline: keep and
  drop strings are all in it, so it scores 1.0 and 0.0).

``--fidelity-choose`` prints the pages the sampling rule picks (how the set's pages were chosen):
in each package, the regular ``*.html`` files sorted by path, those with at least 2,000
characters of text (``all-text``), every k-th of them (``FIDELITY_SAMPLE``), plus the longest.
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


# -- HTML fidelity (--fidelity) ------------------------------------------------------------------

FIDELITY_SET = EVALS / "sets" / "html-fidelity-v1.jsonl"
WORKER = EVALS / "html_fidelity.py"
DEB_MANUALS = Path("/tmp/deb-manuals")
# corpus -> its packages (folders under the corpus root), and how many pages each gives the
# sample besides its longest page (FIDELITY_SAMPLE: the rule --fidelity-choose applies).
FIDELITY_SAMPLE: dict[str, dict[str, int]] = {
    "html-manuals": {"sphinx-doc": 5, "debian-reference-en": 3, "zsh-doc": 5, "apache2-doc": 6},
    "deb-manuals": {"git-doc": 5, "bash-doc": 2, "debmake-doc": 4, "sqlite3-doc": 5, "postgresql-doc-15": 5},
}
SAMPLE_MIN_CHARS = 2000
COMPARED = ("trafilatura", "trafilatura-precision", "readability")


def fidelity_roots(args: argparse.Namespace) -> dict[str, Path]:
    html_root = args.html_manuals_root or fetch_corpora.ensure_corpus("html-manuals", args.cache)
    roots = {"html-manuals": Path(html_root), "deb-manuals": args.deb_manuals_root}
    for corpus, packages in FIDELITY_SAMPLE.items():
        for package in packages:
            if not (roots[corpus] / package).is_dir():
                raise SystemExit(
                    f"no {roots[corpus] / package}: the html-manuals corpus comes from"
                    " evals/fetch_corpora.py, the deb-manuals packages as evals/bench_html_pages.py says"
                )
    return roots


def html_pages(roots: dict[str, Path]) -> list[tuple[str, str, Path]]:
    """Every regular ``*.html`` file (symlinks left out) of the packages: (corpus, package, path)."""
    out = []
    for corpus, packages in FIDELITY_SAMPLE.items():
        for package in packages:
            folder = roots[corpus] / package
            files = sorted(p for p in folder.rglob("*.html") if p.is_file() and not p.is_symlink())
            out.extend((corpus, package, p) for p in files)
    return out


def choose_fidelity_pages(roots: dict[str, Path]) -> list[tuple[str, str, int]]:
    """The sampling rule: (corpus, path relative to its root, characters of text) per page."""
    import html_fidelity

    chosen = []
    pages = html_pages(roots)
    for corpus, packages in FIDELITY_SAMPLE.items():
        for package, count in packages.items():
            lengths = {
                p: len(html_fidelity.all_text(html_fidelity.decode(p.read_bytes())))
                for c, k, p in pages
                if (c, k) == (corpus, package)
            }
            candidates = [p for p, n in lengths.items() if n >= SAMPLE_MIN_CHARS]
            step = max(1, len(candidates) // count)
            picks = candidates[step // 2 :: step][:count]
            rest = [p for p in candidates if p not in picks]
            if rest:
                picks.append(max(rest, key=lambda p: lengths[p]))
            chosen += [(corpus, str(p.relative_to(roots[corpus])), lengths[p]) for p in picks]
    return chosen


def run_worker(python: str, job: dict) -> dict | None:
    result = subprocess.run(
        [python, str(WORKER)], input=json.dumps(job), capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        print(
            f"  {job['extractor']}: not measured ({result.stderr.strip().splitlines()[-1:]})", file=sys.stderr
        )
        return None
    return json.loads(result.stdout)


def _has_cross_page() -> bool:
    code = "from tansaku.sources.boilerplate import strip_repeated"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, check=False).returncode == 0


def _tansaku_label(tansaku_file: str) -> str:
    """The commit checked out where tansaku was imported from, ``-dirty`` when its package
    folder has changes (changes elsewhere in the tree, such as this script's, do not count)."""
    folder = str(Path(tansaku_file).parent)
    git = ["git", "-C", folder]
    commit = subprocess.run(
        [*git, "rev-parse", "--short=7", "HEAD"], capture_output=True, text=True, check=False
    )
    changed = subprocess.run(
        [*git, "status", "--porcelain", "--", "."], capture_output=True, text=True, check=False
    )
    return (commit.stdout.strip() or "?") + ("-dirty" if changed.stdout.strip() else "")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def score_page(label: dict, text: str, page_text: str) -> dict:
    """One page's keep and drop strings against an extractor's ``text`` (``page_text``: the
    page's all-text, where each keep string's position, first or second half, is read)."""
    import html_fidelity

    got = html_fidelity.normalise(text)
    found = [_collapse(k) in got for k in label["keep"]]
    deep = [f for k, f in zip(label["keep"], found, strict=True)
            if page_text.find(_collapse(k)) >= len(page_text) / 2]  # fmt: skip
    kept = [d for d in label["drop"] if _collapse(d) in got]
    return {
        "keep": sum(found) / len(found),
        "deep": sum(deep) / len(deep) if deep else None,
        "drop": 1 - len(kept) / len(label["drop"]) if label["drop"] else None,
        "missed": [k for k, f in zip(label["keep"], found, strict=True) if not f],
        "kept_drop": kept,
    }


def _mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def summarise(labels: list[dict], scores: dict[str, dict]) -> dict[str, dict]:
    """Per generator and overall: pages, mean keep-recall, deep keep-recall and drop-rate."""
    groups: dict[str, list[dict]] = {}
    for label in labels:
        groups.setdefault(label["generator"], []).append(scores[label["id"]])
    groups = dict(sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])))
    groups["all"] = [scores[label["id"]] for label in labels]
    return {
        name: {
            "pages": len(rows),
            "keep": _mean([r["keep"] for r in rows]),
            "deep": _mean([r["deep"] for r in rows]),
            "drop": _mean([r["drop"] for r in rows]),
        }
        for name, rows in groups.items()
    }


def _f(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def fidelity(args: argparse.Namespace) -> None:
    import html_fidelity

    roots = fidelity_roots(args)
    if args.fidelity_choose:
        for corpus, path, chars in choose_fidelity_pages(roots):
            print(f"{corpus}\t{path}\t{chars}")
        return
    labels = [json.loads(line) for line in args.fidelity_set.read_text(encoding="utf-8").splitlines()
              if line.strip()]  # fmt: skip
    pages = html_pages(roots)
    path_of = {label["id"]: str(roots[label["corpus"]] / label["path"]) for label in labels}
    page_texts = {}
    for label in labels:  # the baseline holds every label (else the set is out of date)
        page_texts[label["id"]] = _collapse(
            html_fidelity.normalise(
                html_fidelity.all_text(html_fidelity.decode(Path(path_of[label["id"]]).read_bytes()))
            )
        )
        absent = [s for s in label["keep"] + label["drop"] if _collapse(s) not in page_texts[label["id"]]]
        if absent:
            print(f"  {label['id']} {label['path']}: not in its page: {absent}", file=sys.stderr)
    wanted = args.extractors.split(",") if args.extractors else None
    runs = [("all-text", sys.executable), ("tansaku", sys.executable)]
    if _has_cross_page():
        runs.append(("tansaku+cross-page", sys.executable))
    else:
        print(
            "  tansaku+cross-page: tansaku.sources.boilerplate is not importable, left out", file=sys.stderr
        )
    if args.compare_python:
        runs += [(name, args.compare_python) for name in COMPARED]
    runs = [r for r in runs if wanted is None or r[0] in wanted]
    job = {
        "files": [
            [f"{corpus}/{package}", str(path), str(path.relative_to(roots[corpus] / package))]
            for corpus, package, path in pages
        ],
        "sample": list(path_of.values()),
        "speed": not args.no_speed,
        "repeat": args.repeat,
        "warmup": 20,
    }
    figures: dict = {"load": os.getloadavg(), "pages": len(pages), "sample": len(labels), "extractors": {}}
    print(f"{len(labels)} labelled pages; speed over {len(pages)} pages"
          f" ({sum(p.stat().st_size for _, _, p in pages) / 1e6:.1f} MB)", file=sys.stderr)  # fmt: skip
    for name, python in runs:
        pair = {"pair_src": str(args.paired_with)} if args.paired_with and name == "tansaku" else {}
        got = run_worker(python, {**job, "extractor": name, **pair})
        if got is None:
            continue
        results = [(name, got)]
        if "pair" in got:
            results.append(("tansaku-paired", got.pop("pair")))
        for key, result in results:
            figures["extractors"][key] = _scored(result, labels, path_of, page_texts)
    if "tansaku-paired" in figures["extractors"] and not args.no_speed:
        ours, theirs = figures["extractors"]["tansaku"], figures["extractors"]["tansaku-paired"]
        figures["paired"] = {
            "wall_ratio": _ratio(ours["pages_per_s"], theirs["pages_per_s"]),
            "cpu_ratio": _ratio(ours["cpu_pages_per_s"], theirs["cpu_pages_per_s"]),
        }
        print(f"paired: {ours['label']} / {theirs['label']} pages/s = {figures['paired']['wall_ratio']}"
              f" (CPU {figures['paired']['cpu_ratio']})", file=sys.stderr)  # fmt: skip
    figures["load_after"] = os.getloadavg()
    print_fidelity(figures, labels, args.show_misses)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def _scored(got: dict, labels: list[dict], path_of: dict[str, str], page_texts: dict[str, str]) -> dict:
    """A worker's result with its pages scored (its texts dropped), and one line on stderr."""
    name = got["extractor"]
    if name.startswith("tansaku"):
        got["label"] = _tansaku_label(got["tansaku_file"])
    scores = {
        label["id"]: score_page(label, got["texts"].get(path_of[label["id"]], ""), page_texts[label["id"]])
        for label in labels
    }
    got["summary"] = summarise(labels, scores)
    got["scores"] = scores
    got["per_package_pages_per_s"] = {
        k: round(n / s, 1) for k, (n, s) in got.get("packages", {}).items() if s
    }
    del got["texts"]
    overall = got["summary"]["all"]
    print(f"{name:22} keep {_f(overall['keep'])} deep {_f(overall['deep'])} drop {_f(overall['drop'])}"
          f" {got['pages_per_s'] or '-'} pages/s (CPU {got['cpu_pages_per_s'] or '-'}) {got['seconds']} s"
          f" {got['failed']} failed {got.get('label') or got.get('versions')}", file=sys.stderr)  # fmt: skip
    return got


def print_fidelity(figures: dict, labels: list[dict], show_misses: bool) -> None:
    extractors = figures["extractors"]
    print("| extractor | keep-recall | keep-recall, 2nd half | drop-rate | pages/s | pages/s of CPU |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, got in extractors.items():
        overall = got["summary"]["all"]
        label = f" ({got['label']})" if got.get("label") else ""
        print(f"| {name}{label} | {_f(overall['keep'])} | {_f(overall['deep'])} | {_f(overall['drop'])}"
              f" | {got['pages_per_s'] or '-'} | {got['cpu_pages_per_s'] or '-'} |")  # fmt: skip
    if figures.get("paired"):
        print(f"\ntansaku / tansaku-paired, same process: pages/s x{figures['paired']['wall_ratio']},"
              f" of CPU x{figures['paired']['cpu_ratio']}")  # fmt: skip
    for name, got in extractors.items():
        print(f"\n{name}:\n\n| generator | pages | keep-recall | keep-recall, 2nd half | drop-rate |")
        print("|---|---:|---:|---:|---:|")
        for group, row in got["summary"].items():
            print(f"| {group} | {row['pages']} | {_f(row['keep'])} | {_f(row['deep'])} | {_f(row['drop'])} |")
        if got.get("per_package_pages_per_s"):
            print("\npages/s by package: " + ", ".join(f"{k.split('/')[1]} {v}"
                  for k, v in got["per_package_pages_per_s"].items()))  # fmt: skip
    if show_misses:
        for name, got in extractors.items():
            print(f"\n{name}: pages missing keep strings or keeping drop strings")
            for label in labels:
                score = got["scores"][label["id"]]
                if score["missed"] or score["kept_drop"]:
                    missed, kept = score["missed"], score["kept_drop"]
                    print(f"- {label['id']} `{label['path']}`: missed {missed}; kept {kept}")


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
    fid = parser.add_argument_group("HTML fidelity (the docstring's last part)")
    fid.add_argument("--fidelity", action="store_true", help="measure HTML extraction fidelity (only)")
    fid.add_argument("--fidelity-choose", action="store_true", help="print the pages the sampling rule picks")
    fid.add_argument("--fidelity-set", type=Path, default=FIDELITY_SET, help="the labelled pages")
    fid.add_argument("--html-manuals-root", type=Path, help="default: the cache's corpora/html-manuals")
    fid.add_argument("--deb-manuals-root", type=Path, default=DEB_MANUALS)
    fid.add_argument("--compare-python", help="an interpreter with trafilatura and readability-lxml")
    fid.add_argument("--extractors", help="comma-separated, of: " + ", ".join(
        ("all-text", "tansaku", "tansaku+cross-page", *COMPARED)))  # fmt: skip
    fid.add_argument("--repeat", type=int, default=1, help="timed passes per extractor (the best is kept)")
    fid.add_argument("--paired-with", type=Path, metavar="SRC", help="also time the tansaku of this tree"
                     " (another commit's src), in tansaku's process, page by page alternately")  # fmt: skip
    fid.add_argument("--no-speed", action="store_true", help="extract the labelled pages only")
    fid.add_argument("--show-misses", action="store_true", help="list each page's missed and kept strings")
    args = parser.parse_args()
    if args.fidelity or args.fidelity_choose:
        fidelity(args)
        return

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
