"""Collection names and the glob masks that choose a collection's files.

Mask syntax (paths are posix-style and relative to the collection root, matched in full and
case-sensitively):

- ``**`` as a whole segment matches zero or more directories (``**/*.md`` matches ``a.md`` and
  ``x/y/a.md``); a trailing ``/**`` matches everything below a directory but not the directory
  itself. ``**`` inside a segment (``a**b``) is just ``*``.
- ``*`` matches any run of characters except ``/``; ``?`` matches one character except ``/``.
- ``[abc]``, ``[a-z]`` and ``[!abc]`` are character classes; a ``]`` right after ``[`` or ``[!``
  is a member, not the end. ``[*]`` is how to match a literal ``*``, ``?``, ``{`` or ``,``.
- Everything else is literal. Backslashes are rejected rather than used as escapes, so a mask
  written on Windows fails loudly instead of silently matching nothing.
- A mask without ``/`` (``*.md``) matches files at the root level only; use ``**/*.md`` for
  every level.

Before matching, user input goes through :func:`expand_masks`: comma lists
(``**/*.md,**/*.txt``) and brace groups (``**/*.{md,txt}``, nested allowed) become plain masks.

The matching itself is wcmatch's (``wcmatch.glob``); what this module keeps are its own rules
around it: names, comma lists and brace groups, validation with clear errors, and the two
questions a walk asks about directories (:meth:`MaskMatcher.matches_dir`,
:meth:`MaskMatcher.may_match_below`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence

from ..errors import BadGlob, InvalidName

# \A and \Z so that .match() is as strict as .fullmatch(): "$" would accept a trailing newline.
NAME_PATTERN = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")

# Bounds that keep hostile or mistyped input from exhausting memory or the stack.
MAX_EXPANSIONS = 1000
MAX_BRACE_DEPTH = 32


def validate_collection_name(name: str) -> str:
    """Return ``name`` unchanged if it is a valid collection name, else raise :class:`InvalidName`."""
    if not NAME_PATTERN.match(name):
        raise InvalidName(
            f"invalid collection name {name!r}: use 1 to 64 characters from "
            "letters A-Z and a-z, digits 0-9, '_' and '-'",
            name=name,
        )
    return name


def _bad(mask: str, why: str, source: str | None = None) -> BadGlob:
    if source is None or source == mask:
        return BadGlob(f"bad glob mask {mask!r}: {why}", mask=mask)
    # An expanded mask alone can be hard to place: say which value it came from.
    return BadGlob(f"bad glob mask {mask!r} (from {source!r}): {why}", mask=mask, value=source)


def _class_end(text: str, start: int) -> int:
    """Index just past the ``]`` closing the class opened at ``text[start]``, or -1 if unclosed."""
    i = start + 1
    if i < len(text) and text[i] == "!":
        i += 1
    # The first member is taken as is, so "[]]" and "[!]]" are classes containing "]".
    i += 1
    end = text.find("]", i)
    return -1 if end == -1 else end + 1


def _structure(text: str, mask: str) -> Iterator[tuple[int, str, int]]:
    """Yield ``(index, char, depth)`` for every ``{``, ``}`` and ``,`` outside character classes.

    ``depth`` is the brace depth outside the char for braces (0 for a top-level group's ``{`` and
    ``}``) and the current depth for commas. Raises :class:`BadGlob` for unbalanced brackets.
    """
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "[":
            end = _class_end(text, i)
            if end == -1:
                raise _bad(mask, f"unclosed '[' at position {i}")
            i = end
            continue
        if ch == "]":
            raise _bad(mask, f"']' at position {i} without a matching '['")
        if ch == "{":
            yield i, ch, depth
            depth += 1
            if depth > MAX_BRACE_DEPTH:
                raise _bad(mask, f"braces nested more than {MAX_BRACE_DEPTH} deep")
        elif ch == "}":
            depth -= 1
            if depth < 0:
                raise _bad(mask, f"'}}' at position {i} without a matching '{{'")
            yield i, ch, depth
        elif ch == ",":
            yield i, ch, depth
        i += 1
    if depth:
        raise _bad(mask, "unclosed '{'")


def _split_commas(value: str) -> list[str]:
    pieces: list[str] = []
    start = 0
    for i, ch, depth in _structure(value, value):
        if ch == "," and depth == 0:
            pieces.append(value[start:i])
            start = i + 1
    pieces.append(value[start:])
    return pieces


def _expand_braces(text: str, mask: str) -> list[str]:
    # The text is cut into a sequence of choices (a literal run is a choice of one) and the
    # product is built left to right: a loop, so a long run of groups cannot exhaust the stack.
    choices: list[list[str]] = []
    start = alt_start = 0
    alternatives: list[str] = []
    for i, ch, depth in _structure(text, mask):
        if ch == "{" and depth == 0:
            choices.append([text[start:i]])
            alt_start = i + 1
            alternatives = []
        elif ch == "," and depth == 1:
            alternatives.append(text[alt_start:i])
            alt_start = i + 1
        elif ch == "}" and depth == 0:
            alternatives.append(text[alt_start:i])
            options: list[str] = []
            for alternative in alternatives:
                options.extend(_expand_braces(alternative, mask))
                if len(options) > MAX_EXPANSIONS:
                    raise _bad(mask, f"expands to more than {MAX_EXPANSIONS} masks")
            choices.append(options)
            start = i + 1
    choices.append([text[start:]])
    results = [""]
    for options in choices:
        if len(results) * len(options) > MAX_EXPANSIONS:
            raise _bad(mask, f"expands to more than {MAX_EXPANSIONS} masks")
        results = [head + option for head in results for option in options]
    return results


def expand_masks(values: Iterable[str]) -> tuple[str, ...]:
    """Expand comma lists and brace groups into plain, validated masks.

    Each value may hold several masks separated by commas (commas inside ``{}`` or ``[]`` do
    not separate). The result is stripped and de-duplicated, in first-seen order. A bare string
    is taken as one value, not as a sequence of one-character masks.
    """
    if isinstance(values, str):
        values = (values,)
    seen: dict[str, None] = {}
    for value in values:
        for piece in _split_commas(value):
            for expanded in _expand_braces(piece, value):
                mask = expanded.strip()
                _check_mask(mask, value)
                seen.setdefault(mask, None)
    return tuple(seen)


def _check_mask(mask: str, source: str | None = None) -> list[str]:
    """Validate one expanded mask and return its segments (runs of ``**`` collapsed).

    ``source`` is the user's value the mask was expanded from, named in errors.
    """
    if not mask.strip():
        raise _bad(mask, "empty mask", source)
    if "\\" in mask:
        raise _bad(mask, "backslashes are not allowed; separate directories with '/'", source)
    if mask.startswith("/"):
        raise _bad(mask, "absolute path; masks are relative to the collection root", source)
    # Also rejects unbalanced brackets; any brace or comma it reports at all is left unexpanded.
    for _i, ch, _depth in _structure(mask, mask):
        what = "brace group" if ch in "{}" else "comma list"
        raise _bad(mask, f"unexpanded {what} ({ch!r}); pass masks through expand_masks first")
    # Classes never contain "/" (checked here), so splitting on "/" cannot cut one in half.
    i = 0
    while (i := mask.find("[", i)) != -1:
        end = _class_end(mask, i)
        if "/" in mask[i:end]:
            raise _bad(mask, "'/' inside a character class can never match", source)
        _class_members(mask[i + 1 : end - 1], mask, source)
        i = end
    segments: list[str] = []
    for segment in mask.split("/"):
        if segment == "":
            why = "empty path segment (a trailing '/' or '//'); write 'dir' or 'dir/**'"
            raise _bad(mask, why, source)
        if segment == "..":
            raise _bad(mask, "'..' segment; masks cannot leave the collection root", source)
        if segment == ".":
            raise _bad(mask, "'.' segment; masks are already relative to the collection root", source)
        if segment == "**" and segments and segments[-1] == "**":
            continue
        segments.append(segment)
    return segments


def _class_members(body: str, mask: str, source: str | None = None) -> list[tuple[str, str]]:
    """The ``(low, high)`` ranges of a class body (the text between the brackets, ``!`` included)."""
    members = body[1:] if body.startswith("!") else body
    ranges: list[tuple[str, str]] = []
    i = 0
    while i < len(members):
        # A "-" first or last is a member, as in fnmatch.
        if i + 2 < len(members) and members[i + 1] == "-":
            low, high = members[i], members[i + 2]
            if low > high:
                raise _bad(mask, f"character range '{low}-{high}' is reversed", source)
            ranges.append((low, high))
            i += 3
        else:
            ranges.append((members[i], members[i]))
            i += 1
    return ranges


# Matching is wcmatch's: each mask is rewritten as a wcmatch glob (_wc_glob) and translated by
# ``wcmatch.glob.translate`` into a regex; the regexes are joined and compiled once. The flags:
# GLOBSTAR for ``**``; DOTGLOB so that ``*`` and ``**`` match hidden names (the walker skips
# those, the matcher does not); FORCEUNIX for "/" as the only separator and case-sensitive
# matching on every platform. Not BRACE (expand_masks has expanded braces already, by rules of
# its own), MATCHBASE (a mask without "/" matches at the top level only), EXTGLOB or NEGATE.

# "*.md": a star, then literal text (maybe none).
_STAR_LITERAL = re.compile(r"\*[^*?\[]*")


def _wc_glob(segments: Sequence[str]) -> str:
    """A validated mask (as segments) as wcmatch glob text with the same meaning.

    Classes are rewritten with every member escaped: wcmatch would take a leading ``^`` as
    negation and ``[:alpha:]`` as a POSIX class, where our masks mean those characters.
    """
    out: list[str] = []
    for segment in segments:
        i = 0
        while (start := segment.find("[", i)) != -1:
            end = _class_end(segment, start)
            body = segment[start + 1 : end - 1]
            members = "".join(
                f"\\{low}" if low == high else f"\\{low}-\\{high}"
                for low, high in _class_members(body, segment)
            )
            out.append(f"{segment[i:start]}[{'!' if body.startswith('!') else ''}{members}]")
            i = end
        out.append(segment[i:])
        out.append("/")
    return "".join(out[:-1])


def _below(segments: Sequence[str]) -> list[Sequence[str]]:
    """Masks for the directories that could hold a path matching ``segments`` (maybe none).

    Every proper prefix of the mask up to its first ``**`` (the last segment names the file, so
    it admits no directory on its own) and, at that ``**``, everything below the prefix.
    """
    if segments[0] == "**":
        return [["**"]]
    found: list[Sequence[str]] = []
    for j in range(1, len(segments)):
        found.append(segments[:j])
        if segments[j] == "**":
            found.append(segments[: j + 1])
            break
    return found


@functools.lru_cache(maxsize=256)
def _translate(globs: tuple[str, ...]) -> re.Pattern[str] | None:
    if not globs:
        return None
    from wcmatch import glob  # here, so that matchers that need no regex never import it

    flags = glob.GLOBSTAR | glob.DOTGLOB | glob.FORCEUNIX
    # limit=0: how many masks there are is bounded by expand_masks, not by wcmatch.
    include, _exclude = glob.translate(list(globs), flags=flags, limit=0)
    return re.compile("|".join(f"(?:{p})" for p in include))


def _last_segments(path: str, count: int) -> str | None:
    """The last ``count`` segments of ``path``, or None when it has fewer."""
    parts = path.rsplit("/", count)
    if len(parts) < count:
        return None
    return path if len(parts) == count else path[len(parts[0]) + 1 :]


class _Globs:
    """wcmatch's regexes for a set of masks, arranged so that Python's ``re`` runs them fast.

    A leading ``**/`` in wcmatch's regex tries what follows at every character, several times
    slower than what follows alone. The paths matched are normalized (no empty, ``.`` or ``..``
    segment), and on those ``**/R`` matches when R matches the path from some segment on, and
    when R holds no ``**``, the path's last segments (as many as R has). So:

    - ``**/*.md`` (a star and literal text, maybe none; ``**`` alone is ``**/*``): the path ends
      with that text. No regex, so no wcmatch, for the default mask;
    - ``**/R``, R free of ``**``: R on the path's last segments;
    - ``**/R`` with a ``**`` in R: R on the path from each segment on;
    - any other mask: its regex, on the whole path.
    """

    def __init__(self, masks: Iterable[Sequence[str]]) -> None:
        suffixes: dict[str, None] = {}
        tails: dict[int, dict[str, None]] = {}
        anywhere: dict[str, None] = {}
        whole: dict[str, None] = {}
        for segments in masks:
            rest = segments[1:] or ["*"]
            if segments[0] != "**":
                whole[_wc_glob(segments)] = None
            elif "**" in rest:
                anywhere[_wc_glob(rest)] = None
            elif len(rest) == 1 and _STAR_LITERAL.fullmatch(rest[0]):
                suffixes[rest[0][1:]] = None
            else:
                tails.setdefault(len(rest), {})[_wc_glob(rest)] = None
        self.suffixes = tuple(suffixes)
        self.tails = [(count, _translate(tuple(globs))) for count, globs in tails.items()]
        self.anywhere = _translate(tuple(anywhere))
        self.whole = _translate(tuple(whole))

    def match(self, path: str) -> bool:
        if self.suffixes and path.endswith(self.suffixes):
            return True
        for count, regex in self.tails:
            tail = _last_segments(path, count)
            if tail is not None and regex is not None and regex.fullmatch(tail):
                return True
        if self.anywhere is not None:
            cut = -1
            while True:
                if self.anywhere.fullmatch(path[cut + 1 :]):
                    return True
                cut = path.find("/", cut + 1)
                if cut == -1:
                    break
        return self.whole is not None and self.whole.fullmatch(path) is not None


class MaskMatcher:
    """Matches relative posix paths against a set of expanded masks.

    Used both for a collection's masks and for its ``ignore`` patterns. An empty matcher
    matches nothing. Paths are relative, normalized and use "/" (as a walk makes them).
    """

    def __init__(self, masks: Sequence[str]) -> None:
        if isinstance(masks, str):
            masks = (masks,)
        self.masks: tuple[str, ...] = tuple(masks)
        files: list[Sequence[str]] = []
        dirs: list[Sequence[str]] = []
        below: list[Sequence[str]] = []
        for mask in self.masks:
            segments = _check_mask(mask)
            files.append(segments)
            if len(segments) > 1 and segments[-1] == "**":
                dirs.append(segments[:-1])
            below.extend(_below(segments))
        self._files = _Globs(files)
        # Masks whose last part names something (``*.md``, ``README``), not any name (``*``, ``**``).
        self._named = _Globs([segments for segments in files if segments[-1].strip("*")])
        self._dirs = _Globs(files + dirs)
        self._below = _Globs(below)

    def __repr__(self) -> str:
        return f"MaskMatcher({list(self.masks)!r})"

    def matches(self, rel_path: str) -> bool:
        """True when the whole of ``rel_path`` (e.g. ``notes/2024/a.md``) matches a mask."""
        return self._files.match(rel_path)

    def matches_by_name(self, rel_path: str) -> bool:
        """True when ``rel_path`` matches a mask whose last part names something (``**/*.md``
        matches a folder ``x.md``), not only one that takes any name (``**/*`` matches every
        folder, and a walk says nothing of them)."""
        return self._named.match(rel_path)

    def matches_dir(self, rel_dir: str) -> bool:
        """True when an ignore pattern covers the directory ``rel_dir`` and so all below it.

        That is when the directory matches a pattern itself (``drafts``, ``**/build``) or matches
        a pattern with its trailing ``/**`` stripped (``drafts/**``).
        """
        return self._dirs.match(rel_dir)

    def may_match_below(self, rel_dir: str) -> bool:
        """True when some path below the directory ``rel_dir`` could match a mask.

        Lets a walk skip whole subtrees: with ``notes/*.md`` only ``notes`` is worth listing.
        It may say True for a directory that turns out to hold no match, never the reverse.
        """
        return self._below.match(rel_dir)
