"""Opening the index: one place for the binding, pragmas, schema checks, locking and error mapping.

The binding is ``sqlean`` (a drop-in DB-API sqlite3 with FTS5 and extension loading on every
platform), so later vector support can load sqlite-vec on the same connections.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import sqlean as sqlite3

from ..errors import IndexLocked, IndexMissing, IndexSchemaMismatch
from . import failures
from .migrations import SCHEMA_VERSION, migrate

Connection = sqlite3.Connection
DatabaseError = sqlite3.DatabaseError
LOCK_TIMEOUT_ENV = "TANSAKU_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 10.0


def lock_timeout() -> float:
    return lock_timeout_setting()[0]


def lock_timeout_setting() -> tuple[float, str, str | None]:
    """Seconds a writer waits for the lock, their source and the problem with an ignored value.

    ``TANSAKU_LOCK_TIMEOUT``, else the default: the index is opened before any config file is
    read, so there is no config key (the order is still tansaku.precedence's). A value that is
    not a number of seconds falls back to the default rather than fail every command.
    """
    from ..precedence import DEFAULT, choose

    raw, source = choose(default=DEFAULT_LOCK_TIMEOUT, env=LOCK_TIMEOUT_ENV)
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_LOCK_TIMEOUT, DEFAULT, f"{LOCK_TIMEOUT_ENV}={raw!r} is not a number of seconds"
    if not value >= 0:  # also refuses NaN
        return DEFAULT_LOCK_TIMEOUT, DEFAULT, f"{LOCK_TIMEOUT_ENV}={raw!r} is negative"
    return value, source, None


def _connect(path: Path, *, readonly: bool, immutable: bool = False, any_thread: bool = False) -> Connection:
    if readonly:
        uri = f"file:{path.as_posix()}?mode=ro" + ("&immutable=1" if immutable else "")
        conn = sqlite3.connect(
            uri, uri=True, timeout=lock_timeout(), isolation_level=None, check_same_thread=not any_thread
        )
    else:
        conn = sqlite3.connect(str(path), timeout=lock_timeout(), isolation_level=None)
    conn.row_factory = sqlite3.Row
    return conn


def _read_connection(path: Path, *, any_thread: bool = False) -> Connection:
    """A read-only connection that has opened the file; sqlite errors are left unmapped.

    In WAL mode even a reader needs the -shm file, and on a read-only mount nobody can create
    it. With no -wal either, nothing is pending outside the main file, so ``immutable=1`` (no
    -shm, no locks) reads exactly what is there; nobody can write it meanwhile through this mount.
    """
    conn = _connect(path, readonly=True, any_thread=any_thread)
    try:
        conn.execute("PRAGMA user_version").fetchone()  # the first statement opens the file
        return conn
    except sqlite3.OperationalError as exc:
        conn.close()
        if not failures.only_immutable_can_read(path, exc):
            raise
    return _connect(path, readonly=True, immutable=True, any_thread=any_thread)


def _check_schema(conn: Connection, path: Path) -> int:
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.DatabaseError as exc:
        raise _map_error(exc, path) from exc
    return int(version)


def locked(path: Path) -> IndexLocked:
    holder = read_lock_holder(path)
    who = f" by {holder}" if holder else ""
    return IndexLocked(
        f"the index {path} is locked{who}; gave up after {lock_timeout():g} s",
        hint=f"wait for the other command to finish, or raise {LOCK_TIMEOUT_ENV}",
    )


def _map_error(exc: BaseException, path: Path) -> Exception:
    if failures.primary_code(exc) in (failures.SQLITE_BUSY, failures.SQLITE_LOCKED):
        return locked(path)
    return failures.explain(exc, path, lambda: quick_check_file(path))


def quick_check_file(path: Path) -> list[str] | None:
    """``PRAGMA quick_check`` on a connection of its own: the file's problems, [] when it is
    sound, None when it cannot be read to tell (the failure being explained may prevent that)."""
    try:
        conn = _read_connection(path)
    except sqlite3.DatabaseError as exc:
        return [str(exc)] if failures.says_damaged(exc) else None
    try:
        return quick_check(conn)
    except sqlite3.DatabaseError as exc:
        return [str(exc)] if failures.says_damaged(exc) else None
    finally:
        conn.close()


QUICK_CHECK_ROWS = 20  # enough to show what is wrong; a damaged file can list thousands


def quick_check(conn: Connection) -> list[str]:
    """``PRAGMA quick_check``'s complaints; an empty list when the file is sound (`doctor` asks
    through store/health.py)."""
    rows = [str(row[0]) for row in conn.execute(f"PRAGMA quick_check({QUICK_CHECK_ROWS})")]
    return [] if rows == ["ok"] else rows


def open_read(path: Path) -> Connection:
    """Open an existing index for reading. Never creates or changes anything."""
    if not path.exists():
        raise IndexMissing(
            f"no index at {path}",
            hint="create it by adding a folder: `tansaku collection add PATH`",
        )
    try:
        conn = _read_connection(path)
    except sqlite3.DatabaseError as exc:
        raise _map_error(exc, path) from exc
    version = _check_schema(conn, path)
    if version != SCHEMA_VERSION:
        conn.close()
        raise schema_mismatch(path, version)
    return conn


def schema_mismatch(path: Path, version: int) -> IndexSchemaMismatch:
    if version > SCHEMA_VERSION:
        return IndexSchemaMismatch(
            f"the index {path} has schema version {version}, newer than this tansaku "
            f"understands ({SCHEMA_VERSION})",
            hint="upgrade tansaku, or use another --index",
            version=version,
        )
    return IndexSchemaMismatch(
        f"the index {path} has schema version {version}; this tansaku uses {SCHEMA_VERSION}",
        hint="run `tansaku update` to upgrade it",
        version=version,
    )


def open_write(path: Path) -> Connection:
    """Open (creating if needed) the index for writing, migrating an older schema.

    A file that cannot be written is refused before SQLite tries: on a read-only mount SQLite
    would fall back to reading and fail later with a message that reads like damage.
    """
    reason = failures.unwritable_reason(path)
    if reason is not None:
        raise failures.read_only(path, reason)
    if not path.exists():
        try:
            _create_aside(path)
        except sqlite3.DatabaseError as exc:
            raise _map_error(exc, path) from exc
        except OSError as exc:
            mapped = failures.os_error(exc, path)
            if mapped is None:
                raise
            raise mapped from exc
    conn = _connect(path, readonly=False)
    version = _check_schema(conn, path)
    if version > SCHEMA_VERSION:
        conn.close()
        raise schema_mismatch(path, version)
    if version < SCHEMA_VERSION:
        with write_lock(conn, path):
            migrate(conn)
    from . import vectors

    # Deleting a document deletes its vectors: a writer must be able to touch the vec0 tables.
    if vectors.has_vec_tables(conn):
        vectors.load_extension(conn)
    return conn


def _create_aside(path: Path) -> None:
    """Build a new, empty index beside the final name and rename it into place.

    A crash or a full disk during creation leaves only a stray temporary file, never a
    half-made index under the real name.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    try:
        conn = sqlite3.connect(str(tmp), isolation_level=None)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN")
            migrate(conn)
            conn.execute("COMMIT")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            conn.close()
        for suffix in ("-wal", "-shm"):
            Path(str(tmp) + suffix).unlink(missing_ok=True)
        if path.exists():  # another process won the race: keep theirs
            tmp.unlink(missing_ok=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _lock_file(path: Path) -> Path:
    return path.with_name(path.name + ".writer")


def read_lock_holder(path: Path) -> str | None:
    # json is imported here and in write_lock, not at the top: a read-only search never needs it.
    import json

    try:
        info = json.loads(_lock_file(path).read_text(encoding="utf-8"))
        return f"pid {info['pid']} ({info['command']}, since {info['since']})"
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextlib.contextmanager
def write_lock(conn: Connection, path: Path, command: str = "tansaku") -> Iterator[None]:
    """One writer at a time: ``BEGIN IMMEDIATE`` waits up to the lock timeout, then fails clearly.

    Readers are not blocked (WAL). The side file only names the holder for the error message.
    """
    import json  # see read_lock_holder

    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        raise _map_error(exc, path) from exc
    info: dict[str, Any] = {
        "pid": os.getpid(),
        "command": command,
        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    lock_file = _lock_file(path)
    with contextlib.suppress(OSError):
        lock_file.write_text(json.dumps(info), encoding="utf-8")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    finally:
        with contextlib.suppress(OSError):
            lock_file.unlink()


def translate(exc: BaseException, path: Path) -> Exception:
    """Map a sqlite exception raised mid-operation to the matching tansaku error."""
    return _map_error(exc, path)


@contextlib.contextmanager
def reading(path: Path) -> Iterator[Connection]:
    """A read connection for one block, closed after it; a sqlite error raised inside the block
    leaves it as the matching tansaku error."""
    conn = open_read(path)
    try:
        yield conn
    except DatabaseError as exc:
        raise translate(exc, path) from exc
    finally:
        conn.close()


def read_snapshot(conn: Connection) -> None:
    """Start a read transaction unless one is open: the reads after it see one state of the index
    (a caller's transaction, when it has one, is that state)."""
    if not conn.in_transaction:
        conn.execute("BEGIN")


def insert_rows(conn: Connection, table: str, columns: str, rows: Sequence[Sequence[Any]]) -> None:
    """New rows of ``table``, their values in the order of ``columns`` ("hash, params, ..."), in
    one statement (PostgreSQL's: a COPY); nothing for no rows."""
    if rows:
        marks = ", ".join("?" * len(columns.split(",")))
        conn.executemany(f"INSERT INTO {table} ({columns}) VALUES ({marks})", rows)


def has_table(conn: Connection, name: str) -> bool:
    """Whether the schema has an object of that name: tables a later feature adds may be absent."""
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def file_identity(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the index file, None when it is gone: a rebuilt index (built aside,
    then swapped in) is a new file under the same name."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


class ChangeWatch:
    """Tells a long-lived reader whether the index changed since it last looked.

    The token is the file's identity (a rebuilt index is a new file) plus SQLite's
    ``data_version``, which moves whenever another connection commits. It costs a stat and a
    pragma, so a cache can check it on every query. Not thread-safe: callers hold their own lock.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: Connection | None = None
        self._file: tuple[int, int] | None = None

    def token(self) -> tuple[int, int, int] | None:
        file = file_identity(self.path)
        if file is None:
            self.close()
            return None
        if file != self._file or self._conn is None:
            self.close()
            try:
                self._conn = _read_connection(self.path, any_thread=True)
            except sqlite3.DatabaseError:
                return None
            self._file = file
        try:
            version = int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.DatabaseError:
            self.close()
            return None
        return (*file, version)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._file = None, None


class ReaderPool:
    """One read connection per thread, kept open between blocks (for a process that lives on,
    like a server): opening one and checking its schema costs about a millisecond, as much as a
    small keyword search.

    A kept connection still sees every commit (each statement outside a transaction reads the
    newest snapshot), but not a rebuilt index, which is a new file: the file's identity is
    checked at every outermost block and a changed file is opened afresh (schema check
    included). A block inside another on the same thread shares the outer one's connection, and
    only the outermost ends a transaction left open.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()

    def _connection(self) -> Connection:
        held: tuple[tuple[int, int], Connection] | None = getattr(self._local, "held", None)
        if held is not None and getattr(self._local, "depth", 0):
            return held[1]  # a block inside a block: the outer one's connection, as it is
        file = file_identity(self.path)
        if held is not None and file is not None and held[0] == file:
            return held[1]
        self._drop()
        conn = open_read(self.path)  # raises INDEX_MISSING, schema errors, as a one-shot reader
        if file is not None:
            self._local.held = (file, conn)
        return conn

    def _drop(self) -> None:
        held = getattr(self._local, "held", None)
        self._local.held = None
        if held is not None:
            held[1].close()

    @contextlib.contextmanager
    def reading(self) -> Iterator[Connection]:
        conn = self._connection()
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        try:
            yield conn
        except DatabaseError as exc:
            if not depth:
                self._drop()  # a connection that failed is not trusted again
            raise translate(exc, self.path) from exc
        finally:
            self._local.depth = depth
            held = getattr(self._local, "held", None)
            if held is None or held[1] is not conn:
                conn.close()  # not kept (no file identity to key it by): this block's own
            elif not depth and conn.in_transaction:
                conn.rollback()  # a snapshot left open would hide every later commit
