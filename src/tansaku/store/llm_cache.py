"""Cache of local language model results (expansions, rerank scores) in the index's ``llm_cache``.

Values are JSON. The cache is an optimisation only: a read or write that fails (a read-only or
locked index, an index from before the table existed) counts as a miss or is skipped, never an
error for the query that wanted it.

One class serves both backends (store/dialect.py); store/postgres/llm_cache.py holds what differs
on PostgreSQL: each access as a unit of its own (a savepoint inside the caller's transaction, where
a failed statement would otherwise abort the whole transaction), its driver's errors, and its own
connection for ``open_cache``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlean as sqlite3

from .dialect import POSTGRES, dialect, run, run_many

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
    """get/put of JSON values by (kind, key) on an open index connection, SQLite's or PostgreSQL's."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self._dialect = dialect(conn)
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
                among, params = self._dialect.one_of("key", unique[start : start + _BATCH])
                with self._unit(write=False):
                    rows = run(
                        self._conn,
                        f"SELECT key, value FROM llm_cache WHERE kind = ? AND {among}",
                        [kind, *params],
                    ).fetchall()
                for key, value in rows:
                    found[key] = json.loads(value)
        except (self._errors(), ValueError):
            return found
        return found

    def get_recent(self, kind: str, key: str, max_age_s: float) -> Any | None:
        """The value if it was written less than ``max_age_s`` seconds ago (to the second), else None."""
        since = (datetime.now(UTC) - timedelta(seconds=max_age_s)).isoformat(timespec="seconds")
        try:
            with self._unit(write=False):
                row = run(
                    self._conn,
                    "SELECT value FROM llm_cache WHERE kind = ? AND key = ? AND created_at > ?",
                    [kind, key, since],
                ).fetchone()
            return json.loads(row[0]) if row else None
        except (self._errors(), ValueError):
            return None

    def forget_older(self, kind: str, max_age_s: float) -> None:
        """Delete the values of ``kind`` written ``max_age_s`` seconds ago or more."""
        since = (datetime.now(UTC) - timedelta(seconds=max_age_s)).isoformat(timespec="seconds")
        try:
            with self._unit(write=True):
                run(self._conn, "DELETE FROM llm_cache WHERE kind = ? AND created_at < ?", [kind, since])
        except self._errors():
            self.write_failures += 1

    def put(self, kind: str, key: str, value: Any) -> None:
        self.put_many(kind, [(key, value)])

    def put_many(self, kind: str, items: Iterable[tuple[str, Any]]) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        # By key, the last value winning: one row per key, as a replacing insert leaves.
        rows = {key: (kind, key, json.dumps(value, ensure_ascii=False), now) for key, value in items}
        if not rows:
            return
        try:
            # One statement per row inside one transaction: a single fsync, and no partial batch.
            with self._unit(write=True):
                run_many(
                    self._conn,
                    self._dialect.upsert("llm_cache", "kind, key, value, created_at", key="kind, key"),
                    list(rows.values()),
                )
                if kind in KEEP_NEWEST:
                    self._keep_newest(kind, list(rows), KEEP_NEWEST[kind])
        except self._errors():
            self.write_failures += 1

    def _keep_newest(self, kind: str, written: Sequence[str], keep: int) -> None:
        """Delete all but the ``keep`` newest values of ``kind``; those just written count as newest."""
        among, params = self._dialect.one_of("key", written)
        run(
            self._conn,
            "DELETE FROM llm_cache WHERE kind = ? AND key NOT IN ("
            f"SELECT key FROM llm_cache WHERE kind = ? ORDER BY {among} DESC, created_at DESC LIMIT ?)",
            [kind, kind, *params, keep],
        )

    def _unit(self, *, write: bool) -> contextlib.AbstractContextManager[None]:
        """One access as a unit. SQLite: a write in a transaction of its own (joining the caller's
        open one); PostgreSQL: store/postgres/llm_cache.py's ``step``."""
        if self._dialect is POSTGRES:
            from .postgres.llm_cache import step

            return step(self._conn, write=write)
        return _transaction(self._conn) if write else contextlib.nullcontext()

    def _errors(self) -> type[BaseException]:
        if self._dialect is POSTGRES:
            from .postgres.llm_cache import errors

            return errors()
        return sqlite3.DatabaseError


@contextlib.contextmanager
def _transaction(conn: Any) -> Iterator[None]:
    """BEGIN/COMMIT for an autocommit (isolation_level=None) connection; joins an open transaction."""
    if conn.in_transaction:
        yield
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def cache_for(conn: Any) -> LlmCache:
    """The cache on an open index connection, SQLite's or PostgreSQL's."""
    return LlmCache(conn)


def open_cache(index: Path | Any) -> LlmCache | None:
    """A cache on its own connection to the index (a SQLite file's path, or a store.backend
    Backend), None when there is no index (or its server cannot be reached).

    Its own connection, with a short wait: a query must not stall behind an `update` holding the
    write lock for the sake of a cache write (which is then skipped).
    """
    if not isinstance(index, Path):
        if index.kind != "sqlite":
            from .postgres.llm_cache import connect

            conn = connect(index)
            return None if conn is None else LlmCache(conn)
        index = index.path
    path = index
    if not path.exists():
        return None
    try:
        conn = sqlite3.connect(str(path), timeout=_CACHE_WAIT, isolation_level=None)
    except sqlite3.DatabaseError:
        return None
    return LlmCache(conn)
