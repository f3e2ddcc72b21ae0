"""Translations and versions: the same page in several languages, told apart only by a language
segment of its path: a folder (``docs/en/intro.md``, ``docs/pt-br/intro.md``) or a part of the
file name (``index.en.html``, ``index.ja.html``); or in several versions of a manual, told apart
by a version folder (``docs/3.11/os.html``, ``docs/3.12/os.html``, ``api/v2/auth.md``). A result
list shows such a page once, at its best language or version, with the others in
``Hit.also_in``; ``--all-copies`` shows them all (search/copies.py).

Only paths that both carry such a segment are joined: ``intro.md`` and ``intro.fr.md`` are not
(a page without a marker may be anything). A version folder is a number with a dot
(``2.4``, ``3.11``, ``1.0.2``) or ``v`` and a number (``v2``, ``v1.5``): a plain number is more
often a year, a month or a chapter.
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


_VERSION = re.compile(r"^(?:v\d+(?:\.\d+)*|\d+(?:\.\d+)+)$", re.IGNORECASE)


def version(segment: str) -> str | None:
    """The version a folder name is (``3.11``, ``v2``), else None."""
    return segment if _VERSION.match(segment) else None


def neutral(path: str) -> tuple[str, str] | None:
    """``path`` with its language (or version) segment taken out, and that language (version);
    None without one. The file name's parts after its stem come first (``index.ja.html``), then
    the folders, innermost first (``docs/ja/index.html``, ``docs/3.11/index.html``)."""
    folders = path.split("/")
    name = folders.pop()
    parts = name.split(".")
    # A stem, the language and an extension at least: index.ja.html, mod_ssl.html.ja.
    for i in range(len(parts) - 1, 0, -1):
        code = language(parts[i]) if len(parts) >= 3 else None
        if code is not None:
            return "/".join([*folders, ".".join([*parts[:i], "*", *parts[i + 1 :]])]), code
    for i in range(len(folders) - 1, -1, -1):
        code = language(folders[i]) or version(folders[i])
        if code is not None:
            return "/".join([*folders[:i], "*", *folders[i + 1 :], name]), code
    return None


def in_language(path: str, code: str) -> str | None:
    """``path`` with its language segment set to ``code`` (``docs/en/a.html``, "fr" ->
    ``docs/fr/a.html``); None when it has none."""
    found = neutral(path)
    return None if found is None else found[0].replace("*", code, 1)
