"""Finding a collection's files: a read-only, deterministic walk of the collection root.

The walk never opens a file. It yields a :class:`FoundFile` for every regular file whose path
matches the masks, and a :class:`~tansaku.types.SkippedFile` for what the user asked for (by
the masks) but cannot have: symlinks leaving the root, looping (to a folder above them) or
duplicating (see below), unreadable entries, things that are not regular files. What is not the
user's documents at all (hidden entries, ``.git``, ``node_modules``, ignored paths) is left out
silently.

A symlinked folder is an alias, never a second copy of its files. When its target is a folder
the walk reaches under its own name (every folder on the way there is walked: not hidden, not
``node_modules``, not ignored, possibly holding a match), the link is a ``symlink-duplicate``
whether it sorts before or after that folder, and the files are found under their real path only.
A target the walk does not reach under its own name (a hidden or ignored folder) is walked through
the first link to it, and any other way to it (another link to it, to a folder inside it or to
one around it) is a ``symlink-duplicate``. Which way in is taken depends on paths alone, so it
is the same in every walk of the same tree.

Output is sorted by ``rel_path``: each directory's entries are sorted with ``"/"`` appended to
directory names, which makes the depth-first order equal to the plain string order of the
full paths (``a-b.md`` < ``a.md`` < ``a/x.md``).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ..config.masks import MaskMatcher
from ..errors import PathNotFound
from ..types import SkippedFile

ALWAYS_SKIPPED_DIRS = frozenset({"node_modules"})  # .git and other dot-names go as hidden


@dataclass(frozen=True)
class FoundFile:
    rel_path: str  # posix, relative to the collection root
    abs_path: str  # the path inside the collection (a symlink is not resolved)
    size: int
    mtime_ns: int


def walk_collection(
    root: Path, masks: MaskMatcher, ignore: MaskMatcher | None
) -> Iterator[FoundFile | SkippedFile]:
    """Yield the files of the collection at ``root`` chosen by ``masks`` and not by ``ignore``.

    Raises :class:`PathNotFound` at once (not on first iteration) when ``root`` is missing,
    is not a directory or cannot be listed: reporting that as one skipped entry would read as
    "the collection is empty" and let an update drop every document.
    """
    top = os.path.abspath(root)
    if not os.path.isdir(top):
        what = "does not exist" if not os.path.lexists(top) else "is not a directory"
        raise PathNotFound(f"collection root {top} {what}", path=top)
    try:
        entries = _sorted_entries(top)
    except OSError as exc:
        raise PathNotFound(f"cannot list collection root {top}: {exc.strerror or exc}", path=top) from exc
    return _walk(top, entries, masks, ignore)


def _sorted_entries(path: str) -> list[os.DirEntry[str]]:
    with os.scandir(path) as it:
        entries = list(it)
    entries.sort(key=_sort_key)
    return entries


def _sort_key(entry: os.DirEntry[str]) -> str:
    try:
        is_dir = entry.is_dir()
    except OSError:
        is_dir = False
    return entry.name + "/" if is_dir else entry.name


def _is_within(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _walked_by_own_name(real: str, real_root: str, masks: MaskMatcher, ignore: MaskMatcher | None) -> bool:
    """True when the walk reaches the folder ``real`` (strictly inside ``real_root``) under its own
    name: every folder from the root down to it is one the walk enters.

    The same tests as the walk's, on the path alone (no syscall): no hidden or
    ``ALWAYS_SKIPPED_DIRS`` name, no folder pruned by ``ignore``, and masks that may match below
    each. A real path has no symlink in it, so each of those folders is a plain one.
    """
    rel = real[len(real_root.rstrip(os.sep)) + 1 :].replace(os.sep, "/")
    prefix = ""
    for name in rel.split("/"):
        prefix = f"{prefix}/{name}" if prefix else name
        if name.startswith(".") or name in ALWAYS_SKIPPED_DIRS:
            return False
        if ignore is not None and ignore.matches_dir(prefix):
            return False
        if not masks.may_match_below(prefix):
            return False
    return True


def _walk(
    top: str, root_entries: list[os.DirEntry[str]], masks: MaskMatcher, ignore: MaskMatcher | None
) -> Iterator[FoundFile | SkippedFile]:
    real_root = os.path.realpath(top)
    # Real paths of every directory entered: a symlink to any of them would walk it twice, or
    # forever when it points at an ancestor. (A link to a folder still to come under its own name
    # is caught by _walked_by_own_name instead.)
    visited = {real_root}
    # Each frame: (rel path of the directory, "" for the root; its real path; its entries left).
    stack: list[tuple[str, str, Iterator[os.DirEntry[str]]]] = [("", real_root, iter(root_entries))]
    while stack:
        rel_dir, real_dir, entries = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        name = entry.name
        if name.startswith("."):
            continue
        rel = f"{rel_dir}/{name}" if rel_dir else name
        try:
            is_link = entry.is_symlink()
            # For a plain entry this is the d_type from the listing; only symlinks cost a stat.
            st = os.stat(entry.path) if is_link else None
            is_dir = stat.S_ISDIR(st.st_mode) if st is not None else entry.is_dir(follow_symlinks=False)
        except OSError as exc:
            if (ignore is None or not ignore.matches(rel)) and masks.matches(rel):
                # ENOENT here is a link to nothing: the entry itself was just listed.
                reason = {errno.ELOOP: "symlink-loop", errno.ENOENT: "symlink-broken"}.get(
                    exc.errno, "unreadable"
                )
                yield SkippedFile(rel, reason)
            continue

        if is_dir:
            if name in ALWAYS_SKIPPED_DIRS or (ignore is not None and ignore.matches_dir(rel)):
                continue
            if is_link:
                real = os.path.realpath(entry.path)
                problem = None
                if not _is_within(real, real_root):
                    problem = "symlink-outside-root"
                elif _is_within(real_dir, real):
                    # It leads back to the folder it is in, or to one above: walking it never ends.
                    problem = "symlink-loop"
                elif real in visited or _walked_by_own_name(real, real_root, masks, ignore):
                    # A folder walked already (under its own name or through another link), or
                    # one the walk reaches under its own name later on (the link sorts first):
                    # its files are in the collection once, at their real paths.
                    problem = "symlink-duplicate"
                if problem is not None:
                    if masks.may_match_below(rel) or masks.matches(rel):
                        yield SkippedFile(rel + "/", problem)
                    continue
            else:
                # Not a link, so no syscall is needed to know where it really is.
                real = os.path.join(real_dir, name)
                if real in visited:
                    # Inside a link's folder, a folder walked already through another link (one
                    # to it, where this link goes to a folder around it): not a second time.
                    if masks.may_match_below(rel) or masks.matches(rel):
                        yield SkippedFile(rel + "/", "symlink-duplicate")
                    continue
            if masks.matches_by_name(rel):  # a folder named like the files asked for
                yield SkippedFile(rel, "not-a-file")
            if not masks.may_match_below(rel):
                continue
            try:
                children = _sorted_entries(entry.path)
            except OSError:
                yield SkippedFile(rel + "/", "unreadable")
                continue
            visited.add(real)
            stack.append((rel, real, iter(children)))
            continue

        if not masks.matches(rel) or (ignore is not None and ignore.matches(rel)):
            continue
        if is_link and not _is_within(os.path.realpath(entry.path), real_root):
            yield SkippedFile(rel, "symlink-outside-root")
            continue
        if st is None:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                # Listed a moment ago, gone or unreadable now.
                yield SkippedFile(rel, "unreadable")
                continue
        if not stat.S_ISREG(st.st_mode):
            yield SkippedFile(rel, "not-a-file")
            continue
        yield FoundFile(rel, entry.path, st.st_size, st.st_mtime_ns)
