"""Which collections of the config a command works on: one named, those named (all without a
name), and those an unscoped search reads, with the notices about what it leaves out."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import CollectionNotFound
from ..types import Collection, Notice
from .settings import Config


def find_collection(config: Config, name: str) -> Collection:
    try:
        return config.collections[name]
    except KeyError:
        known = ", ".join(sorted(config.collections)) or "none yet"
        raise CollectionNotFound(
            f"no collection named {name!r} (known: {known})",
            hint="see `tansaku collection list`",
        ) from None


def named_or_all(config: Config, names: Sequence[str]) -> list[Collection]:
    """The collections named (each once, in the order given), or every one when none is named."""
    return [find_collection(config, n) for n in dict.fromkeys(names)] or config.collection_list()


def no_collections_notice() -> Notice:
    return Notice(
        "NO_COLLECTIONS",
        "no collections are configured: add one with `tansaku collection add PATH`",
    )


def searched_collections(config: Config, names: Sequence[str]) -> tuple[list[Collection], list[Notice]]:
    """The collections a query searches: those named, else those included in searches (the
    EXCLUDED_COLLECTIONS notice names the others), with NO_COLLECTIONS when there are none."""
    warnings: list[Notice] = []
    if names:
        return [find_collection(config, n) for n in dict.fromkeys(names)], warnings
    chosen = [c for c in config.collection_list() if c.include]
    excluded = [c.name for c in config.collection_list() if not c.include]
    if excluded:
        warnings.append(
            Notice(
                "EXCLUDED_COLLECTIONS",
                f"not searched (excluded): {', '.join(excluded)}; use -c NAME to search one",
            )
        )
    if not config.collections:
        warnings.append(no_collections_notice())
    return chosen, warnings


def files_only(config: Config, names: Sequence[str]) -> bool:
    """Whether the collections named (or, naming none, those searched by default) are all file
    collections: such a search is a plain `search`, with nothing of the transcript levels."""
    named = list(dict.fromkeys(names)) or [c.name for c in config.collection_list() if c.include]
    return all(config.collections.get(n, Collection(n, "")).type == "files" for n in named)
