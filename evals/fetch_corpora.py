"""Fetch the evaluation corpora from package registries into ``evals/cache/corpora/NAME/``.

    .venv/bin/python evals/fetch_corpora.py [--cache evals/cache] [--force | --check] [NAME...]

Every corpus is built from pinned registry packages, so that the judged query sets in
``evals/sets/`` (which name files by their path inside a corpus) stay valid:

- ``python-docs``: Debian's ``python3.11-doc``; the reST sources (``*.rst.txt``) found under
  ``usr/share/doc/python3.11/html/_sources/``, with their relative paths (``library/pathlib.rst.txt``).
- ``python-html``: the same package's HTML pages (``library/pathlib.html``; the indexes, search
  and download pages left out), read by ``evals/bench_formats.py``.
- ``npm-docs``: the npm registry's ``npm`` package; the Markdown docs under ``package/docs/content/``
  (``commands/npm-install.md``, ``configuring-npm/package-json.md``, ...).
- ``zh-docs``: Chinese prose from Debian's ``debian-reference-zh-cn`` (12 chapters, one HTML page
  each, split into one file per section: ``reference/ch04-02_managing-account-and-password-information.md``)
  and ``debian-faq-zh-cn`` (one file per FAQ chapter: ``faq/pkg-basics.md``), converted from HTML
  to Markdown-ish text with the standard library's ``html.parser``.
- ``py-src``: the source distribution of PyPI's ``click`` (a pure-Python package): its ``.py``
  files and its reST/Markdown docs, with their paths inside the sdist (``src/click/core.py``,
  ``tests/test_options.py``, ``docs/options.rst``).
- ``man-pages``: the English man pages (``usr/share/man/manN/``; translations and aliases skipped)
  of 22 Debian packages (``coreutils``, ``findutils``, ``grep``, ``tar``, ``util-linux``,
  ``procps``, ``openssh-client``, ``rsync``, ``manpages``, ...), one plain-text file per page
  (``man1/ls.1.txt``, ``man5/passwd.5.txt``). The conversion needs ``groff`` (Debian's
  ``groff-base``) and ``col`` (``bsdextrautils``) on this machine: ``groff -man -Tutf8``
  without hyphenation, then ``col -bx``.
- ``man-manuals``: the same conversion of the English man pages of long command-line references
  not in ``man-pages``: ``tmux``, ``screen``, ``curl``, ``wget``, ``gpg``, ``strace``, ``make``,
  ``gawk`` and ``systemd`` (``man1/tmux.1.txt``, ``man5/systemd.exec.5.txt``).
- ``html-manuals``: four Debian HTML manuals as their site generators wrote them, navigation,
  headers, footers, redirect stubs, indexes and translations included, one folder per package:
  ``sphinx-doc/`` (Sphinx's own manual, Sphinx), ``debian-reference-en/`` (the Debian Reference,
  DocBook XSL, one long page per chapter), ``zsh-doc/`` (the zsh manual and FAQ, texi2any, one
  page per chapter plus a redirect page per node) and ``apache2-doc/`` (the Apache HTTP Server
  manual, Apache's XSLT, English and its translations: ``apache2-doc/en/mod/mod_rewrite.html``,
  ``apache2-doc/fr/mod/mod_rewrite.html``). Every regular ``*.html`` file of each tree is copied
  unchanged (symlinks, stylesheets, scripts and images left out).
- ``man-pages-zh``: the Simplified Chinese man pages of Debian's ``manpages-zh``
  (``usr/share/man/zh_CN/manN/``), with the same paths (``man1/ls.1.txt``); read as UTF-8
  (``groff -Kutf8``), left-aligned, and with the source's line breaks inside Chinese text joined
  (a break between two CJK characters would put a space inside a word).

Each corpus folder gets a ``.corpus.json``::

    {"name", "description", "source", "packages", "builder", "files", "bytes", "fetched_at", "sha256"}

(plus "warnings" when a pinned version had to be replaced).

``source`` names the package(s) and exact version(s); ``sha256`` covers the sorted relative paths
and the contents of every file (``.corpus.json`` excluded), so a corpus changed on disk is
detected. A run is idempotent: a corpus whose ``.corpus.json`` exists and still matches its files
(and this script's ``builder`` version) is left alone; anything else is fetched again into a
staging folder and swapped in whole. ``--check`` only verifies (exit 1 when a corpus is missing or
changed); ``--force`` fetches again regardless.

Only the package registries are used (``apt-get download``, ``npm pack``, ``pip download``);
nothing is installed.
If a pinned version is no longer served (Debian replaces point releases), the current one is
fetched instead and a warning says so: the query sets were judged on the pinned version.

The eval runner can call :func:`ensure_corpus` (returns the corpus folder) instead of the CLI.
"""

from __future__ import annotations

import argparse
import datetime as dt
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

EVALS = Path(__file__).resolve().parent
DEFAULT_CACHE = EVALS / "cache"
META_FILE = ".corpus.json"
# Bump when the way a corpus is built from its packages changes (paths kept, HTML conversion, ...):
# a cached corpus with another builder version is fetched again.
BUILDER_VERSION = 1


class CorpusError(Exception):
    """A corpus could not be fetched; the message says why and what to do."""


@dataclass(frozen=True)
class Package:
    registry: str  # "debian", "npm" or "pypi"
    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.registry}:{self.name}={self.version}"


@dataclass
class BuildContext:
    """What a corpus builder gets: where to put the files, a scratch folder, and a warn hook."""

    out: Path
    work: Path
    packages: list[Package] = field(default_factory=list)  # what was actually fetched
    warnings: list[str] = field(default_factory=list)

    def warn(self, message: str) -> None:
        self.warnings.append(message)
        print(f"  warning: {message}", file=sys.stderr)


@dataclass(frozen=True)
class CorpusSpec:
    name: str
    description: str
    pins: tuple[Package, ...]
    build: Callable[[CorpusSpec, BuildContext], None]


# --------------------------------------------------------------------------------------------
# Registry clients


def _run(cmd: Sequence[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=cwd, capture_output=True, text=True, check=False)


def _require_tool(tool: str, why: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise CorpusError(f"`{tool}` is not available on this machine: {why}")
    return path


def apt_download(pin: Package, dest: Path, ctx: BuildContext) -> Path:
    """Download the .deb for ``pin`` (falling back to the current version) into ``dest``."""
    why = (
        f"{pin.name} comes from Debian's archive, so this corpus needs a Debian or Ubuntu machine "
        "with apt-get and dpkg-deb"
    )
    _require_tool("apt-get", why)
    _require_tool("dpkg-deb", why)
    # apt-get download runs as user _apt where it can; a world-readable folder avoids its warning.
    dest.chmod(0o755)

    def attempt(spec: str) -> subprocess.CompletedProcess[str]:
        return _run(["apt-get", "download", "-q", spec], cwd=dest)

    pinned = f"{pin.name}={pin.version}"
    result = attempt(pinned)
    if result.returncode != 0:
        # Missing or stale package lists are the usual cause: refresh them once (root only; a
        # non-root run without lists gets told what to do), then try the pinned version again.
        if _is_root():
            _apt_update()
            result = attempt(pinned)
        elif _package_lists_missing(result.stderr):
            raise CorpusError(
                f"apt-get download {pin.name} failed and apt's package lists look missing; "
                f"`apt-get update` needs root: run `sudo apt-get update`, then this script again"
                f"\n{_tail(result.stderr)}"
            )
    if result.returncode != 0:
        fallback = attempt(pin.name)  # the pinned point release is gone: take the current one
        if fallback.returncode != 0:
            raise CorpusError(
                f"apt-get download {pin.name} failed:\n{_tail(result.stderr)}\n{_tail(fallback.stderr)}"
            )
    debs = sorted(dest.glob(f"{pin.name}_*.deb"))
    if not debs:
        raise CorpusError(f"apt-get download {pin.name} reported success but left no .deb in {dest}")
    deb = debs[-1]
    version = _run(["dpkg-deb", "-f", str(deb), "Version"]).stdout.strip()
    if version != pin.version:
        ctx.warn(
            f"{pin.name} {pin.version} is no longer served; using {version}. The query sets were "
            f"judged on {pin.version}: check that the files they name still exist."
        )
    ctx.packages.append(Package("debian", pin.name, version))
    return deb


def _package_lists_missing(stderr: str) -> bool:
    return any(
        marker in stderr
        for marker in ("Unable to locate package", "has no installation candidate", "Can't find a source")
    )


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


_apt_updated = False


def _apt_update() -> None:
    """``apt-get update``, at most once per run."""
    global _apt_updated
    if _apt_updated:
        return
    print("  apt-get update ...", file=sys.stderr)
    result = _run(["apt-get", "update", "-q"])
    if result.returncode != 0:
        raise CorpusError(f"apt-get update failed:\n{_tail(result.stderr)}")
    _apt_updated = True


def deb_extract(deb: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    result = _run(["dpkg-deb", "-x", str(deb), str(dest)])
    if result.returncode != 0:
        raise CorpusError(f"dpkg-deb -x {deb.name} failed:\n{_tail(result.stderr)}")
    return dest


def npm_pack(pin: Package, dest: Path, ctx: BuildContext) -> Path:
    """``npm pack NAME@VERSION`` into ``dest``; returns the tarball."""
    _require_tool("npm", f"the {pin.name} package comes from the npm registry; install Node.js and npm")
    result = _run(["npm", "pack", f"{pin.name}@{pin.version}", "--json", "--pack-destination", str(dest)])
    if result.returncode != 0:
        raise CorpusError(f"npm pack {pin.name}@{pin.version} failed:\n{_tail(result.stderr)}")
    try:
        info = json.loads(result.stdout)[0]
        tarball = dest / info["filename"]
        version = info["version"]
    except (ValueError, LookupError, TypeError) as exc:
        raise CorpusError(f"could not read the output of npm pack: {exc}") from exc
    if version != pin.version:
        ctx.warn(f"npm pack returned {pin.name} {version}, not the pinned {pin.version}")
    ctx.packages.append(Package("npm", pin.name, version))
    return tarball


def pip_sdist(pin: Package, dest: Path, ctx: BuildContext) -> Path:
    """``pip download --no-deps --no-binary :all: NAME==VERSION`` into ``dest``; returns the sdist.

    Only the archive is downloaded (pip may run the sdist's build backend to read its metadata,
    in its own isolated environment); nothing is installed.
    """
    pip = [sys.executable, "-m", "pip"]
    if _run([*pip, "--version"]).returncode != 0:
        pip = [_require_tool("pip", f"the {pin.name} package comes from PyPI; install pip")]
    result = _run(
        [*pip, "download", "--no-deps", "--no-binary", ":all:", "--disable-pip-version-check",
         "--dest", str(dest), f"{pin.name}=={pin.version}"]
    )  # fmt: skip
    if result.returncode != 0:
        raise CorpusError(f"pip download {pin.name}=={pin.version} failed:\n{_tail(result.stderr)}")
    stem = re.sub(r"[-_.]+", "[-_.]", re.escape(pin.name))  # sdist names normalise - _ and .
    found = [
        path
        for path in dest.iterdir()
        if re.fullmatch(rf"(?i){stem}-.+\.tar\.gz", path.name) and path.is_file()
    ]
    if len(found) != 1:
        raise CorpusError(f"pip download {pin.name} left {len(found)} source archives in {dest}")
    (sdist,) = found
    version = sdist.name[len(pin.name) + 1 :].removesuffix(".tar.gz")
    if version != pin.version:
        ctx.warn(f"pip download returned {pin.name} {version}, not the pinned {pin.version}")
    ctx.packages.append(Package("pypi", pin.name, version))
    return sdist


def _tail(text: str, lines: int = 8) -> str:
    return "\n".join("    " + line for line in text.strip().splitlines()[-lines:])


# --------------------------------------------------------------------------------------------
# Corpus builders


def build_python_docs(spec: CorpusSpec, ctx: BuildContext) -> None:
    (pin,) = spec.pins
    deb = apt_download(pin, ctx.work, ctx)
    root = deb_extract(deb, ctx.work / "x")
    sources = root / "usr/share/doc/python3.11/html/_sources"
    if not sources.is_dir():
        raise CorpusError(f"{deb.name} has no usr/share/doc/python3.11/html/_sources/")
    for src in sorted(sources.rglob("*.rst.txt")):
        if src.is_file():
            target = ctx.out / src.relative_to(sources)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)


# Pages of the HTML docs that are not documents: indexes, search, the download page.
_HTML_NOT_DOCUMENTS = frozenset({"genindex.html", "search.html", "py-modindex.html", "download.html"})


def build_python_html(spec: CorpusSpec, ctx: BuildContext) -> None:
    """The same package's HTML pages (``library/pathlib.html``), for document-format benches."""
    (pin,) = spec.pins
    deb = apt_download(pin, ctx.work, ctx)
    root = deb_extract(deb, ctx.work / "x") / "usr/share/doc/python3.11/html"
    if not root.is_dir():
        raise CorpusError(f"{deb.name} has no usr/share/doc/python3.11/html/")
    for src in sorted(root.rglob("*.html")):
        rel = src.relative_to(root)
        if rel.parts[0].startswith("_") or rel.name.startswith("genindex") or rel.name in _HTML_NOT_DOCUMENTS:
            continue
        if src.is_file() and not src.is_symlink():
            target = ctx.out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)


def build_npm_docs(spec: CorpusSpec, ctx: BuildContext) -> None:
    (pin,) = spec.pins
    tarball = npm_pack(pin, ctx.work, ctx)
    prefix = "package/docs/content/"
    with tarfile.open(tarball, "r:gz") as tar:
        for member in tar.getmembers():
            if not (member.isfile() and member.name.startswith(prefix) and member.name.endswith(".md")):
                continue
            rel = Path(member.name[len(prefix) :])
            if rel.is_absolute() or ".." in rel.parts:
                continue
            data = tar.extractfile(member)
            if data is None:
                continue
            target = ctx.out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data.read())


PY_SRC_SUFFIXES = (".py", ".rst", ".md")


def build_py_src(spec: CorpusSpec, ctx: BuildContext) -> None:
    (pin,) = spec.pins
    sdist = pip_sdist(pin, ctx.work, ctx)
    if not sdist.name.endswith(".tar.gz"):
        raise CorpusError(f"{sdist.name} is not a .tar.gz sdist")
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar.getmembers():
            # Every path in an sdist starts with its NAME-VERSION/ folder, which is dropped.
            rel = Path(*Path(member.name).parts[1:])
            if not (member.isfile() and member.name.endswith(PY_SRC_SUFFIXES)):
                continue
            if Path(member.name).is_absolute() or ".." in rel.parts or not rel.parts:
                continue
            data = tar.extractfile(member)
            if data is None:
                continue
            target = ctx.out / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data.read())
    count = sum(1 for _ in ctx.out.rglob("*.py"))
    if count < 10:
        raise CorpusError(f"py-src came out with only {count} .py files; the sdist's layout changed?")


def build_zh_docs(spec: CorpusSpec, ctx: BuildContext) -> None:
    reference_pin, faq_pin = spec.pins

    deb = apt_download(reference_pin, ctx.work, ctx)
    root = deb_extract(deb, ctx.work / "reference")
    pages = sorted((root / "usr/share/debian-reference").glob("*.zh-cn.html"))
    book = "Debian 参考手册"
    for page in pages:
        stem = page.name.split(".")[0]  # ch04, pr01, apa; index is the table of contents
        if stem == "index":
            continue
        doc = html_to_sections(page.read_text(encoding="utf-8"), split_level=2)
        for index, section in enumerate(doc.sections):
            if index == 0 and len(section.body_text()) < 40:
                continue  # a chapter heading with no prose of its own before its first section
            slug = _slug(section.anchor) or f"section-{index}"
            crumb = book if index == 0 else f"{book} › {doc.sections[0].title}"
            _write_md(ctx.out / "reference" / f"{stem}-{index:02d}_{slug}.md", section, crumb)

    deb = apt_download(faq_pin, ctx.work, ctx)
    root = deb_extract(deb, ctx.work / "faq")
    pages = sorted((root / "usr/share/doc/debian/FAQ/zh-cn").glob("*.zh-cn.html"))
    book = "Debian GNU/Linux 常见问题（FAQ）"
    for page in pages:
        stem = page.name.split(".")[0]
        if stem == "index":
            continue
        doc = html_to_sections(page.read_text(encoding="utf-8"), split_level=None)
        (section,) = doc.sections
        _write_md(ctx.out / "faq" / f"{stem}.md", section, book)

    count = sum(1 for _ in ctx.out.rglob("*.md"))
    if count < 60:
        raise CorpusError(f"zh-docs came out with only {count} documents; the packages' layout changed?")


def _write_md(path: Path, section: Section, crumb: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = section.markdown()
    path.write_text(f"# {section.title}\n\n{crumb}\n\n{body}\n", encoding="utf-8")


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60].rstrip("-")


# The man pages are turned into text by this machine's groff (Debian's groff-base, which man-db
# uses too) and col (bsdextrautils); the man-pages set was judged on text made by this version.
MAN_GROFF = Package("debian", "groff-base", "1.22.4-10")
# groff's typographic characters, written as a terminal user types them (hyphens and minus signs
# in options, quotes in messages).
_MAN_ASCII = str.maketrans(
    {"\u2010": "-", "\u2011": "-", "\u2212": "-", "\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}
)


def build_man_pages(
    spec: CorpusSpec,
    ctx: BuildContext,
    man_dir: str = "usr/share/man",
    min_pages: int = 300,
    chinese: bool = False,
) -> None:
    """One text file per page of ``man_dir/manN/`` in the pinned packages (``man1/ls.1.txt``)."""
    why = (
        f"the {spec.name} corpus converts groff sources to text with groff and col; install them "
        "with `apt-get install groff-base bsdextrautils`"
    )
    groff = _require_tool("groff", why)
    col = _require_tool("col", why)
    installed = _run(["dpkg-query", "-W", "-f", "${Version}", MAN_GROFF.name]).stdout.strip()
    if installed != MAN_GROFF.version:
        ctx.warn(
            f"man pages are converted with {MAN_GROFF.name} {installed or '(not a dpkg package)'}, "
            f"the man-pages set was judged on text made by {MAN_GROFF.version}"
        )
    for pin in spec.pins:
        deb = apt_download(pin, ctx.work, ctx)
        root = deb_extract(deb, ctx.work / f"x-{pin.name}")
        # One language only: in usr/share/man/manN/ English, translations in usr/share/man/LANG/manN/.
        for section in sorted((root / man_dir).glob("man[1-9]")):
            for src in sorted(section.iterdir()):
                if src.is_symlink() or not src.is_file():
                    continue  # an alias of another page (egrep.1.gz -> grep.1.gz)
                source = src.read_bytes()
                if src.suffix == ".gz":
                    source = gzip.decompress(source)
                if _man_is_alias(source):
                    continue
                target = ctx.out / section.name / (src.name.removesuffix(".gz") + ".txt")
                if target.exists():
                    ctx.warn(f"{target.relative_to(ctx.out)} is in two packages; kept the first")
                    continue
                text = _man_to_text(groff, col, source, f"{pin.name}: {src.name}", chinese)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
    count = sum(1 for _ in ctx.out.rglob("*.txt"))
    if count < min_pages:
        raise CorpusError(f"{spec.name} came out with only {count} pages; the packages' layout changed?")


# html-manuals: package (its folder in the corpus) -> (the HTML tree inside the package, file glob)
HTML_MANUAL_TREES: dict[str, tuple[str, str]] = {
    "sphinx-doc": ("usr/share/doc/sphinx-doc/html", "*.html"),
    "debian-reference-en": ("usr/share/debian-reference", "*.en.html"),
    "zsh-doc": ("usr/share/doc/zsh-common/html", "*.html"),
    "apache2-doc": ("usr/share/doc/apache2-doc/manual", "*.html"),
}


def build_html_manuals(spec: CorpusSpec, ctx: BuildContext) -> None:
    """The HTML pages of each pinned manual, unchanged, under ``<package>/<path in its tree>``."""
    for pin in spec.pins:
        tree, pattern = HTML_MANUAL_TREES[pin.name]
        deb = apt_download(pin, ctx.work, ctx)
        root = deb_extract(deb, ctx.work / f"x-{pin.name}") / tree
        if not root.is_dir():
            raise CorpusError(f"{deb.name} has no {tree}/")
        copied = 0
        for src in sorted(root.rglob(pattern)):
            if src.is_symlink() or not src.is_file():
                continue
            target = ctx.out / pin.name / src.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, target)
            copied += 1
        if copied < 10:
            raise CorpusError(f"{pin.name} gave only {copied} HTML pages under {tree}/; its layout changed?")


def build_man_manuals(spec: CorpusSpec, ctx: BuildContext) -> None:
    build_man_pages(spec, ctx, min_pages=150)


def build_man_pages_zh(spec: CorpusSpec, ctx: BuildContext) -> None:
    build_man_pages(spec, ctx, man_dir="usr/share/man/zh_CN", min_pages=500, chinese=True)


def _man_is_alias(source: bytes) -> bool:
    """A page that is only ``.so man7/other.7`` (and comments) is another page's alias."""
    lines = [
        line.strip() for line in source.decode("utf-8", "replace").splitlines()
        if line.strip() and not line.lstrip().startswith(('.\\"', "'\\\""))
    ]  # fmt: skip
    return bool(lines) and all(line.startswith(".so ") for line in lines)


def _man_to_text(groff: str, col: str, source: bytes, label: str, chinese: bool = False) -> str:
    """``groff -man -Tutf8`` (no hyphenation, 78 columns, tbl tables) then ``col -bx``.

    Words are never hyphenated at line ends, so that they stay searchable: ``-rHY=0`` for man(7)
    pages, and a ``.hla none`` (no hyphenation patterns) before the page for mdoc(7) ones (ssh).

    ``chinese`` pages are read as UTF-8 (``-Kutf8``, not preconv's guess), set left-aligned
    (groff cannot break a run of CJK characters, and justifying the lines around one pads them
    with spaces), and their source lines joined where a line break falls between two CJK
    characters (groff would put a space there, inside a word).
    """
    env = {**os.environ, "LC_ALL": "C.UTF-8", "GROFF_NO_SGR": "1"}
    cmd = [groff, "-k", "-t", "-man", "-Tutf8", "-rLL=78n", "-rLT=78n", "-rHY=0", "-P-c"]
    prelude = b".hla none\n"
    if chinese:
        cmd[1] = "-Kutf8"
        prelude += b".ad l\n"
        source = _join_cjk_lines(source.decode("utf-8", "replace")).encode("utf-8")
    typeset = subprocess.run(cmd, input=prelude + source, capture_output=True, env=env, check=False)
    if typeset.returncode != 0 or not typeset.stdout.strip():
        stderr = typeset.stderr.decode("utf-8", "replace")
        raise CorpusError(f"groff could not convert {label}:\n{_tail(stderr)}")
    plain = subprocess.run([col, "-bx"], input=typeset.stdout, capture_output=True, env=env, check=False)
    if plain.returncode != 0:
        raise CorpusError(f"col -bx failed on {label}:\n{_tail(plain.stderr.decode('utf-8', 'replace'))}")
    text = plain.stdout.decode("utf-8", "replace").translate(_MAN_ASCII)
    lines = [line.rstrip() for line in text.splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
    return text + "\n"


_CJK_CHAR = "\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"
_CJK_END = re.compile(rf"[{_CJK_CHAR}]$")
_CJK_START = re.compile(rf"[{_CJK_CHAR}]")
_NO_FILL = {"nf": True, "EX": True, "TS": True, "fi": False, "EE": False, "TE": False}


def _join_cjk_lines(source: str) -> str:
    """Join text lines whose break falls between two CJK characters (not in .nf, .EX or tables)."""
    lines: list[str] = []
    no_fill = joinable = False
    for line in source.splitlines():
        if line.startswith((".", "'")):
            words = line[1:].split()
            no_fill = _NO_FILL.get(words[0], no_fill) if words else no_fill
            joinable = False
        elif joinable and _CJK_START.match(line):
            lines[-1] += line
            joinable = bool(_CJK_END.search(line))
            continue
        else:
            joinable = not no_fill and bool(_CJK_END.search(line))
        lines.append(line)
    return "\n".join(lines) + "\n"


CORPORA: dict[str, CorpusSpec] = {
    spec.name: spec
    for spec in (
        CorpusSpec(
            "python-docs",
            "Python 3.11 documentation, reST sources",
            (Package("debian", "python3.11-doc", "3.11.2-6+deb12u8"),),
            build_python_docs,
        ),
        CorpusSpec(
            "python-html",
            "Python 3.11 documentation, HTML pages (for evals/bench_formats.py)",
            (Package("debian", "python3.11-doc", "3.11.2-6+deb12u8"),),
            build_python_html,
        ),
        CorpusSpec(
            "npm-docs",
            "npm CLI documentation, Markdown",
            (Package("npm", "npm", "10.9.4"),),
            build_npm_docs,
        ),
        CorpusSpec(
            "zh-docs",
            "Debian Reference and Debian FAQ in Simplified Chinese, converted to Markdown",
            (
                Package("debian", "debian-reference-zh-cn", "2.100"),
                Package("debian", "debian-faq-zh-cn", "11.1"),
            ),
            build_zh_docs,
        ),
        CorpusSpec(
            "py-src",
            "click 8.1.7 sdist: Python source, tests, examples and reST docs",
            (Package("pypi", "click", "8.1.7"),),
            build_py_src,
        ),
        CorpusSpec(
            "man-pages",
            "English man pages of common Debian command-line packages, converted to plain text",
            (
                Package("debian", "coreutils", "9.1-1"),
                Package("debian", "findutils", "4.9.0-4"),
                Package("debian", "grep", "3.8-5"),
                Package("debian", "sed", "4.9-1+deb12u1"),
                Package("debian", "tar", "1.34+dfsg-1.2+deb12u1"),
                Package("debian", "gzip", "1.12-1"),
                Package("debian", "diffutils", "1:3.8-4"),
                Package("debian", "util-linux", "2.38.1-5+deb12u3"),
                Package("debian", "mount", "2.38.1-5+deb12u3"),
                Package("debian", "bsdutils", "1:2.38.1-5+deb12u3"),
                Package("debian", "procps", "2:4.0.2-3"),
                Package("debian", "passwd", "1:4.13+dfsg1-1+deb12u2"),
                Package("debian", "sudo", "1.9.13p3-1+deb12u4"),
                Package("debian", "cron", "3.0pl1-162"),
                Package("debian", "openssh-client", "1:9.2p1-2+deb12u10"),
                Package("debian", "openssh-server", "1:9.2p1-2+deb12u10"),
                Package("debian", "rsync", "3.5.0+ds1-0+deb12u1"),
                Package("debian", "iproute2", "6.1.0-3"),
                Package("debian", "bash", "5.2.15-2+b13"),
                Package("debian", "less", "590-2.1~deb12u2"),
                Package("debian", "man-db", "2.11.2-2"),
                Package("debian", "manpages", "6.03-2"),
            ),
            build_man_pages,
        ),
        CorpusSpec(
            "man-manuals",
            "English man pages of long command-line references (tmux, curl, gpg, systemd, ...), plain text",
            (
                Package("debian", "tmux", "3.3a-3"),
                Package("debian", "screen", "4.9.0-4"),
                Package("debian", "curl", "7.88.1-10+deb12u15"),
                Package("debian", "wget", "1.21.3-1+deb12u1"),
                Package("debian", "gpg", "2.2.40-1.1+deb12u2"),
                Package("debian", "strace", "6.1-0.1"),
                Package("debian", "make", "4.3-4.1"),
                Package("debian", "gawk", "1:5.2.1-2"),
                Package("debian", "systemd", "252.39-1~deb12u2"),
            ),
            build_man_manuals,
        ),
        CorpusSpec(
            "html-manuals",
            "Four Debian HTML manuals as shipped (Sphinx, DocBook, texi2any, Apache XSLT with translations)",
            (
                Package("debian", "sphinx-doc", "5.3.0-4"),
                Package("debian", "debian-reference-en", "2.100"),
                Package("debian", "zsh-doc", "5.9-4"),
                Package("debian", "apache2-doc", "2.4.71-1~deb12u1"),
            ),
            build_html_manuals,
        ),
        CorpusSpec(
            "man-pages-zh",
            "Simplified Chinese man pages of Debian's manpages-zh, converted to plain text",
            (Package("debian", "manpages-zh", "1.6.4.0-1"),),
            build_man_pages_zh,
        ),
    )
}


# --------------------------------------------------------------------------------------------
# HTML to Markdown-ish text (DocBook output, as Debian's manuals are built)

_SKIP_TAGS = {"head", "script", "style", "noscript", "template", "svg", "object", "iframe"}
_SKIP_CLASSES = {"navheader", "navfooter", "toc", "list-of-tables", "list-of-figures", "list-of-examples"}
_ADMONITIONS = {"note", "tip", "warning", "caution", "important"}
_BLOCK_TAGS = {
    "p", "div", "section", "article", "blockquote", "dl", "dt", "dd", "ul", "ol", "table", "hr",
    "figure", "figcaption", "caption", "address", "body", "html",
}  # fmt: skip
_VOID_TAGS = {"br", "img", "hr", "meta", "link", "input", "col", "area", "base", "wbr", "source"}
_CJK = r"\u2e80-\u9fff\u3000-\u303f\uf900-\ufaff\uff00-\uffef"
_CJK_GAP = re.compile(rf"(?<=[{_CJK}])[ \t\n]+(?=[{_CJK}])")
_SPACES = re.compile(r"[ \t\r\n\f\v\xa0]+")  # \xa0: DocBook puts &nbsp; in "第 2.7.2 节"


@dataclass
class Section:
    title: str = ""
    anchor: str = ""
    blocks: list[str] = field(default_factory=list)

    def markdown(self) -> str:
        return "\n\n".join(block for block in self.blocks if block.strip())

    def body_text(self) -> str:
        return "".join(block for block in self.blocks if not block.startswith("#")).strip()


@dataclass
class HtmlDoc:
    sections: list[Section]


class _DocBookToMarkdown(HTMLParser):
    """A small, forgiving converter: headings, paragraphs, lists, tables, code blocks.

    With ``split_level`` set, every heading of that level starts a new :class:`Section` (the text
    before the first one is section 0, titled by the page's h1); headings below it are written
    relative to it (the split heading is the file's ``#``).
    """

    def __init__(self, split_level: int | None) -> None:
        super().__init__(convert_charrefs=True)
        self.split_level = split_level
        self.sections: list[Section] = [Section()]
        self.stack: list[tuple[str, bool, bool]] = []  # (tag, skips subtree, is admonition)
        self.skip_depth = 0
        self.inline: list[str] = []  # the text of the block being built
        self.heading: int | None = None
        self.heading_anchor = ""
        self.pre_depth = 0
        self.lists: list[str] = []  # "ul" / "ol" of the open lists
        self.pending_prefix = ""
        self.row: list[str] | None = None
        self.cell: list[str] | None = None
        self.table_rows: list[str] = []
        self.admonition_depth = 0
        self.code_depth = 0

    # -- helpers --------------------------------------------------------------------------

    @property
    def current(self) -> Section:
        return self.sections[-1]

    def _text(self, text: str) -> None:
        if self.cell is not None and self.admonition_depth == 0:
            self.cell.append(text)
        else:
            self.inline.append(text)

    def _flush(self) -> None:
        raw = "".join(self.inline)
        self.inline = []
        if self.pre_depth:
            return
        text = _CJK_GAP.sub("", _SPACES.sub(" ", raw)).strip()
        if not text:
            return
        prefix, self.pending_prefix = self.pending_prefix, ""
        self.current.blocks.append(prefix + text)

    def _heading_level(self, level: int) -> int:
        base = self.split_level if self.split_level is not None else 1
        return max(1, min(6, level - base + 1))

    # -- parser callbacks -----------------------------------------------------------------

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {key: value or "" for key, value in attrs}
        classes = set(attr.get("class", "").split())
        skip = tag in _SKIP_TAGS or bool(classes & _SKIP_CLASSES)
        admonition = tag == "div" and bool(classes & _ADMONITIONS) and not skip and not self.skip_depth
        if tag not in _VOID_TAGS:
            self.stack.append((tag, skip, admonition))
            if skip:
                self.skip_depth += 1
        if self.skip_depth:
            return
        if tag == "a" and attr.get("id") and self.heading is not None and not self.heading_anchor:
            self.heading_anchor = attr["id"]
        if admonition:
            self._flush()
            self.admonition_depth += 1
        if re.fullmatch(r"h[1-6]", tag):
            self._flush()
            self.heading = int(tag[1])
            self.heading_anchor = attr.get("id", "")
        elif tag == "pre":
            self._flush()
            self.pre_depth += 1
        elif tag == "br":
            self._text("\n" if self.pre_depth else " ")
        elif tag in ("ul", "ol"):
            self._flush()
            self.lists.append(tag)
        elif tag == "li":
            self._flush()
            indent = "  " * max(0, len(self.lists) - 1)
            marker = "1. " if self.lists and self.lists[-1] == "ol" else "- "
            self.pending_prefix = indent + marker
        elif tag == "table" and self.admonition_depth == 0:
            self._flush()
            self.table_rows = []
        elif tag == "tr" and self.admonition_depth == 0:
            self._flush()
            self.row = []
        elif tag in ("td", "th") and self.row is not None and self.admonition_depth == 0:
            self.cell = []
        elif tag == "code":
            if self.code_depth == 0 and not self.pre_depth and self.heading is None:
                self._text("`")
            self.code_depth += 1
        elif tag in _BLOCK_TAGS or tag in ("td", "th", "tr"):
            self._flush()

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID_TAGS:
            return
        # Close up to the matching open tag (HTML in the wild has unclosed elements).
        if not any(entry[0] == tag for entry in self.stack):
            return
        while self.stack:
            open_tag, skipped, admonition = self.stack.pop()
            if skipped:
                self.skip_depth -= 1
            elif not self.skip_depth:
                self._close(open_tag, admonition)
            if open_tag == tag:
                break

    def _close(self, tag: str, admonition: bool) -> None:
        if re.fullmatch(r"h[1-6]", tag) and self.heading is not None:
            title = _CJK_GAP.sub("", _SPACES.sub(" ", "".join(self.inline))).strip()
            self.inline = []
            level, self.heading = self.heading, None
            self._add_heading(level, title)
        elif tag == "pre":
            code = "".join(self.inline).strip("\n")
            self.inline = []
            self.pre_depth = max(0, self.pre_depth - 1)
            if code.strip():
                self.current.blocks.append(f"```\n{code}\n```")
        elif tag in ("ul", "ol"):
            self._flush()
            if self.lists:
                self.lists.pop()
        elif tag in ("td", "th") and self.cell is not None:
            text = _CJK_GAP.sub("", _SPACES.sub(" ", "".join(self.cell))).strip()
            self.row = [*(self.row or []), text.replace("|", "\\|")]
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if any(self.row):
                self.table_rows.append("| " + " | ".join(self.row) + " |")
            self.row = None
        elif tag == "table" and self.admonition_depth == 0:
            if self.table_rows:
                self.current.blocks.append("\n".join(self.table_rows))
            self.table_rows = []
        elif tag == "code":
            self.code_depth = max(0, self.code_depth - 1)
            if self.code_depth == 0 and not self.pre_depth and self.heading is None:
                self._text("`")
        elif admonition:
            self._flush()
            self.admonition_depth -= 1
        elif tag in _BLOCK_TAGS or tag == "li":
            self._flush()

    def _add_heading(self, level: int, title: str) -> None:
        if self.split_level is not None and level == self.split_level:
            self.sections.append(Section(title=title, anchor=self.heading_anchor))
        elif level < (self.split_level or 2) and not self.current.title:
            self.current.title = title  # the page title (h1)
            self.current.anchor = self.heading_anchor
        elif title:
            self.current.blocks.append("#" * self._heading_level(level) + " " + title)
        self.heading_anchor = ""

    def handle_data(self, data: str) -> None:
        if self.skip_depth:
            return
        self._text(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_to_sections(html: str, split_level: int | None) -> HtmlDoc:
    """Convert a DocBook HTML page; with ``split_level`` (2: at h2) one section per such heading."""
    parser = _DocBookToMarkdown(split_level)
    parser.feed(html)
    parser.close()
    sections = parser.sections
    # Blocks containing only the backticks of an empty <code> are noise.
    for section in sections:
        section.blocks = [block for block in section.blocks if block.strip("` ")]
    return HtmlDoc(sections)


# --------------------------------------------------------------------------------------------
# Cache bookkeeping


def iter_corpus_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(relative posix path, path) of every file of a corpus, sorted, ``.corpus.json`` excluded."""
    found = [
        (path.relative_to(root).as_posix(), path)
        for path in root.rglob("*")
        if path.is_file() and path.name != META_FILE
    ]
    yield from sorted(found)


def digest_tree(root: Path) -> tuple[int, int, str]:
    """(files, bytes, sha256) of a corpus folder.

    The sha256 runs over, for each file in sorted order: its relative path, a NUL, its size in
    decimal, a NUL, and its contents. A renamed, added, removed or edited file changes it.
    """
    digest = hashlib.sha256()
    files = total = 0
    for rel, path in iter_corpus_files(root):
        data = path.read_bytes()
        digest.update(rel.encode("utf-8") + b"\0" + str(len(data)).encode() + b"\0")
        digest.update(data)
        files += 1
        total += len(data)
    return files, total, digest.hexdigest()


def read_meta(folder: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def check_corpus(spec: CorpusSpec, folder: Path) -> str | None:
    """None when the cached corpus is complete and unchanged, else the reason it is not."""
    meta = read_meta(folder)
    if meta is None:
        return "not fetched yet" if not folder.exists() else f"no readable {META_FILE}"
    if meta.get("name") != spec.name:
        return f"{META_FILE} names another corpus ({meta.get('name')!r})"
    if meta.get("builder") != BUILDER_VERSION:
        return f"built by builder version {meta.get('builder')}, this script is {BUILDER_VERSION}"
    files, total, sha = digest_tree(folder)
    if (files, total, sha) != (meta.get("files"), meta.get("bytes"), meta.get("sha256")):
        return f"files changed on disk ({files} files, {total} bytes; sha256 differs)"
    return None


@dataclass
class Outcome:
    name: str
    status: str  # "fetched", "cached", "failed", "ok" (--check), "stale" (--check)
    meta: dict[str, Any] | None = None
    message: str = ""


def ensure_corpus(name: str, cache: Path = DEFAULT_CACHE, force: bool = False) -> Path:
    """Fetch ``name`` unless it is cached and intact; returns its folder. Raises CorpusError."""
    outcome = _ensure(CORPORA[name], cache, force)
    if outcome.status == "failed":
        raise CorpusError(outcome.message)
    return corpus_dir(cache, name)


def corpus_dir(cache: Path, name: str) -> Path:
    return cache / "corpora" / name


def _ensure(spec: CorpusSpec, cache: Path, force: bool) -> Outcome:
    folder = corpus_dir(cache, spec.name)
    if not force:
        reason = check_corpus(spec, folder)
        if reason is None:
            return Outcome(spec.name, "cached", read_meta(folder))
        if folder.exists():
            print(f"{spec.name}: fetching again ({reason})", file=sys.stderr)
    try:
        meta = _fetch(spec, folder)
    except CorpusError as exc:
        return Outcome(spec.name, "failed", message=str(exc))
    return Outcome(spec.name, "fetched", meta)


def _fetch(spec: CorpusSpec, folder: Path) -> dict[str, Any]:
    print(f"{spec.name}: fetching {', '.join(str(pin) for pin in spec.pins)} ...", file=sys.stderr)
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}.", dir=folder.parent))
    try:
        with tempfile.TemporaryDirectory(prefix=f"tansaku-{spec.name}-") as work:
            ctx = BuildContext(out=staging, work=Path(work))
            spec.build(spec, ctx)
        files, total, sha = digest_tree(staging)
        if files == 0:
            raise CorpusError(f"{spec.name}: the package(s) held none of the expected files")
        meta: dict[str, Any] = {
            "name": spec.name,
            "description": spec.description,
            "source": " + ".join(str(package) for package in ctx.packages),
            "packages": [
                {"registry": p.registry, "name": p.name, "version": p.version} for p in ctx.packages
            ],
            "builder": BUILDER_VERSION,
            "files": files,
            "bytes": total,
            "fetched_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "sha256": sha,
        }
        if ctx.warnings:
            meta["warnings"] = ctx.warnings
        (staging / META_FILE).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", "utf-8")
        staging.chmod(0o755)
        # Swap in whole: a reader never sees a half-written corpus.
        if folder.exists():
            old = folder.with_name(f".{spec.name}.old")
            shutil.rmtree(old, ignore_errors=True)
            folder.rename(old)
            staging.rename(folder)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(folder)
        return meta
    finally:
        shutil.rmtree(staging, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# CLI


def _summary(outcome: Outcome) -> str:
    meta = outcome.meta or {}
    if outcome.status == "failed":
        return f"{outcome.name:<12} FAILED  {outcome.message}"
    if outcome.status == "stale":
        return f"{outcome.name:<12} STALE   {outcome.message}"
    mb = meta.get("bytes", 0) / 1_000_000
    return (
        f"{outcome.name:<12} {outcome.status:<7} {meta.get('files', 0):>5} files {mb:>6.1f} MB  "
        f"{meta.get('source', '?')}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Fetch the evaluation corpora from package registries into CACHE/corpora/NAME/.",
    )
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"corpora (default: all of {', '.join(CORPORA)})"
    )
    parser.add_argument(
        "--cache", type=Path, default=DEFAULT_CACHE, help="cache folder (default: evals/cache)"
    )
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--force", action="store_true", help="fetch again even when the cache matches")
    mode.add_argument("--check", action="store_true", help="only verify the cache; exit 1 if anything is off")
    args = parser.parse_args(argv)

    unknown = [name for name in args.names if name not in CORPORA]
    if unknown:
        parser.error(f"unknown corpus {', '.join(unknown)} (known: {', '.join(CORPORA)})")
    names = args.names or list(CORPORA)
    cache = args.cache.resolve()

    outcomes: list[Outcome] = []
    for name in names:
        spec = CORPORA[name]
        if args.check:
            reason = check_corpus(spec, corpus_dir(cache, name))
            meta = read_meta(corpus_dir(cache, name))
            outcomes.append(Outcome(name, "ok" if reason is None else "stale", meta, reason or ""))
        else:
            outcomes.append(_ensure(spec, cache, args.force))

    print(f"corpora in {cache / 'corpora'}:")
    for outcome in outcomes:
        print("  " + _summary(outcome))
    return 1 if any(o.status in ("failed", "stale") for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
