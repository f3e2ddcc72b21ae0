"""Cache of local language model results (expansions, rerank scores) in the index's ``llm_cache``.

Values are JSON. The cache is an optimisation only: a read or write that fails (a read-only or
locked index, an index from before the table existed) counts as a miss or is skipped, never an
error for the query that wanted it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlean as sqlite3

__all__ = ["LlmCache", "cache_for", "cache_key", "open_cache"]

# SQLite's default limit on bound parameters is far above this; batches keep statements short.
_BATCH = 500
# Seconds a cache write waits for another writer before it is skipped.
_CACHE_WAIT = 0.2
# Kinds whose values are large, kept for their newest keys only: a stored prompt state is
# 3.5 MB (Gemma 3 270M) and one is made per model file, prompt version and llama.cpp build, so
# every upgrade or change of model would otherwise leave one behind for good.
KEEP_NEWEST = {"prefix-state": 2}


def cache_key(*parts: str) -> str:
    """A fixed-length key for ``parts``, unambiguous however the parts are split."""
    return hashlib.sha256(json.dumps(list(parts), ensure_ascii=False).encode("utf-8")).hexdigest()


class LlmCache:
    """get/put of JSON values by (kind, key) on an open index connection."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.write_failures = 0  # puts that were skipped because the index refused them

    def close(self) -> None:
        self._conn.close()

    def get(self, kind: str, key: str) -> Any | None:
        return self.get_many(kind, [key]).get(key)

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        try:
            for start in range(0, len(unique), _BATCH):
                batch = unique[start : start + _BATCH]
                marks = ",".join("?" * len(batch))
                rows = self._conn.execute(
                    f"SELECT key, value FROM llm_cache WHERE kind = ? AND key IN ({marks})",
                    [kind, *batch],
                ).fetchall()
                for key, value in rows:
                    found[key] = json.loads(value)
        except (sqlite3.DatabaseError, ValueError):
            return found
        return found

    def get_recent(self, kind: str, key: str, max_age_s: float) -> Any | None:
        """The value if it was written less than ``max_age_s`` seconds ago (to the second), else None."""
        since = (datetime.now(UTC) - timedelta(seconds=max_age_s)).isoformat(timespec="seconds")
        try:
            row = self._conn.execute(
                "SELECT value FROM llm_cache WHERE kind = ? AND key = ? AND created_at > ?",
                [kind, key, since],
            ).fetchone()
            return json.loads(row[0]) if row else None
        except (sqlite3.DatabaseError, ValueError):
            return None

    def forget_older(self, kind: str, max_age_s: float) -> None:
        """Delete the values of ``kind`` written ``max_age_s`` seconds ago or more."""
        since = (datetime.now(UTC) - timedelta(seconds=max_age_s)).isoformat(timespec="seconds")
        try:
            with _transaction(self._conn):
                self._conn.execute("DELETE FROM llm_cache WHERE kind = ? AND created_at < ?", [kind, since])
        except sqlite3.DatabaseError:
            self.write_failures += 1

    def put(self, kind: str, key: str, value: Any) -> None:
        self.put_many(kind, [(key, value)])

    def put_many(self, kind: str, items: Iterable[tuple[str, Any]]) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        rows = [(kind, key, json.dumps(value, ensure_ascii=False), now) for key, value in items]
        if not rows:
            return
        try:
            # One statement per row inside one transaction: a single fsync, and no partial batch.
            with _transaction(self._conn):
                self._conn.executemany(
                    "INSERT OR REPLACE INTO llm_cache (kind, key, value, created_at) VALUES (?, ?, ?, ?)",
                    rows,
                )
                if kind in KEEP_NEWEST:
                    self._keep_newest(kind, [row[1] for row in rows], KEEP_NEWEST[kind])
        except sqlite3.DatabaseError:
            self.write_failures += 1

    def _keep_newest(self, kind: str, written: Sequence[str], keep: int) -> None:
        """Delete all but the ``keep`` newest values of ``kind``; those just written count as newest."""
        marks = ",".join("?" * len(written))
        self._conn.execute(
            "DELETE FROM llm_cache WHERE kind = ? AND key NOT IN ("
            f"SELECT key FROM llm_cache WHERE kind = ? ORDER BY key IN ({marks}) DESC, created_at DESC"
            " LIMIT ?)",
            [kind, kind, *written, keep],
        )


class _transaction:
    """BEGIN/COMMIT for an autocommit (isolation_level=None) connection; joins an open transaction."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._own = False

    def __enter__(self) -> None:
        if not self._conn.in_transaction:
            self._conn.execute("BEGIN IMMEDIATE")
            self._own = True

    def __exit__(self, exc_type: object, *rest: object) -> None:
        if not self._own:
            return
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")


def cache_for(conn: Any) -> LlmCache:
    """The cache on an open index connection, SQLite's or PostgreSQL's (store/postgres/llm_cache.py)."""
    if getattr(conn, "tansaku_backend", "sqlite") != "sqlite":
        from .postgres.llm_cache import PgLlmCache

        return PgLlmCache(conn)
    return LlmCache(conn)


def open_cache(index: Path | Any) -> LlmCache | None:
    """A cache on its own connection to the index (a SQLite file's path, or a store.backend
    Backend), None when there is no index.

    Its own connection, with a short wait: a query must not stall behind an `update` holding the
    write lock for the sake of a cache write (which is then skipped).
    """
    if not isinstance(index, Path):
        if index.kind != "sqlite":
            from .postgres.llm_cache import open_cache as open_postgres

            return open_postgres(index)
        index = index.path
    path = index
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(str(path), timeout=_CACHE_WAIT, isolation_level=None)
    except sqlite3.DatabaseError:
        return None
    return LlmCache(conn)
