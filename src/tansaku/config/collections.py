"""The changes the collection commands make to a config: a new collection of a folder's files,
adding, renaming and removing one (with the contexts under it), and its chunk strategy. Each
returns a new Config; saving it, and the index rows, are the caller's."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from ..errors import CollectionExists, PathNotFound, UsageError
from ..paths import virtual_path
from ..types import Collection, Notice
from .selection import find_collection
from .settings import DEFAULT_MASKS, Config


def files_collection(
    path: str,
    *,
    cwd: str,
    name: str | None = None,
    masks: Sequence[str] = (),
    ignore: Sequence[str] = (),
    chunk_strategy: str = "regex",
    formats: Sequence[str] = (),
) -> Collection:
    """The collection `collection add PATH` registers, named after its folder unless ``name``
    says otherwise. ``formats`` (pdf, html, docx, epub) add their masks to ``masks``, or to the
    default ``**/*.md`` when no mask is given."""
    from ..sources.formats import format_masks
    from .masks import expand_masks, validate_collection_name

    root = Path(cwd, path).expanduser()
    if not root.exists():
        raise PathNotFound(f"folder {path!r} does not exist")
    if not root.is_dir():
        raise PathNotFound(f"{path!r} is not a folder")
    root = Path(os.path.realpath(root))
    return Collection(
        name=validate_collection_name(name if name is not None else root.name),
        path=str(root),
        masks=expand_masks([*(masks or DEFAULT_MASKS), *format_masks(formats)]),
        ignore=expand_masks(ignore) if ignore else (),
        chunk_strategy=chunk_strategy,
    )


def with_new_collection(config: Config, collection: Collection) -> Config:
    name = collection.name
    if name in config.collections:
        raise CollectionExists(
            f"a collection named {name!r} already exists ({config.collections[name].path})",
            hint="choose another --name, or `tansaku collection remove` the old one",
        )
    return config.with_collection(collection)


COLLECTION_OVERLAP = "COLLECTION_OVERLAP"


def overlap_notices(config: Config, collection: Collection) -> list[Notice]:
    """COLLECTION_OVERLAP warnings: the folders of registered collections that are ``collection``'s
    own folder, a parent or a child of it (symlinks resolved on both sides), so the same files
    would be indexed twice. A warning, not an error: the add still happens."""
    new = Path(os.path.realpath(collection.path))
    notices = []
    for other in config.collections.values():
        if other.name == collection.name:
            continue
        theirs = Path(os.path.realpath(other.path))
        if theirs == new:
            relation = f"is already collection {other.name!r}"
        elif theirs in new.parents:
            relation = f"is inside collection {other.name!r} ({other.path})"
        elif new in theirs.parents:
            relation = f"contains collection {other.name!r} ({other.path})"
        else:
            continue
        notices.append(
            Notice(
                COLLECTION_OVERLAP,
                f"{new} {relation}: files under both are indexed twice"
                " (search shows each text once, with its other paths)",
            )
        )
    return notices


def renamed(config: Config, old: str, new: str) -> tuple[Config, Collection]:
    """The config with collection ``old`` called ``new``, its contexts moved along."""
    from .masks import validate_collection_name

    collection = find_collection(config, old)
    validate_collection_name(new)
    if new in config.collections:
        raise CollectionExists(f"a collection named {new!r} already exists")
    moved = replace(collection, name=new)
    collections = {k: v for k, v in config.collections.items() if k != old}
    collections[new] = moved
    contexts = {_renamed_context(k, old, new): v for k, v in config.contexts.items()}
    return replace(config, collections=collections, contexts=contexts), moved


def _renamed_context(key: str, old: str, new: str) -> str:
    prefix = virtual_path(old)
    if key == prefix or key.startswith(prefix + "/"):
        return virtual_path(new) + key[len(prefix) :]
    return key


def without(config: Config, name: str) -> Config:
    """The config without collection ``name`` and the contexts under it."""
    find_collection(config, name)
    collections = {k: v for k, v in config.collections.items() if k != name}
    prefix = virtual_path(name)
    contexts = {k: v for k, v in config.contexts.items() if not (k == prefix or k.startswith(prefix + "/"))}
    return replace(config, collections=collections, contexts=contexts)


def with_chunk_strategy(config: Config, names: Sequence[str], strategy: str) -> Config:
    """`update --chunk-strategy`: the strategy becomes the setting of the collections updated, so
    the next plain `update` does not re-chunk them back."""
    for name in names:
        config = config.with_collection(replace(config.collections[name], chunk_strategy=strategy))
    return config


def chunk_strategy_set(config: Config, name: str, strategy: str) -> Collection:
    """`collection set-chunk-strategy`: a transcript collection's chunks are its turns, so only "regex"."""
    current = find_collection(config, name)
    if current.type != "files" and strategy != "regex":
        raise UsageError(
            f"{name} is a {current.type} transcript collection: its chunks are its turns",
            hint="chunk strategies apply to collections of files",
        )
    return replace(current, chunk_strategy=strategy)
