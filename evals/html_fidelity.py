"""The worker of ``bench_formats.py --fidelity``: one HTML extractor over many pages, in its own
process, in whichever interpreter has the extractor (issue 38).

    PYTHON evals/html_fidelity.py < JOB.json > RESULT.json

Standard library only at import: the comparison libraries (trafilatura, readability-lxml) are
imported by the extractor that needs them, so this file runs in tansaku's interpreter (tansaku
from its ``PYTHONPATH``) and in another that has them (``--compare-python``), which takes
tansaku's page decoding (standard library only) from the same ``PYTHONPATH``.

JOB: ``{"extractor": NAME, "files": [[package, path, rel], ...], "sample": [path, ...], "speed":
true, "repeat": 1, "warmup": 20}``; ``path`` is the file's path (absolute), ``package`` the folder
its pages are grouped by for the cross-page step, ``rel`` its path below that folder. Every file
is read into memory first; then ``warmup`` pages are extracted untimed (imports, caches), then
all of them ``repeat`` times, timed. RESULT: ``{"extractor", "pages", "failed", "seconds": [...],
"cpu_seconds": [...], "pages_per_s" and "cpu_pages_per_s" (of the best pass), "packages":
{package: [pages, seconds]} (of the best pass), "texts": {path: text}}`` with the texts of the
``sample`` pages. The time is that of the extractor's calls only (each page timed on its own),
wall-clock and CPU (``time.process_time``: less moved by other processes on a shared machine).
Without ``speed`` only the sample pages are extracted (once), unless the extractor needs every
page of a package (the cross-page step). ``"pair_src": DIR`` (with ``tansaku``): the tansaku of
that tree too, in the same process, page by page in alternating order (``RESULT["pair"]``), so
that two commits are timed under the same load.

Extractors (``EXTRACTORS``):

- ``tansaku``: ``tansaku.sources.formats.html.extract(raw).text``, the code on ``PYTHONPATH``;
- ``tansaku+cross-page``: the same, then ``tansaku.sources.boilerplate.strip_repeated`` over
  each package's pages together (blocks repeated across a collection's pages left out), as an
  update does with a collection of that package's folder: paths below it, and translations of a
  page counted once (``tansaku.index.repeated._same_page``, when it exists); timed with the
  extraction (``RESULT["cross_page_seconds"]``: that step's own time in each pass);
- ``trafilatura``: ``trafilatura.extract(page, include_tables=True, include_formatting=False,
  favor_recall=True)``; ``trafilatura-precision``: the same with its default balance;
- ``readability``: ``readability.Document(page).summary()``, then its text by lxml with a line
  break after each block element;
- ``all-text``: every text of the page outside ``<head>``, ``<title>``, scripts and styles (the baseline:
  nothing left out).

The comparison libraries are given the page as text, decoded by tansaku's rule (a BOM, else the
``<meta charset>``, else UTF-8; timed with them), so a page's characters are the same for all.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
import time
from collections.abc import Callable
from html.parser import HTMLParser

_BLOCK_TAGS = frozenset(
    {"address", "article", "aside", "blockquote", "body", "br", "caption", "dd", "details", "div",
     "dl", "dt", "fieldset", "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5",
     "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre", "section", "summary", "table",
     "tbody", "td", "tfoot", "th", "thead", "tr", "ul"}
)  # fmt: skip
_UNSEEN = frozenset({"head", "title", "script", "style", "noscript", "template"})
_PIPE = re.compile(r"(?<!\\)\|")


def decode(raw: bytes) -> str:
    """tansaku's rule (``tansaku.sources.formats.html.decode``: a BOM, else the page's ``<meta
    charset>``, else UTF-8 with bad bytes replaced), from the tansaku on ``PYTHONPATH``: pure
    standard library, so it imports in the comparison libraries' interpreter too."""
    from tansaku.sources.formats.html import decode as tansaku_decode

    return tansaku_decode(raw)


def normalise(text: str) -> str:
    """An extractor's text as the labels are matched against it: table rows' cell bars (``| a |
    b |``, tansaku's and trafilatura's) as spaces, an escaped bar as a bar, whitespace collapsed
    (case kept)."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("|") and stripped.endswith("|"):
            line = _PIPE.sub(" ", line).replace("\\|", "|")
        lines.append(line)
    return " ".join(" ".join(lines).split())


class _AllText(HTMLParser):
    """Every text outside ``<head>``, scripts and styles; a line break at each block element."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.unseen = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _UNSEEN:
            self.unseen += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _UNSEEN:
            self.unseen = max(0, self.unseen - 1)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self.unseen:
            self.parts.append(data)


def all_text(page: str) -> str:
    parser = _AllText()
    parser.feed(page)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return "\n".join(line for line in lines if line)


def _lxml_text(fragment: str) -> str:
    import lxml.html

    root = lxml.html.fromstring(fragment)
    for element in root.iter():
        if isinstance(element.tag, str) and element.tag in _BLOCK_TAGS:
            element.tail = "\n" + (element.tail or "")
    return root.text_content()


def extractor(name: str) -> Callable[[bytes], str]:
    if name in ("tansaku", "tansaku+cross-page"):
        from tansaku.sources.formats.html import extract

        return lambda raw: extract(raw).text
    if name in ("trafilatura", "trafilatura-precision"):
        import trafilatura

        recall = name == "trafilatura"
        return lambda raw: (
            trafilatura.extract(
                decode(raw), include_tables=True, include_formatting=False, favor_recall=recall
            )
            or ""
        )
    if name == "readability":
        from readability import Document

        return lambda raw: _lxml_text(Document(decode(raw)).summary())
    if name == "all-text":
        return lambda raw: all_text(decode(raw))
    raise ValueError(f"unknown extractor {name!r}")


EXTRACTORS = ("tansaku", "tansaku+cross-page", "trafilatura", "trafilatura-precision", "readability",
              "all-text")  # fmt: skip


def _tansaku_from(src: str) -> tuple[Callable[[bytes], str], str]:
    """``extract`` of a second copy of tansaku, imported from the tree ``src`` (another commit)
    beside the one already imported; returns it and that copy's ``tansaku.__file__``."""
    ours = {k: m for k, m in sys.modules.items() if k == "tansaku" or k.startswith("tansaku.")}
    for key in ours:
        del sys.modules[key]
    sys.path.insert(0, src)
    try:
        import tansaku
        from tansaku.sources.formats.html import extract

        found = tansaku.__file__
    finally:
        sys.path.remove(src)
        for key in [k for k in sys.modules if k == "tansaku" or k.startswith("tansaku.")]:
            del sys.modules[key]
        sys.modules.update(ours)
    return (lambda raw: extract(raw).text), found


def run(job: dict) -> dict:
    """The job (the module's docstring); with ``"pair_src"`` (``tansaku`` only), the same pages
    are also extracted by the tansaku of that tree, page by page in alternating order, so that
    both are timed under the same load (``result["pair"]``)."""
    name = job["extractor"]
    cross_page = name == "tansaku+cross-page"
    if cross_page:
        from tansaku.sources.boilerplate import strip_repeated

        try:
            from tansaku.index.repeated import _same_page as same_page
        except ImportError:
            same_page = None
    sample = set(job["sample"])
    speed = bool(job.get("speed"))
    files = job["files"] if speed or cross_page else [f for f in job["files"] if f[1] in sample]
    raw = [(package, path, rel, open(path, "rb").read()) for package, path, rel in files]  # noqa: SIM115
    extractors = [extractor(name)]
    if job.get("pair_src"):
        paired, pair_file = _tansaku_from(job["pair_src"])
        extractors.append(paired)
    for extract in extractors:
        for _, _, _, data in raw[: job.get("warmup", 20)]:
            with contextlib.suppress(Exception):
                extract(data)
    clock, cpu = time.perf_counter, time.process_time
    runs = []  # per extractor: its passes' figures and the best pass's texts
    for _ in extractors:
        runs.append({"seconds": [], "cpu_seconds": [], "packages": {}, "failed": 0, "texts": {}})
    stripping: list[float] = []  # the cross-page step's share of each pass (wall-clock)
    for _ in range(max(1, job.get("repeat", 1)) if speed else 1):
        outs: list[dict[str, dict[str, str]]] = [{} for _ in extractors]
        spent: list[dict[str, list[float]]] = [{} for _ in extractors]
        wall = [0.0] * len(extractors)
        used = [0.0] * len(extractors)
        failed = [0] * len(extractors)
        for n, (package, _path, rel, data) in enumerate(raw):
            order = range(len(extractors)) if n % 2 == 0 else reversed(range(len(extractors)))
            for k in order:
                began, began_cpu = clock(), cpu()
                try:
                    text = extractors[k](data)
                except Exception:
                    failed[k] += 1
                    text = ""
                took, took_cpu = clock() - began, cpu() - began_cpu
                outs[k].setdefault(package, {})[rel] = text
                tally = spent[k].setdefault(package, [0, 0.0])
                tally[0] += 1
                tally[1] += took
                wall[k] += took
                used[k] += took_cpu
        if cross_page:
            stripping.append(0.0)
            for package, pages in outs[0].items():
                began, began_cpu = clock(), cpu()
                outs[0][package] = strip_repeated(pages, same_page) if same_page else strip_repeated(pages)
                took = clock() - began
                stripping[-1] += took
                spent[0][package][1] += took
                wall[0] += took
                used[0] += cpu() - began_cpu
        for k, got in enumerate(runs):
            got["seconds"].append(wall[k])
            got["cpu_seconds"].append(used[k])
            got["failed"] = failed[k]
            if wall[k] == min(got["seconds"]):
                got["packages"] = spent[k]
            got["texts"] = {path: outs[k][package][rel] for package, path, rel, _ in raw if path in sample}
    results = [_figures(name, got, len(raw), speed) for got in runs]
    result = results[0]
    if stripping:
        result["cross_page_seconds"] = [round(s, 3) for s in stripping]
    if name.startswith("tansaku"):
        import tansaku

        result["tansaku_file"] = tansaku.__file__
    else:
        result["versions"] = _versions(name)
    if len(results) > 1:
        result["pair"] = {**results[1], "tansaku_file": pair_file}
    return result


def _figures(name: str, got: dict, pages: int, speed: bool) -> dict:
    best, best_cpu = min(got["seconds"]), min(got["cpu_seconds"])
    return {
        "extractor": name,
        "pages": pages,
        "failed": got["failed"],
        "seconds": [round(s, 3) for s in got["seconds"]],
        "cpu_seconds": [round(s, 3) for s in got["cpu_seconds"]],
        "pages_per_s": round(pages / best, 1) if speed and best else None,
        "cpu_pages_per_s": round(pages / best_cpu, 1) if speed and best_cpu else None,
        "packages": {k: [n, round(s, 4)] for k, (n, s) in got["packages"].items()} if speed else {},
        "texts": got["texts"],
    }


def _versions(name: str) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    wanted = {"trafilatura": ("trafilatura", "lxml"), "trafilatura-precision": ("trafilatura", "lxml"),
              "readability": ("readability-lxml", "lxml")}.get(name, ())  # fmt: skip
    out = {}
    for package in wanted:
        with contextlib.suppress(PackageNotFoundError):
            out[package] = version(package)
    return out


if __name__ == "__main__":
    json.dump(run(json.load(sys.stdin)), sys.stdout, ensure_ascii=False)
