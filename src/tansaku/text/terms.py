"""The words of a text as forms that meet across inflections, for comparing two short texts
(a query and a model's rewriting of it), not for searching."""

from __future__ import annotations

import re
from collections.abc import Collection

from .cjk import cjk_runs, segment_query_words

_WORD = re.compile(r"[^\W_]+")
# Five letters: "restore", "restoring" and "restored" meet; "configure" and "configuration" too.
FORM_LENGTH = 5


def word_forms(text: str, *, skip: Collection[str] = ()) -> set[str]:
    """Words, casefolded and cut to FORM_LENGTH letters, and the words of CJK runs as the keyword
    index segments them; words in ``skip`` (casefolded, uncut) left out."""
    runs, rest = cjk_runs(text.casefold())
    found: set[str] = set()
    for run in runs:
        found.update(word for word in segment_query_words(run) if word not in skip)
    found.update(word[:FORM_LENGTH] for word in _WORD.findall(rest) if len(word) > 1 and word not in skip)
    return found
