"""A connection to a PostgreSQL index as the store modules use it, and what opening one needs
(the driver, the session's settings, the URL without its password): what store/postgres/backend.py
(a command's connections) and store/postgres/pool.py (a server's kept readers) both need.

psycopg 3 is imported here and only here, on the first use of a postgresql URL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from ...errors import BackendMissing

CONNECT_TIMEOUT = 10  # seconds; libpq's default is to wait forever for a server that does not answer


def driver() -> Any:
    try:
        import psycopg
    except ImportError:
        raise BackendMissing(
            "a postgresql:// index needs the postgres extra, which is not installed",
            hint="pip install 'tansaku[postgres]'",
        ) from None
    return psycopg


def without_password(url: str) -> str:
    """The URL as shown to people: its password replaced by ***."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = netloc[0].split(":", 1)[0]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))


# A long query's aggregate over its words' entries (a row per matching document: 91,199 for seven
# words at 100,000 files) spilled to disk at the default 4 MB: 16 MB were needed, its CTE too.
WORK_MEM = "32MB"


def session_options(url: str) -> str:
    """libpq's ``options`` for every connection: WORK_MEM for each sort and hash (the URL's own
    ``-c work_mem=`` comes after it, and wins), the URL's options, then no parallel workers. A
    search's statements read a few thousand packed postings; on a shared server, starting workers
    for them cost more than they saved (a Gather Merge of 3 workers took 60 of a statement's
    130 ms at 10,000 files), and concurrent searches are the parallelism a team server needs."""
    from psycopg.conninfo import conninfo_to_dict

    given = str(conninfo_to_dict(url).get("options") or "")
    return (f"-c work_mem={WORK_MEM} " + given + " -c max_parallel_workers_per_gather=0").strip()


def password_apart(url: str) -> tuple[str, str | None]:
    """The URL without its password (libpq then reads PGPASSWORD or ~/.pgpass), and the password:
    a daemon gets the one on its command line (which other users can read) and the other in its
    environment."""
    parts = urlsplit(url)
    if parts.password is None:
        return url, None
    user, host = parts.netloc.rsplit("@", 1)
    bare = urlunsplit(parts._replace(netloc=f"{user.split(':', 1)[0]}@{host}"))
    return bare, unquote(parts.password)


class PgConnection:
    """A psycopg connection as the store modules use it (autocommit; blocks open transactions).

    ``tansaku_backend`` routes the store functions (store/backend.py); ``positions_cache`` keeps
    the token positions one read block has fetched (a search asks for the same tokens several
    times), and is never used by a writer, whose reads must see its own changes."""

    tansaku_backend = "postgresql"

    def __init__(self, raw: Any, *, reader: bool) -> None:
        self.raw = raw
        self.positions_cache: dict[Any, Any] | None = {} if reader else None
        # A writer's batched rows (documents._KeywordRows) and what must run before COMMIT.
        self.keyword_rows: Any = None
        self.before_commit: list[Callable[[], None]] = []
        self.vector_types = False  # pgvector's type registered (vectors.load_extension)
        self.schema_current = False  # in a read block that found the schema current (begin_read)
        # A collection's writer (write_lock): other writers may run beside it, so its prunes wait
        # for COMMIT and run only if it is alone then (PostgresBackend._prune_if_alone).
        self.shared_writer = False
        self.deferred_prunes: dict[str, Callable[[], object]] = {}

    def execute(self, sql: str, params: Any = None) -> Any:
        return self.raw.execute(sql, params)

    def executemany(self, sql: str, rows: Any) -> None:
        with self.raw.cursor() as cursor:
            cursor.executemany(sql, rows)

    @contextlib.contextmanager
    def copy(self, sql: str) -> Iterator[Any]:
        """``COPY ... FROM STDIN``: write rows with ``write_row``; sent when the block ends."""
        with self.raw.cursor() as cursor, cursor.copy(sql) as copy:
            yield copy

    @property
    def in_transaction(self) -> bool:
        return bool(self.raw.info.transaction_status != 0)  # 0 = IDLE

    def close(self) -> None:
        self.raw.close()
