"""The cache of local language model results in a PostgreSQL index (store/llm_cache.py's contract).

A read or write that fails counts as a miss or is skipped, never an error for the caller. Inside
the caller's transaction (status reading the embed speed, embed writing it under the writer lock)
each access runs in a savepoint: on PostgreSQL a failed statement would otherwise abort the whole
transaction, not just itself. A write waits at most ``_CACHE_WAIT`` for a row another process
holds, then is skipped (a query never stalls behind a cache write).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ..llm_cache import KEEP_NEWEST, LlmCache

_CACHE_WAIT = "200ms"


class PgLlmCache(LlmCache):
    """get/put of JSON values by (kind, key) on a PostgreSQL connection (a PgConnection)."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn
        self.write_failures = 0

    @contextlib.contextmanager
    def _step(self, *, write: bool) -> Iterator[None]:
        """One access as a unit: its own transaction on an autocommit connection, a savepoint in
        an open one; undone as a whole when it fails."""
        conn = self._conn
        joined = conn.in_transaction
        conn.execute("SAVEPOINT llm_cache" if joined else "BEGIN")
        try:
            if write and not joined:  # SET LOCAL would outlive a savepoint: the caller's own wait stands
                conn.execute(f"SET LOCAL lock_timeout = '{_CACHE_WAIT}'")
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK TO SAVEPOINT llm_cache" if joined else "ROLLBACK")
            raise
        conn.execute("RELEASE SAVEPOINT llm_cache" if joined else "COMMIT")

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, Any]:
        found: dict[str, Any] = {}
        unique = list(dict.fromkeys(keys))
        if not unique:
            return found
        try:
            with self._step(write=False):
                rows = self._conn.execute(
                    "SELECT key, value FROM llm_cache WHERE kind = %s AND key = ANY(%s)", (kind, unique)
                ).fetchall()
            for key, value in rows:
                found[key] = json.loads(value)
        except (self._errors(), ValueError):
            return found
        return found

    def get_recent(self, kind: str, key: str, max_age_s: float) -> Any | None:
        since = (datetime.now(UTC) - timedelta(seconds=max_age_s)).isoformat(timespec="seconds")
        try:
            with self._step(write=False):
                row = self._conn.execute(
                    "SELECT value FROM llm_cache WHERE kind = %s AND key = %s AND created_at > %s",
                    (kind, key, since),
                ).fetchone()
            return json.loads(row[0]) if row else None
        except (self._errors(), ValueError):
            return None

    def forget_older(self, kind: str, max_age_s: float) -> None:
        since = (datetime.now(UTC) - timedelta(seconds=max_age_s)).isoformat(timespec="seconds")
        try:
            with self._step(write=True):
                self._conn.execute("DELETE FROM llm_cache WHERE kind = %s AND created_at < %s", (kind, since))
        except self._errors():
            self.write_failures += 1

    def put_many(self, kind: str, items: Iterable[tuple[str, Any]]) -> None:
        now = datetime.now(UTC).isoformat(timespec="seconds")
        rows = {key: (kind, key, json.dumps(value, ensure_ascii=False), now) for key, value in items}
        if not rows:
            return
        try:
            with self._step(write=True):
                self._conn.executemany(
                    "INSERT INTO llm_cache (kind, key, value, created_at) VALUES (%s, %s, %s, %s)"
                    " ON CONFLICT (kind, key) DO UPDATE"
                    " SET value = excluded.value, created_at = excluded.created_at",
                    list(rows.values()),
                )
                if kind in KEEP_NEWEST:
                    self._keep_newest(kind, list(rows), KEEP_NEWEST[kind])
        except self._errors():
            self.write_failures += 1

    def _keep_newest(self, kind: str, written: Sequence[str], keep: int) -> None:
        """Delete all but the ``keep`` newest values of ``kind``; those just written count as newest."""
        self._conn.execute(
            "DELETE FROM llm_cache WHERE kind = %s AND key NOT IN ("
            "SELECT key FROM llm_cache WHERE kind = %s ORDER BY key = ANY(%s) DESC, created_at DESC"
            " LIMIT %s)",
            (kind, kind, list(written), keep),
        )

    @staticmethod
    def _errors() -> type[BaseException]:
        import psycopg

        return psycopg.Error  # type: ignore[no-any-return]


def open_cache(backend: Any) -> PgLlmCache | None:
    """A cache on its own autocommit connection to the database (as SQLite's has its own
    connection): None when the server cannot be reached."""
    from ...errors import TansakuError
    from .backend import PgConnection

    try:
        raw = backend._connect()
    except TansakuError:
        return None
    return PgLlmCache(PgConnection(raw, reader=False))
