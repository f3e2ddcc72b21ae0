"""Masks matched through wcmatch: the rules pinned here are ours, the matching is wcmatch's.

MaskMatcher sorts masks by shape for speed (``**/*.md`` is a suffix test, ``**/R`` runs R on the
path's last segments); every shape must say what ``wcmatch.glob.globmatch`` says on a normalized
path.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st
from wcmatch import glob

from tansaku.config.masks import MaskMatcher, _wc_glob, expand_masks

FLAGS = glob.GLOBSTAR | glob.DOTGLOB | glob.FORCEUNIX

PATHS = [
    "a.md",
    ".md",
    ".hidden.md",
    "a.txt",
    "a.md.bak",
    "README.md",
    "x/a.md",
    "x/.a.md",
    ".git/config",
    ".git/x/a.md",
    "notes/a.md",
    "notes/x/a.md",
    "notes/2024/a.md",
    "other/notes/a.md",
    "drafts",
    "drafts/a.md",
    "x/drafts/y/a.md",
    "x/y/drafts",
    "a/b",
    "a/x/y/b",
    "ab",
    "1.md",
    "x/1.md",
    "^",
    "b",
    ":",
    "[",
    "日本/メモ.md",
    "my notes/a b.md",
    "line\nbreak.md",
    "a.md\n",
]

MASKS = [
    "**",
    "*",
    "*.md",
    "**/*.md",
    "**/*",
    "**/.md",
    "**/README.md",
    "**/[0-9]*.md",
    "**/notes/*.md",
    "**/drafts",
    "**/drafts/**",
    "**/x/**/a.md",
    "notes/**",
    "notes/**/*.md",
    "a/**/b",
    "*/*",
    "*/**/*.md",
    "[^a]",
    "[a[:b:]",
    "[!a]",
    "?.md",
    "日本/*.md",
]


@pytest.mark.parametrize("mask", MASKS)
def test_every_shape_agrees_with_wcmatch(mask: str) -> None:
    matcher = MaskMatcher([mask])
    wc = _wc_glob(mask.split("/"))
    for path in PATHS:
        assert matcher.matches(path) is glob.globmatch(path, wc, flags=FLAGS), path


def test_several_shapes_at_once_agree_with_wcmatch() -> None:
    matcher = MaskMatcher(MASKS[1:])  # all but "**", which would match everything
    for path in PATHS:
        expected = any(glob.globmatch(path, _wc_glob(m.split("/")), flags=FLAGS) for m in MASKS[1:])
        assert matcher.matches(path) is expected, path


SEGMENT = st.text(alphabet="ab.-^:!é ", min_size=1).filter(lambda s: s not in (".", ".."))
PATH = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join)
MASK_SEGMENT = st.sampled_from(["**", "*", "?", "*.a", "a*", "[!a]", "[^a]", "[a-b]*", "a", ".a", "b"])
MASK = st.lists(MASK_SEGMENT, min_size=1, max_size=4)


@given(MASK, PATH)
def test_random_masks_agree_with_wcmatch(segments: list[str], path: str) -> None:
    mask = "/".join(segments)
    expected = glob.globmatch(path, _wc_glob(segments), flags=FLAGS)
    assert MaskMatcher([mask]).matches(path) is expected


@pytest.mark.parametrize(
    ("mask", "path", "expected"),
    [
        # Braces are ours (expanded before matching), with rules bash and wcmatch's BRACE lack.
        ("**/*.{md,txt}", "x/a.txt", True),
        ("x{a}", "xa", True),
        ("a{}b", "ab", True),
        ("{a,b{c,d}}/*.md", "bd/x.md", True),
        ("{a,b{c,d}}/*.md", "b/x.md", False),
        # Hidden names are matched (the walker skips them, not the matcher).
        ("**/*.md", ".hidden/a.md", True),
        ("**", ".git/config", True),
        ("*", ".env", True),
        # A leading "**/" takes zero or more directories.
        ("**/a.md", "a.md", True),
        ("**/a.md", "x/y/a.md", True),
        ("**/a.md", "xa.md", False),
        ("**/x/*.md", "x/a.md", True),
        ("**/x/*.md", "y/x/a.md", True),
        ("**/x/*.md", "x/y/a.md", False),
        ("**/x/**", "a/x/b/c", True),
        ("**/x/**", "a/x", False),
        # Class members are ours: "^" and "[:b:]" are characters, not negation or a POSIX class.
        ("[^a]", "^", True),
        ("[^a]", "b", False),
        ("[a[:b:]", ":", True),
        ("[a[:b:]", "[", True),
        ("[a[:b:]", "c", False),
        # "/" only, case-sensitive, on every platform.
        ("**/*.MD", "a.md", False),
        ("a/b", "a\\b", False),
        # A trailing newline is part of the name (wcmatch before 12.0.1 let "$" match before it).
        ("x/**/?", "x/\nb\n", False),
        ("x/**/?", "x/\n", True),
    ],
)
def test_pinned(mask: str, path: str, expected: bool) -> None:
    assert MaskMatcher(expand_masks([mask])).matches(path) is expected


def test_many_masks_are_not_limited_by_wcmatch() -> None:
    # wcmatch stops at 1000 patterns by default; expand_masks bounds each value, not the total.
    masks = [f"n{i}/*.md" for i in range(1500)]
    matcher = MaskMatcher(masks)
    assert matcher.matches("n1499/a.md")
    assert not matcher.matches("n1500/a.md")


def test_the_default_mask_does_not_import_wcmatch() -> None:
    code = (
        "import sys\n"
        "from tansaku.config.masks import MaskMatcher\n"
        "m = MaskMatcher(['**/*.md', '**/*.txt'])\n"
        "assert m.matches('x/a.md') and m.may_match_below('x') and not m.matches('a.rst')\n"
        "print('wcmatch' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
