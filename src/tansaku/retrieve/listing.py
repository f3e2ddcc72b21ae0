"""`ls COLLECTION[/SUB]`: the indexed files of a collection, or of a folder in it."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any

from ..config.selection import find_collection
from ..paths import virtual_path
from ..store.backend import documents as store

if TYPE_CHECKING:
    from ..config.settings import Config
    from ..types import FileEntry


def file_entries(
    reading: Callable[[], AbstractContextManager[Any]], config: Config, target: str
) -> list[FileEntry]:
    """The files under ``target`` (``COLLECTION[/SUB]``, with or without ``tansaku://``), in the
    store's order; an unknown collection is an error before ``reading`` opens a connection."""
    from ..types import FileEntry

    name, _, sub = target.removeprefix("tansaku://").strip("/").partition("/")
    find_collection(config, name)
    with reading() as conn:
        docs = store.list_documents(conn, name, sub.strip("/"))
    return [
        FileEntry(
            virtual_path=virtual_path(d.collection, d.path),
            docid=d.hash[:6],
            size=d.size,
            modified=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(d.mtime_ns / 1e9)),
            title=d.title,
        )
        for d in docs
    ]
