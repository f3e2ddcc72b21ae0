"""What the cache of local language model results (store/llm_cache.py) does differently on PostgreSQL.

A read or write that fails counts as a miss or is skipped, never an error for the caller. Inside
the caller's transaction (status reading the embed speed, embed writing it under the writer lock)
each access runs in a savepoint: on PostgreSQL a failed statement would otherwise abort the whole
transaction, not just itself. A write waits at most ``_CACHE_WAIT`` for a row another process
holds, then is skipped (a query never stalls behind a cache write).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_CACHE_WAIT = "200ms"


@contextlib.contextmanager
def step(conn: Any, *, write: bool) -> Iterator[None]:
    """One access as a unit: its own transaction on an autocommit connection, a savepoint in
    an open one; undone as a whole when it fails."""
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


def errors() -> type[BaseException]:
    import psycopg

    return psycopg.Error  # type: ignore[no-any-return]


def connect(backend: Any) -> Any:
    """An autocommit connection of its own to the database (as SQLite's cache has its own
    connection): None when the server cannot be reached."""
    from ...errors import TansakuError
    from .connection import PgConnection

    try:
        raw = backend._connect()
    except TansakuError:
        return None
    return PgConnection(raw, reader=False)
