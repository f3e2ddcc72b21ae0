"""The vectors a process searches, read from the index once and kept until the index changes.

A one-shot command reads them for its single query; a long-lived process (a server, or a script
holding one ``Tansaku``) answers every later query from memory. Each query checks a cheap change
token first (``store.db.ChangeWatch``), so an `update` or `embed` by another process is seen at
the next query, never a stale answer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from ..store import db
from ..store.backend import documents
from ..store.backend import vectors as vec
from ..store.memory_budget import (  # noqa: F401 (the setting's names, as before)
    DEFAULT_MEMORY_BUDGET_MB,
    MEMORY_BUDGET_ENV,
    memory_budget_bytes,
    memory_budget_setting,
)

T = TypeVar("T")


@dataclass(frozen=True)
class ModelVectors:
    """Every vector of one model, in the order read: row i of ``matrix`` is embedding ``ids[i]``.

    Sorting the ids is cheap and moving the matrix is not, so ``order`` sorts them and
    ``sorted_ids`` (= ``ids[order]``) is what lookups search.
    """

    ids: Any  # int64[n]
    matrix: Any  # float32[n, dims]
    order: Any  # int64[n]
    sorted_ids: Any  # int64[n]
    # Rows no search can score (all zeros, NaN or infinite values: stored by an index made before
    # endpoint answers were checked), or None when every row is usable (the usual case).
    unusable: Any | None = None  # bool[n]

    @classmethod
    def of(cls, ids: Any, matrix: Any) -> ModelVectors:
        import numpy as np

        from ..store.vectors import without_direction  # a pure function: the same for both backends

        order = np.argsort(ids, kind="stable")
        # One pass when read (about the cost of one query's product), so that such a row scores
        # -inf, never NaN (which would sink its whole document) nor 0 (which `query` keeps).
        unusable = without_direction(matrix)
        return cls(ids, matrix, order, ids[order], unusable if unusable.any() else None)

    def rows_of(self, embedding_ids: Any) -> Any:
        import numpy as np

        sorted_ids = self.sorted_ids
        positions = np.minimum(np.searchsorted(sorted_ids, embedding_ids), max(len(self.ids) - 1, 0))
        if len(self.ids) == 0 or not np.array_equal(sorted_ids[positions], embedding_ids):
            raise vec.VectorsUnavailable(
                "the index lists vectors that its vector table does not hold",
                hint="run `tansaku embed -f` to recompute them",
            )
        return self.order[positions]


@dataclass(frozen=True)
class CollectionVectors:
    """One collection's chunk windows that have a vector, grouped by document.

    Entries are ordered by document; ``starts[i]`` is the first entry of document ``doc_ids[i]``.
    ``rows`` places each entry in the model's in-memory matrix (None when the model is too big
    to keep in memory).
    """

    doc_ids: Any  # int64[documents]
    starts: Any  # int64[documents]
    embedding_ids: Any  # int64[entries]
    start_lines: Any  # int32[entries]
    end_lines: Any  # int32[entries]
    rows: Any | None
    doc_weights: Any  # float64[documents]: file_kinds.path_weight of each document

    @property
    def empty(self) -> bool:
        return len(self.embedding_ids) == 0


def collection_vectors(
    entries: vec.CollectionEntries, model: ModelVectors | None, paths: Mapping[int, str]
) -> CollectionVectors:
    """The entries grouped by document, with each document's weight for its path (``paths``)."""
    import numpy as np

    from .file_kinds import weights_of

    doc_column = np.asarray(entries.doc_ids, dtype=np.int64)
    embedding_ids = np.asarray(entries.embedding_ids, dtype=np.int64)
    if len(doc_column):
        starts = np.flatnonzero(np.r_[True, doc_column[1:] != doc_column[:-1]])
    else:
        starts = np.zeros(0, dtype=np.int64)
    doc_ids = doc_column[starts]
    return CollectionVectors(
        doc_ids=doc_ids,
        starts=starts,
        embedding_ids=embedding_ids,
        start_lines=np.asarray(entries.start_lines, dtype=np.int32),
        end_lines=np.asarray(entries.end_lines, dtype=np.int32),
        rows=model.rows_of(embedding_ids) if model is not None and len(embedding_ids) else None,
        doc_weights=weights_of(doc_ids, paths),
    )


class VectorCache:
    """Vectors and vector counts of one index, valid while its change token stays the same."""

    def __init__(self, index: Path | Any | None, memory_budget: int | None = None) -> None:
        """``index``: a SQLite file, another backend's change watch (``token()``), or None (the
        cache then forgets everything at each query)."""
        self._watch = db.ChangeWatch(index) if isinstance(index, Path) else index
        self.memory_budget = memory_budget_bytes() if memory_budget is None else memory_budget
        self._token: Hashable | None = None
        self._memo: dict[Hashable, Any] = {}
        self._lock = threading.RLock()
        self.loads = 0  # how many times vectors were read from the index (for tests and benchmarks)

    def sync(self) -> None:
        """Forget everything if the index changed since the last query."""
        with self._lock:
            token = self._watch.token() if self._watch is not None else None
            if token is None or token != self._token:
                self._memo.clear()
            self._token = token

    def memo(self, key: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            if key not in self._memo:
                self._memo[key] = compute()
            return self._memo[key]  # type: ignore[no-any-return]

    def model(self, conn: Any, dims: int, fingerprint: str, *, required: bool = False) -> ModelVectors | None:
        """The model's vectors in memory, or None when they exceed the memory budget (or it is 0:
        a one-shot command, which would read them all for a single query). ``required`` reads
        them whatever the budget (a search that must score every document)."""
        key = ("model", dims, fingerprint)
        with self._lock:
            # One model's vectors at a time: another model's are dropped.
            for stale in [k for k in self._memo if k[0] in ("model", "collection") and fingerprint not in k]:
                del self._memo[stale]
            if self._memo.get(key) is None and (key not in self._memo or required):
                self._memo[key] = self._load(conn, dims, fingerprint, required)
            return self._memo[key]  # type: ignore[no-any-return]

    def _load(self, conn: Any, dims: int, fingerprint: str, required: bool) -> ModelVectors | None:
        if self.memory_budget <= 0 and not required:
            return None
        count = vec.model_vector_count(conn, fingerprint)
        if count * dims * 4 > self.memory_budget and not required:
            return None
        self.loads += 1
        return ModelVectors.of(*vec.read_model_vectors(conn, dims, fingerprint, count))

    def collection(
        self, conn: Any, fingerprint: str, name: str, params: str, model: ModelVectors
    ) -> CollectionVectors:
        return self.memo(
            ("collection", fingerprint, name, params),
            lambda: collection_vectors(
                vec.collection_entries(conn, fingerprint, name, params),
                model,
                documents.collection_paths(conn, name),
            ),
        )


def vector_cache_for(backend: Any, keep_vectors: bool) -> VectorCache:
    """The cache of a backend's index (a store.backend.Backend). ``keep_vectors``: the vectors stay
    in memory between queries (a long-lived process); without it nothing is kept, and only a
    SQLite index is watched: a one-shot command opens no connection to a server to watch it with
    (SQLite's watch is a file's, and cheap)."""
    from ..store.backend import SqliteBackend

    watched = keep_vectors or isinstance(backend, SqliteBackend)
    return VectorCache(backend.change_watch() if watched else None, None if keep_vectors else 0)
