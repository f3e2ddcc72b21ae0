"""Word segmentation for Chinese, Japanese and Korean text.

FTS5's unicode61 tokenizer only splits on separators, so a CJK sentence with no spaces would be
indexed as one giant token and no word inside it could be found. Text is therefore segmented
before indexing (``segment``) and query words the same way (``segment_query_words``): both sides
must cut identically for the tokens to meet.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

# Ranges rather than Unicode script properties because the stdlib ``re`` has no \p{...}.
CJK_CLASS = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3040-\u309f"  # Hiragana
    "\u30a0-\u30ff"  # Katakana
    "\u3130-\u318f"  # Hangul Compatibility Jamo
    "\u31f0-\u31ff"  # Katakana Phonetic Extensions
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\uac00-\ud7af"  # Hangul Syllables
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\U00020000-\U0002fa1f"  # Extensions B-F and the Compatibility Ideographs Supplement
    "\U00030000-\U000323af"  # Extensions G-H
)


# Compiled on first use: compiling these classes costs ~5 ms, paid by every `tansaku search` at
# import time although an ASCII query (the usual case) never needs them.
@cache
def _cjk_char() -> re.Pattern[str]:
    return re.compile(f"[{CJK_CLASS}]")


@cache
def _cjk_run() -> re.Pattern[str]:
    return re.compile(f"[{CJK_CLASS}]+")


def cjk_run_pattern() -> re.Pattern[str]:
    """The pattern of a run of CJK characters (compiled once, on first use)."""
    return _cjk_run()


Cutter = Callable[[str], list[str]]

# Loaded on first use: importing a segmenter (and jieba's dictionary) costs time that English-only
# users and commands that never touch text should not pay.
_segmenter: Cutter | None = None


def has_cjk(text: str) -> bool:
    """True when ``text`` contains at least one Han, kana or Hangul character."""
    return not text.isascii() and _cjk_char().search(text) is not None


def cjk_count(text: str) -> int:
    """How many Han, kana or Hangul characters ``text`` has."""
    return 0 if text.isascii() else len(_cjk_char().findall(text))


def cjk_runs(text: str) -> tuple[list[str], str]:
    """The runs of CJK characters in ``text``, and the text with each run replaced by a space."""
    if not has_cjk(text):
        return [], text
    pattern = _cjk_run()
    return pattern.findall(text), pattern.sub(" ", text)


def _bigram_cut(run: str) -> list[str]:
    # Characters interleaved with overlapping bigrams (a, ab, b, bc, c): any substring of a run,
    # cut the same way, is then a contiguous slice of the run's tokens, so phrases still match.
    out: list[str] = []
    for i, char in enumerate(run):
        out.append(char)
        if i + 1 < len(run):
            out.append(run[i : i + 2])
    return out


def load_segmenter() -> Cutter:
    """Choose the best available search-mode cutter: rjieba, else jieba, else character bigrams."""
    try:
        import rjieba
    except ImportError:
        pass
    else:
        return rjieba.cut_for_search
    try:
        import jieba
    except ImportError:
        return _bigram_cut
    import tempfile

    # jieba logs to stderr and caches its dictionary in the working directory by default.
    jieba.setLogLevel(60)
    jieba.dt.tmp_dir = tempfile.gettempdir()
    return lambda run: list(jieba.cut_for_search(run))


def _get_segmenter() -> Cutter:
    global _segmenter
    if _segmenter is None:
        _segmenter = load_segmenter()
    return _segmenter


def _cut_run(run: str) -> list[str]:
    words = [word.strip() for word in _get_segmenter()(run)]
    return [word for word in words if word] or [run]


def segment(text: str) -> str:
    """Separate the words of every CJK run in ``text`` with spaces; other text is left untouched.

    Search mode yields overlapping words (中华人民共和国 → 中华 华人 人民 … 中华人民共和国) so that
    short words inside long ones are found too.
    """
    if text.isascii():
        return text
    cjk_run = _cjk_run()
    match = cjk_run.search(text)
    if match is None:
        return text
    parts: list[str] = []
    pos = 0
    while match is not None:
        start, end = match.span()
        parts.append(text[pos:start])
        words = " ".join(_cut_run(match.group()))
        # Pad only where a neighbour would otherwise glue onto the first or last word.
        if start > 0 and not text[start - 1].isspace():
            words = " " + words
        if end < len(text) and not text[end].isspace():
            words += " "
        parts.append(words)
        pos = end
        match = cjk_run.search(text, pos)
    parts.append(text[pos:])
    return "".join(parts)


def segment_query_words(text: str) -> list[str]:
    """The words of a query term: CJK runs cut in search mode, other pieces split on whitespace.

    Order and duplicates are kept so that a phrase built from the list lines up with ``segment``.
    """
    if text.isascii():
        # Every CJK range lies above U+1100, so ASCII text has no run and the loop below would
        # only split it on whitespace: the same result without compiling the pattern.
        return text.split()
    words: list[str] = []
    pos = 0
    for match in _cjk_run().finditer(text):
        words.extend(text[pos : match.start()].split())
        words.extend(_cut_run(match.group()))
        pos = match.end()
    words.extend(text[pos:].split())
    return words
