"""The words of a text as forms that meet across inflections, for comparing two short texts
(a query and a model's rewriting of it), not for searching."""

from __future__ import annotations

import re
from collections.abc import Collection

CJK_CLASS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_CJK_RUN = re.compile(f"[{CJK_CLASS}]+")
_WORD = re.compile(r"[^\W_]+")
# Five letters: "restore", "restoring" and "restored" meet; "configure" and "configuration" too.
FORM_LENGTH = 5


def word_forms(text: str, *, skip: Collection[str] = ()) -> set[str]:
    """Words, casefolded and cut to FORM_LENGTH letters, and the words of CJK runs as the keyword
    index segments them; words in ``skip`` (casefolded, uncut) left out."""
    folded = text.casefold()
    found: set[str] = set()
    runs = _CJK_RUN.findall(folded)
    if runs:
        from .cjk import segment_query_words

        for run in runs:
            found.update(word for word in segment_query_words(run) if word not in skip)
    found.update(
        word[:FORM_LENGTH]
        for word in _WORD.findall(_CJK_RUN.sub(" ", folded))
        if len(word) > 1 and word not in skip
    )
    return found
