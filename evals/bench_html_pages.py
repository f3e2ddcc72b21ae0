"""HTML pages of real manuals: their titles and the first lines of their text (issue 38).

    PYTHONPATH=src .venv/bin/python evals/bench_html_pages.py [--root /tmp/deb-manuals]
        [--json OUT] [--show N] [--parsers]

Not a test (CI does not run it). The pages are five Debian packages' manuals, fetched by hand
(outside the repository) and unpacked side by side under ``--root``::

    apt-get update
    cd /tmp/deb-manuals
    for p in git-doc bash-doc debmake-doc sqlite3-doc postgresql-doc-15; do
        apt-get download $p && dpkg -x $p_*.deb $p
    done

Every ``*.html`` below each package's folder is extracted as tansaku indexes it
(``tansaku.sources.formats.extract``). Per package, the count of pages

- whose title is numbered as a section is (``^\\d+(\\.\\d+)*\\.? ``: "1. Syntax", also PostgreSQL's
  own "47.2. Interface Support Functions"),
- whose title is a generic section heading ("Overview", "Syntax", "Introduction", ... once its
  number is dropped),
- with no title,
- whose text starts with site navigation: one of the first three lines is a ``Prev ... Next``
  line, makeinfo's ``Next: ..., Up: ...``, SQLite's menu (``- Home``, "Small. Fast. Reliable."),
  or the first line is a table row of one cell (DocBook's navheader repeats the title so; two of
  SQLite's pages begin with a one-cell "Editorial Note" table, and are counted too).

``--show N``: the title and first lines of N pages of each package. ``--json``: every page's
title and first five lines (to compare two versions of tansaku). ``--parsers``: also extract
each page with the standard library's parser and count the pages whose text or title differ
from lexbor's.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

PACKAGES = ["git-doc", "bash-doc", "debmake-doc", "sqlite3-doc", "postgresql-doc-15"]
NUMBERED = re.compile(r"^\d+(\.\d+)*\.? ")
GENERIC = {"overview", "syntax", "introduction", "description", "synopsis", "summary", "contents",
           "table of contents", "details", "examples", "notes", "see also", "name"}  # fmt: skip
NAVIGATION = [
    re.compile(p)
    for p in (
        r"\bPrev\b.*\bNext\b",
        r"^(Next|Previous|Up): ",
        r"^- (Home|About|Documentation)$",
        r"^Small\. Fast\. Reliable\.",
        r"^Choose any three",
        r"^\| (Prev|Next|Up|Home) ",
    )
]
ONE_CELL_ROW = re.compile(r"\| [^|]+ \|")
COLUMNS = ("pages", "numbered", "generic", "untitled", "nav_start", "parsers_differ")


def starts_with_navigation(lines: list[str]) -> bool:
    if lines and ONE_CELL_ROW.fullmatch(lines[0]):
        return True
    return any(r.search(line) for line in lines[:3] for r in NAVIGATION)


def main() -> None:
    from tansaku.sources.formats import extract, html

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=Path("/tmp/deb-manuals"))
    parser.add_argument("--json", type=Path, help="every page's title and first lines, here")
    parser.add_argument("--show", type=int, default=0, metavar="N", help="print N pages of each package")
    parser.add_argument("--parsers", action="store_true", help="compare lexbor's and the stdlib's")
    args = parser.parse_args()

    pages: dict[str, dict] = {}
    totals: dict[str, dict[str, int]] = {}
    for package in PACKAGES:
        files = sorted(p for p in (args.root / package).rglob("*.html") if p.is_file())
        if not files:
            raise SystemExit(f"no pages under {args.root / package}: see this script's docstring")
        row = dict.fromkeys(COLUMNS, 0)
        for path in files:
            raw = path.read_bytes()
            got = extract("html", raw, 1 << 30)
            lines = [line for line in got.text.splitlines() if line.strip()][:5]
            pages[str(path.relative_to(args.root))] = {"title": got.title, "first": lines}
            row["pages"] += 1
            row["numbered"] += NUMBERED.match(got.title) is not None
            row["generic"] += NUMBERED.sub("", got.title).strip().lower() in GENERIC
            row["untitled"] += not got.title
            row["nav_start"] += starts_with_navigation(lines)
            if args.parsers:
                plain = html.to_markdown(html.decode(raw), html._MAIN.search(raw) is not None, tree=False)
                row["parsers_differ"] += plain != got
        totals[package] = row
        shown = list(pages)[-len(files) :][:: max(1, len(files) // max(1, args.show))][: args.show]
        for name in shown:
            print(f"{name}\n  title: {pages[name]['title']!r}")
            for line in pages[name]["first"][:4]:
                print(f"    {line[:100]}")
    totals["all"] = {c: sum(row[c] for row in totals.values()) for c in COLUMNS}
    print(f"| package | {' | '.join(COLUMNS[: 6 if args.parsers else 5])} |")
    print(f"|---|{'---:|' * (6 if args.parsers else 5)}")
    for package, row in totals.items():
        print(f"| {package} | {' | '.join(str(row[c]) for c in COLUMNS[: 6 if args.parsers else 5])} |")
    if args.json:
        args.json.write_text(json.dumps(pages, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
