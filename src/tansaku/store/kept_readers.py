"""Read connections a long-lived process (a server) keeps between calls: one pool
(``Backend.reader_pool``: SQLite's kept files, PostgreSQL's connection pool) for the backend the
config names now; naming another closes the old pool."""

from __future__ import annotations

import contextlib
import threading
from typing import Any

from .backend import Backend


class KeptReaders:
    def __init__(self) -> None:
        self._lock = threading.Lock()  # two threads of a server must not each open a pool
        self._kept: tuple[Backend, Any] | None = None  # the backend, its pool

    def reading(self, backend: Backend) -> contextlib.AbstractContextManager[Any]:
        with self._lock:
            if self._kept is None or self._kept[0] is not backend:
                if self._kept is not None:
                    _close(self._kept[1])  # the config now names another index
                self._kept = (backend, backend.reader_pool())
            pool = self._kept[1]
        return pool.reading()  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the pool; the next read opens one again. A PostgreSQL pool's threads must be
        stopped, not left to the garbage collector."""
        with self._lock:
            kept, self._kept = self._kept, None
        if kept is not None:
            _close(kept[1])


def _close(pool: Any) -> None:
    if hasattr(pool, "close"):
        pool.close()
