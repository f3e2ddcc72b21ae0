"""A summary of the index for a status line that follows it: the collections' counts and vector
states as `status` gives them, without `status`'s walk of the folders (pending changes).

A long-lived process (the server) asks for it after every search, so it is kept until the
index or the config changes: the backend's change token (a stat and a pragma for SQLite) and the
config file's stat decide, so an `update` or `embed` by another process is seen at the next
search, and an unchanged index costs no query.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config.settings import Config
    from ..store.backend import Backend
    from ..types import CollectionInfo, IndexSummary


def summarise(infos: list[CollectionInfo]) -> IndexSummary:
    from ..index.vector_state import VectorState
    from ..types import CollectionSummary, IndexSummary

    collections = tuple(
        CollectionSummary(
            i.collection.name, i.documents, i.chunks, i.vectors, i.quick_vectors, i.vector_state
        )
        for i in infos
    )
    chunks = sum(c.chunks for c in collections)
    vectors = sum(c.vectors for c in collections)
    quick = sum(c.quick_vectors for c in collections)
    return IndexSummary(
        documents=sum(c.documents for c in collections),
        chunks=chunks,
        vectors=vectors,
        quick_vectors=quick,
        vector_state=VectorState(chunks, vectors, quick).name,
        collections=collections,
    )


def _file_stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


class SummaryCache:
    """The last summary and what it was computed from; thread-safe (a server's workers share it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._watch: Any = None
        self._watched: Backend | None = None
        self._key: Any = None
        self._summary: IndexSummary | None = None

    def get(self, config: Config, config_path: Path, backend: Backend) -> IndexSummary:
        from .status import collection_list

        with self._lock:
            if self._watched is not backend:
                if self._watch is not None:
                    self._watch.close()
                self._watch, self._watched = backend.change_watch(), backend
            token = self._watch.token()
            key = (token, _file_stamp(config_path), _embed_stamp(config_path))
            if token is not None and key == self._key and self._summary is not None:
                return self._summary
            summary = summarise(collection_list(config, config_path, backend))
            self._key, self._summary = key, summary
            return summary

    def close(self) -> None:
        with self._lock:
            if self._watch is not None:
                self._watch.close()
            self._watch = self._watched = self._key = self._summary = None


def _embed_stamp(config_path: Path) -> Any:
    """Which embedding model the counts are for: a model pulled or set since changes which
    vectors count (their fingerprint), with the index untouched."""
    from ..models.registry import resolve

    ref = resolve("embed", config_path)
    if not ref.present:
        return None
    if ref.endpoint is not None:
        return str(ref.endpoint)
    return str(ref.local_path), _file_stamp(Path(ref.local_path))
