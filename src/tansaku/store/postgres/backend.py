"""Opening an index kept in PostgreSQL (``--index postgresql://...``): connections, the schema
check, migrations, the writer lock and how the driver's errors read.

The connection itself, the driver and the session's settings are store/postgres/connection.py's.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
import zlib
from collections.abc import Iterator
from typing import Any

from ...errors import (
    IndexError_,
    IndexLocked,
    IndexMissing,
    IndexSchemaMismatch,
    IndexUnreachable,
)
from ..db import LOCK_TIMEOUT_ENV, lock_timeout
from .bm25_sql import DOCUMENT_POSTINGS
from .connection import CONNECT_TIMEOUT, PgConnection, driver, session_options, without_password
from .migrations import SCHEMA_VERSION, current_version, migrate

# pg_advisory locks are named by two int4s: tansaku's ("tnsk") and what it guards. Migration 6's
# tansaku_take_ids looks for other writers by LOCK_SPACE and WRITER_LOCK's numbers: keep them.
LOCK_SPACE = 0x746E736B
WRITER_LOCK = 1
MIGRATION_LOCK = 2
# Commands of which one runs at a time on an index, beside the writer lock (SQLite's lock files).
COMMAND_LOCKS = {"embed": 3}
# A collection's writer lock: this space ("tnsc") and a hash of the collection's name (two names
# with one hash only wait for each other).
COLLECTION_SPACE = 0x746E7363
_POLL = 0.05
_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
HANDOVER_SECONDS = 5.0
# documents.sole_collection's key in a read block's cache: answered by _BEGIN_READ.
SOLE_COLLECTION = "sole collection"
_BEGIN_READ = (
    f"{_BEGIN}; SELECT (SELECT version FROM tansaku_schema LIMIT 1),"
    " (SELECT array_agg(name) FROM (SELECT name FROM collection_state LIMIT 2) AS c),"
    " (SELECT ARRAY[docs, tokens] FROM keyword_totals LIMIT 1)"
)


def collection_lock(name: str) -> tuple[int, int]:
    return COLLECTION_SPACE, zlib.crc32(name.encode("utf-8")) & 0x7FFFFFFF


def _close_all(connections: list[Any]) -> None:
    while connections:
        with contextlib.suppress(Exception):
            connections.pop().close()


class PostgresBackend:
    kind = "postgresql"

    def __init__(self, url: str) -> None:
        self.url = url
        self.location = without_password(url)
        self.schema_version = SCHEMA_VERSION
        # The connection an ``unchecked`` block ended with, for the next ``reading`` to take
        # (HANDOVER_SECONDS at most): a command reads its collection list, then searches, and
        # connecting is 3.5 ms of a search's 30. Closed with the backend (or at exit) if untaken.
        self._handed: list[Any] = []
        self._handed_at = 0.0
        self._handing = threading.Lock()
        weakref.finalize(self, _close_all, self._handed)

    @property
    def database_error(self) -> type[BaseException]:
        return driver().Error  # type: ignore[no-any-return]

    def _connect(self) -> Any:
        psycopg = driver()
        try:
            return psycopg.connect(
                self.url,
                autocommit=True,
                connect_timeout=CONNECT_TIMEOUT,
                application_name="tansaku",
                options=session_options(self.url),
            )
        except psycopg.Error as exc:
            raise self.translate(exc) from exc

    def exists(self) -> bool:
        raw = self._connect()
        try:
            return current_version(PgConnection(raw, reader=True)) is not None
        finally:
            raw.close()

    def size_bytes(self) -> int:
        raw = self._connect()
        try:
            return int(raw.execute("SELECT pg_database_size(current_database())").fetchone()[0])
        finally:
            raw.close()

    def describe(self) -> Any:
        """The server's version, pgvector's (installed here, or installable), and the median of
        five round trips: what `status` shows, and what a slow search may come from."""
        from ...types import ServerInfo

        raw = self._connect()
        try:
            product = "PostgreSQL " + str(raw.execute("SHOW server_version").fetchone()[0]).split()[0]
            installed = raw.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
            available = raw.execute(
                "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
            ).fetchone()
            trips = []
            for _ in range(5):
                started = time.perf_counter()
                raw.execute("SELECT 1").fetchone()
                trips.append((time.perf_counter() - started) * 1000)
        finally:
            raw.close()
        return ServerInfo(
            product,
            installed[0] if installed else None,
            available[0] if available else None,
            sorted(trips)[len(trips) // 2],
        )

    def begin_read(self, conn: PgConnection) -> None:
        """Open a read block's transaction on ``conn`` and check the schema in one round trip
        (BEGIN, the schema's version, the collections' names and the keyword totals: 4 round trips
        before, each 0.3 to 5 ms on a loaded machine). The version is read in the block's own
        snapshot; the names answer documents.sole_collection and the totals
        bm25_sql.table_totals, which every search asks. Where that statement fails
        (no tansaku tables, or an old schema without them), the transaction is rolled back and
        the schema is checked statement by statement, which says what is wrong."""
        psycopg = driver()
        try:
            cursor = conn.execute(_BEGIN_READ)
            cursor.nextset()  # the first result is BEGIN's
            version, names, totals = cursor.fetchone()
        except psycopg.errors.UndefinedTable:
            conn.execute("ROLLBACK")
            self._checked(conn)  # raises IndexMissing or IndexSchemaMismatch
            conn.execute(_BEGIN)  # (a schema made meanwhile)
            return
        if version != SCHEMA_VERSION:
            self._checked(conn, 0 if version is None else int(version))
        conn.schema_current = True
        cache = conn.positions_cache
        if cache is not None:
            cache[SOLE_COLLECTION] = names[0] if names and len(names) == 1 else None
            if totals is not None:  # bm25_sql.table_totals' (every scoring statement needs them)
                cache[("totals", DOCUMENT_POSTINGS.name)] = int(totals[0]), int(totals[1])

    def _checked(self, conn: PgConnection, known: int | None = None) -> None:
        version = current_version(conn) if known is None else known
        if version is None:
            raise IndexMissing(
                f"no tansaku index in {self.location}",
                hint="create it by adding a folder: `tansaku --index URL collection add PATH`",
            )
        if version != SCHEMA_VERSION:
            newer = version > SCHEMA_VERSION
            raise IndexSchemaMismatch(
                f"the index in {self.location} has schema version {version}; this tansaku uses "
                f"{SCHEMA_VERSION}",
                hint="upgrade tansaku" if newer else "run `tansaku update` to upgrade it",
                version=version,
            )

    @contextlib.contextmanager
    def unchecked(self) -> Iterator[PgConnection]:
        """An autocommit connection that does not insist on the current schema: for what a command
        reads before it knows whether it will upgrade the index (its collection list). Ended
        without an error, its connection is handed to the next ``reading`` (within
        HANDOVER_SECONDS), which would otherwise connect again."""
        psycopg = driver()
        conn = PgConnection(self._connect(), reader=True)
        ended = False
        try:
            yield conn
            ended = True
        except psycopg.Error as exc:
            raise self.translate(exc) from exc
        finally:
            if ended and not conn.raw.closed and not conn.in_transaction:
                self._hand_over(conn.raw)
            else:
                conn.close()

    def _hand_over(self, raw: Any) -> None:
        with self._handing:
            _close_all(self._handed)  # the one before, untaken
            self._handed.append(raw)
            self._handed_at = time.monotonic()

    def _handed_connection(self) -> Any:
        """The connection ``unchecked`` handed over, if recent and idle; else None."""
        with self._handing:
            if not self._handed:
                return None
            raw = self._handed.pop()
            fresh = time.monotonic() - self._handed_at < HANDOVER_SECONDS
        if fresh and not raw.closed and raw.info.transaction_status == 0:  # IDLE
            return raw
        with contextlib.suppress(Exception):
            raw.close()
        return None

    @contextlib.contextmanager
    def reading(self) -> Iterator[PgConnection]:
        """A read-only snapshot for one block: every statement in it sees one state of the index,
        and it never waits for a writer (MVCC)."""
        psycopg = driver()
        handed = self._handed_connection()
        conn = PgConnection(handed or self._connect(), reader=True)
        try:
            try:
                self.begin_read(conn)
            except psycopg.OperationalError:
                if handed is None:
                    raise
                conn.close()  # the server closed it meanwhile (a restart): a new one
                conn = PgConnection(self._connect(), reader=True)
                self.begin_read(conn)
            yield conn
        except psycopg.Error as exc:
            raise self.translate(exc) from exc
        finally:
            conn.close()  # ends the transaction (no ROLLBACK's round trip first: nothing written)

    def open_write(self) -> PgConnection:
        psycopg = driver()
        conn = PgConnection(self._connect(), reader=False)
        try:
            version = current_version(conn)
            if version is not None and version > SCHEMA_VERSION:
                self._checked(conn)
            if version != SCHEMA_VERSION:
                # Two first commands may race to create the tables: one migrates, the other waits.
                conn.execute("BEGIN")
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, MIGRATION_LOCK))
                # ... and not beside a writer (of any collection) using the tables it changes.
                conn.execute("SELECT pg_advisory_xact_lock(%s, %s)", (LOCK_SPACE, WRITER_LOCK))
                migrate(conn)
                conn.execute("COMMIT")
        except psycopg.Error as exc:
            conn.close()
            raise self.translate(exc) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    @contextlib.contextmanager
    def write_lock(
        self, conn: PgConnection, command: str = "tansaku", collection: str | None = None
    ) -> Iterator[None]:
        """A write transaction. With ``collection`` (an `update`), one writer per collection: the
        index lock shared, the collection's exclusive, so writers of other collections run beside
        it. Without (`collection remove`/`rename`, `embed`'s batches), the index lock exclusive:
        it waits for every writer and keeps new ones out until COMMIT. Transaction-scoped advisory
        locks, released at COMMIT or ROLLBACK, also when the process dies; a lock not had within
        the lock timeout fails naming its holder. Readers never wait for either."""
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT set_config('application_name', %s, true)", (f"tansaku {command}"[:63],))
            if collection is None:
                self._wait_for(conn, "pg_try_advisory_xact_lock", (LOCK_SPACE, WRITER_LOCK))
            else:
                # The collection's first: a writer waiting for it holds nothing, so it does not
                # keep the one it waits for from finding itself alone (_prune_if_alone).
                self._wait_for(conn, "pg_try_advisory_xact_lock", collection_lock(collection))
                self._wait_for(conn, "pg_try_advisory_xact_lock_shared", (LOCK_SPACE, WRITER_LOCK))
                conn.shared_writer = True
            yield
            for step in conn.before_commit:
                step()
            self._prune_if_alone(conn)
            # A reader that keeps vectors (ChangeWatch below) sees the index changed.
            conn.execute("UPDATE index_changes SET version = version + 1")
            conn.execute("COMMIT")
        except BaseException:
            conn.keyword_rows = None  # rows of a rolled-back transaction are never sent
            conn.before_commit.clear()
            if conn.in_transaction:
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
            raise
        finally:
            conn.shared_writer = False
            conn.deferred_prunes.clear()

    def _wait_for(self, conn: PgConnection, function: str, key: tuple[int, int]) -> None:
        deadline = time.monotonic() + lock_timeout()
        while not conn.execute(f"SELECT {function}(%s, %s)", key).fetchone()[0]:
            if time.monotonic() >= deadline:
                raise self._locked(conn, key)
            time.sleep(_POLL)

    def _prune_if_alone(self, conn: PgConnection) -> None:
        """Deleting what no document uses any more (texts, chunks, vectors' links, old
        extractions) is safe only with no other writer about: one may be about to use a row it
        saw. A collection writer does it at its end if it can have the index lock exclusive at
        once (no one else writing; held to COMMIT, a moment), and leaves it to a later writer
        otherwise."""
        if not conn.deferred_prunes:
            return
        alone = conn.execute("SELECT pg_try_advisory_xact_lock(%s, %s)", (LOCK_SPACE, WRITER_LOCK))
        if not alone.fetchone()[0]:
            return
        for prune in list(conn.deferred_prunes.values()):
            prune()

    @contextlib.contextmanager
    def command_lock(self, conn: PgConnection, name: str) -> Iterator[None]:
        """One ``tansaku NAME`` at a time on this database (index/locks.py's lock file on SQLite):
        a session advisory lock, held by ``conn`` for the block (and released if the process dies)."""
        key = COMMAND_LOCKS[name]
        deadline = time.monotonic() + lock_timeout()
        while not conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (LOCK_SPACE, key)).fetchone()[0]:
            if time.monotonic() >= deadline:
                raise IndexLocked(
                    f"another `tansaku {name}` is running on {self.location}{self._holder(conn, key)}",
                    hint="wait for it to finish (it keeps its progress), or stop it",
                )
            time.sleep(_POLL)
        try:
            yield
        finally:
            with contextlib.suppress(Exception):
                conn.execute("SELECT pg_advisory_unlock(%s, %s)", (LOCK_SPACE, key))

    def _holder(self, conn: PgConnection, key: int) -> str:
        row = conn.execute(
            "SELECT a.pid, a.client_addr FROM pg_locks AS l JOIN pg_stat_activity AS a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objid = %s AND l.granted",
            (LOCK_SPACE, key),
        ).fetchone()
        if row is None:
            return ""
        return f" (server pid {row[0]}{f' at {row[1]}' if row[1] else ''})"

    def change_watch(self) -> ChangeWatch:
        return ChangeWatch(self)

    def reader_pool(self) -> Any:
        from .pool import ReaderPool

        return ReaderPool(self)

    def _locked(self, conn: PgConnection, key: tuple[int, int]) -> IndexLocked:
        row = conn.execute(
            "SELECT a.pid, a.application_name, a.client_addr, a.xact_start FROM pg_locks AS l"
            " JOIN pg_stat_activity AS a ON a.pid = l.pid"
            " WHERE l.locktype = 'advisory' AND l.classid = %s AND l.objid = %s AND l.objsubid = 2"
            " AND l.granted AND l.pid <> pg_backend_pid() ORDER BY a.xact_start LIMIT 1",
            key,
        ).fetchone()
        who = ""
        if row is not None:
            where = f" at {row[2]}" if row[2] else ""
            since = row[3].strftime("%Y-%m-%dT%H:%M:%SZ") if row[3] else "?"
            who = f" by server pid {row[0]}{where} ({row[1] or 'tansaku'}, since {since})"
        return IndexLocked(
            f"the index in {self.location} is locked{who}; gave up after {lock_timeout():g} s",
            hint=f"wait for the other command to finish, or raise {LOCK_TIMEOUT_ENV}",
        )

    def translate(self, exc: BaseException) -> Exception:
        psycopg = driver()
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, psycopg.OperationalError):
            return IndexUnreachable(
                f"cannot use the PostgreSQL index {self.location}: {first}",
                hint="check that the server runs and the URL (host, port, database, user) is right",
            )
        return IndexError_(f"the PostgreSQL index {self.location} failed: {first}")


class ChangeWatch:
    """Tells a long-lived reader whether the index changed since it last looked (store/db.py's
    ChangeWatch for SQLite): the count of committed write transactions, read on a connection of
    its own. None when the server or the table cannot be read (the cache then keeps nothing).
    Not thread-safe: callers hold their own lock."""

    def __init__(self, backend: PostgresBackend) -> None:
        self.backend = backend
        self._raw: Any = None

    def token(self) -> tuple[int] | None:
        psycopg = driver()
        try:
            if self._raw is None or self._raw.closed:
                self._raw = self.backend._connect()
            row = self._raw.execute("SELECT version FROM index_changes").fetchone()
        except (psycopg.Error, IndexError_):
            self.close()
            return None
        return (int(row[0]),) if row else None

    def close(self) -> None:
        if self._raw is not None:
            with contextlib.suppress(Exception):
                self._raw.close()
        self._raw = None
