"""The kept read connections of a long-lived process (a server) on a PostgreSQL index: what
store/db.py's ReaderPool is for a SQLite file.

A psycopg-pool ConnectionPool holds them. A thread takes one for its outermost read block and
gives it back at the end of the block, so concurrent requests never share a connection; a block
inside another on the same thread shares the outer one's connection and snapshot (a ``query``
runs a keyword search inside its own read block). Each outermost block checks the schema and
opens its own REPEATABLE READ READ ONLY transaction, as ``PostgresBackend.reading`` does, so it
sees every commit made before it began.

When the database restarts, the request that meets a dead connection fails with
INDEX_UNREACHABLE (never a 500, never a wait past CONNECT_TIMEOUT); the pool then tests its idle
connections and replaces the dead ones, so the next requests are served without a server restart.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Protocol

from ...errors import BackendMissing, IndexUnreachable
from .connection import CONNECT_TIMEOUT, PgConnection, driver, session_options

MIN_CONNECTIONS = 1


class Opener(Protocol):
    """What the pool needs of store/postgres/backend.py's PostgresBackend (which makes the pool:
    ``reader_pool``), so that this module never imports it back."""

    url: str
    location: str

    def _connect(self) -> Any: ...

    def begin_read(self, conn: PgConnection) -> None: ...

    def translate(self, exc: BaseException) -> Exception: ...


def pool_size() -> int:
    """Connections at most: a server's two groups of workers (one per core each, at least two;
    serve/requests.py) and a few requests served outside them (resource lists, advice)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return 2 * max(2, cpus) + 2


class ReaderPool:
    def __init__(self, backend: Opener) -> None:
        self.backend = backend
        self.location = backend.location
        self._pool: Any = None
        self._opening = threading.Lock()
        self._local = threading.local()
        # One wrapper per server connection, so pgvector's type is registered once per connection.
        self._wrappers: weakref.WeakKeyDictionary[Any, PgConnection] = weakref.WeakKeyDictionary()

    def _connections(self) -> Any:
        with self._opening:
            if self._pool is None:
                driver()  # BACKEND_MISSING first, when psycopg itself is absent
                try:
                    from psycopg_pool import ConnectionPool
                except ImportError:
                    raise BackendMissing(
                        "a server on a postgresql:// index needs psycopg-pool, which is not installed",
                        hint="pip install 'tansaku[postgres]'",
                    ) from None
                self._pool = ConnectionPool(
                    self.backend.url,
                    min_size=MIN_CONNECTIONS,
                    max_size=pool_size(),
                    timeout=CONNECT_TIMEOUT,
                    kwargs={
                        "autocommit": True,
                        "connect_timeout": CONNECT_TIMEOUT,
                        "application_name": "tansaku server",
                        "options": session_options(self.backend.url),
                    },
                    name="tansaku-readers",
                    open=False,
                )
                self._pool.open(wait=False)
            return self._pool

    def _take(self, pool: Any) -> Any:
        from psycopg_pool import PoolTimeout

        try:
            return pool.getconn()
        except PoolTimeout:
            # The pool retries in the background and says only that it timed out: one direct
            # connection gives the server's own reason (refused, no such database...).
            self.backend._connect().close()
            raise IndexUnreachable(
                f"cannot use the PostgreSQL index {self.location}: no free connection within"
                f" {CONNECT_TIMEOUT} s",
                hint="the server is slow to accept connections, or its max_connections is reached",
            ) from None

    def _wrapper(self, raw: Any) -> PgConnection:
        conn = self._wrappers.get(raw)
        if conn is None:
            conn = self._wrappers[raw] = PgConnection(raw, reader=True)
        conn.positions_cache = {}  # what one block read is not true of the next one
        conn.schema_current = False
        return conn

    @contextlib.contextmanager
    def reading(self) -> Iterator[PgConnection]:
        outer: PgConnection | None = getattr(self._local, "conn", None)
        if outer is not None:
            yield outer
            return
        psycopg = driver()
        pool = self._connections()
        raw = self._take(pool)
        conn = self._wrapper(raw)
        self._local.conn = conn
        try:
            self.backend.begin_read(conn)
            yield conn
        except psycopg.Error as exc:
            raise self.backend.translate(exc) from exc
        finally:
            self._local.conn = None
            with contextlib.suppress(psycopg.Error):
                if not raw.closed and conn.in_transaction:
                    conn.execute("ROLLBACK")
            lost = raw.broken or raw.closed
            pool.putconn(raw)  # a broken connection is discarded and replaced by the pool
            if lost:
                # The server went away (a restart, a failover): the kept idle connections are as
                # dead as this one. This request has failed (INDEX_UNREACHABLE); test the others
                # now, so that the next requests get live ones instead of failing one by one.
                pool.check()

    def close(self) -> None:
        with self._opening:
            if self._pool is not None:
                self._pool.close()
            self._pool = None
