"""Translations: the same page in several languages, told apart only by a language segment of its
path: a folder (``docs/en/intro.md``, ``docs/pt-br/intro.md``) or a part of the file name
(``index.en.html``, ``index.ja.html``). A result list shows such a page once, at its best
language, with the others' languages in ``Hit.also_in``; ``--all-copies`` shows them all
(search/copies.py).

Only paths that both carry a language segment are translations of each other: ``intro.md`` and
``intro.fr.md`` are not joined (a page without a marker may be anything).
"""

from __future__ import annotations

import re

# Language codes as documentation sites spell them in paths (ISO 639-1), with an optional region
# or script: zh-cn, pt_BR, zh-Hant. Only the common languages of documentation: a folder named by
# other two letters (cs, id, hr, uk...) is more often not a language, and is not one here.
LANGUAGES = frozenset(
    {"en", "fr", "de", "ja", "ko", "zh", "es", "pt", "ru", "tr", "it", "nl", "pl", "sv", "vi"}
)
_CODE = re.compile(r"^([a-z]{2})(?:[-_](?:[a-z]{2}|hans|hant|latn|cyrl))?$", re.IGNORECASE)


def language(segment: str) -> str | None:
    """The language code ``segment`` is (lower case: "pt-br"), else None."""
    match = _CODE.match(segment)
    if match is None or match.group(1).lower() not in LANGUAGES:
        return None
    return segment.lower().replace("_", "-")


def neutral(path: str) -> tuple[str, str] | None:
    """``path`` with its language segment taken out, and that language; None without one. The
    file name's parts after its stem come first (``index.ja.html``), then the folders, innermost
    first (``docs/ja/index.html``)."""
    folders = path.split("/")
    name = folders.pop()
    parts = name.split(".")
    # A stem, the language and an extension at least: index.ja.html, mod_ssl.html.ja.
    for i in range(len(parts) - 1, 0, -1):
        code = language(parts[i]) if len(parts) >= 3 else None
        if code is not None:
            return "/".join([*folders, ".".join([*parts[:i], "*", *parts[i + 1 :]])]), code
    for i in range(len(folders) - 1, -1, -1):
        code = language(folders[i])
        if code is not None:
            return "/".join([*folders[:i], "*", *folders[i + 1 :], name]), code
    return None


def in_language(path: str, code: str) -> str | None:
    """``path`` with its language segment set to ``code`` (``docs/en/a.html``, "fr" ->
    ``docs/fr/a.html``); None when it has none."""
    found = neutral(path)
    return None if found is None else found[0].replace("*", code, 1)
