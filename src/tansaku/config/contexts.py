"""Contexts: notes attached to a path, returned with every result below that path."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import CollectionNotFound, UsageError
from ..paths import VIRTUAL_PREFIX, is_within, normalize_rel, split_virtual_path, virtual_path
from ..types import Collection

if TYPE_CHECKING:
    from .settings import Config

GLOBAL = "/"


def normalize_context_path(raw: str, collections: Mapping[str, Collection], cwd: str | None = None) -> str:
    """Turn what a user typed into the stored key: ``/`` or a virtual path.

    Accepted: ``/`` (global), ``.`` or a filesystem path inside a collection root, a virtual path
    ``tansaku://coll/sub``, or ``coll/sub`` naming a collection first.
    """
    raw = raw.strip()
    if raw == GLOBAL:
        return GLOBAL
    if raw.startswith(VIRTUAL_PREFIX):
        name, rel = split_virtual_path(raw)
        if name not in collections:
            raise CollectionNotFound(f"no collection named {name!r}", hint="see `tansaku collection list`")
        return virtual_path(name, rel)
    base = cwd or os.getcwd()
    name, _, rel = raw.strip("/").partition("/")
    explicit_path = (
        raw == "." or raw.startswith(("./", "../", "~")) or (os.path.isabs(raw) and os.path.exists(raw))
    )
    if explicit_path or (os.path.exists(os.path.join(base, raw)) and name not in collections):
        return _from_filesystem(Path(base, os.path.expanduser(raw)), collections)
    if name in collections:
        return virtual_path(name, normalize_rel(rel))
    raise UsageError(
        f"{raw!r} is neither '/', a virtual path, a collection name nor a folder inside a collection",
        hint="examples: '/', '.', 'notes/meetings', 'tansaku://notes/meetings'",
    )


def _from_filesystem(path: Path, collections: Mapping[str, Collection]) -> str:
    real = os.path.realpath(path)
    best: tuple[int, str, str] | None = None
    for c in collections.values():
        root = os.path.realpath(c.path)
        if real == root or real.startswith(root + os.sep):
            rel = os.path.relpath(real, root).replace(os.sep, "/")
            rel = "" if rel == "." else rel
            # The deepest root wins when collections are nested.
            if best is None or len(root) > best[0]:
                best = (len(root), c.name, rel)
    if best is None:
        raise CollectionNotFound(
            f"{path} is not inside any collection", hint="add it with `tansaku collection add PATH`"
        )
    return virtual_path(best[1], best[2])


def contexts_for(contexts: Mapping[str, str], collection: str, rel_path: str) -> tuple[str, ...]:
    """The global context plus every context whose path contains the document, most general first."""
    found: list[tuple[int, str]] = []
    for key, text in contexts.items():
        if key == GLOBAL:
            found.append((-1, text))
            continue
        if not key.startswith(VIRTUAL_PREFIX):
            continue
        name, _, sub = key[len(VIRTUAL_PREFIX) :].partition("/")
        if name == collection and is_within(rel_path, sub):
            found.append((len([p for p in sub.split("/") if p]), text))
    found.sort(key=lambda item: item[0])
    return tuple(text for _, text in found)


def missing_contexts(config: Config, indexed_paths: Iterable[tuple[str, str]]) -> list[str]:
    """Collections and top-level folders (of the indexed ``(collection, path)`` pairs) that have
    no context yet, as virtual paths; the global one when nothing else is missing."""
    folders: dict[str, set[str]] = {}
    for collection, path in indexed_paths:
        if "/" in path:
            folders.setdefault(collection, set()).add(path.split("/", 1)[0])
    missing: list[str] = []
    for c in config.collection_list():
        key = virtual_path(c.name)
        if key not in config.contexts:
            missing.append(key)
        for folder in sorted(folders.get(c.name, ())):
            sub = virtual_path(c.name, folder)
            if sub not in config.contexts:
                missing.append(sub)
    if GLOBAL not in config.contexts and not missing:
        return [GLOBAL]
    return missing
