"""The names a line defines, for the snippet of a name or an option: its defining line.

A page says what a name is where the name starts a line and a definition follows: a man page's
NAME line (``tar - an archiving utility``, ``gzip, gunzip, zcat - compress or expand files``), an
option entry (``-x, --extract, --get``, ``-a rounds``, ``--exclude=PATTERN``, a Markdown item
``- `--save-exact`: ...``) and a Markdown heading (its first word: ``## `npm install` ``). A
synopsis (``tar -x [-f ARCHIVE]``), a page header (``TAR(1)  GNU TAR Manual  TAR(1)``) or a
sentence that starts with the name defines nothing. The patterns follow what
``sources/outline.py`` indexes as headings and options, one line at a time.
"""

from __future__ import annotations

import re

# Inline markup around a name (`code`, **bold**, a backslash before a dash) is not part of it.
_MARKUP = str.maketrans("", "", "`*\\")
_BULLET = re.compile(r"[ \t]*[-+][ \t]+")
# One or more option names, comma-separated, then what an entry has after them: nothing (the
# description is below), the value (=PATTERN, [=N], one word: "-a rounds"), a colon, or two
# spaces before the description ("-l      Show fingerprint"). A sentence that a line wrap
# starts with an option ("--delete-after and add a filter rule") has none of these.
_OPTIONS = re.compile(
    r"[ \t]*(-{1,2}[A-Za-z0-9?][\w-]*(?:[ \t]*,[ \t]*-{1,2}[A-Za-z0-9?][\w-]*)*)"
    r"(?=[ \t]*$|[=\[:,]|[ \t]{2}|[ \t]+\S+(?:[ \t]*$|[ \t]{2}))"
)
_OPTION_NAME = re.compile(r"-{1,2}([A-Za-z0-9?][\w-]*)")
# whatis(1) style: names, then a dash with a space on each side, then what they are.
_WHATIS = re.compile(r"[ \t]*([\w.+-]+(?:,[ \t]*[\w.+-]+)*)[ \t]+(?:-|--|—|–)[ \t]+\S")
_HEADING = re.compile(r"[ ]{0,3}#{1,6}[ \t]+(\S+)")
# A page reference such as TAR(1) names another page; it does not define a name.
_PAGE_REFERENCE = re.compile(r"\(\d\w*\)")
# The characters a defining line can start with, other than a letter: most lines start with
# none of them and contain no " - ", so most lines are ruled out before any regex runs.
_STARTS = frozenset("-#+`*\\")
_DASHES = (" - ", " -- ", " — ", " – ")


def may_define(line: str) -> bool:
    """False for a line that cannot define a name: a cheap test before :func:`defined_names`."""
    stripped = line.lstrip()
    return bool(stripped) and (stripped[0] in _STARTS or any(dash in line for dash in _DASHES))


def defined_names(line: str) -> list[str]:
    """The names ``line`` defines, as written but without dashes: ``["x", "extract", "get"]`` for
    ``-x, --extract, --get``; ``["ssh-keygen"]`` for ``ssh-keygen — OpenSSH authentication key
    utility``; ``[]`` for a line that defines nothing."""
    if not may_define(line):
        return []
    text = line.translate(_MARKUP)
    heading = _HEADING.match(text)
    if heading is not None:
        first = heading.group(1).rstrip(".,:;")
        return [] if _PAGE_REFERENCE.search(first) else [first.lstrip("-")]
    bullet = _BULLET.match(text)
    if bullet is not None:
        text = text[bullet.end() :]
    options = _OPTIONS.match(text)
    if options is not None:
        return _OPTION_NAME.findall(options.group(1))
    whatis = _WHATIS.match(text)
    if whatis is not None:
        return [name.strip() for name in whatis.group(1).split(",")]
    return []
