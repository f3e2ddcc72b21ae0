"""Where the index lives: a SQLite file (the default) or a PostgreSQL database (``postgresql://``).

Two seams, both small on purpose:

- ``Backend`` is what opening an index means: does it exist, a read block, a write connection,
  the one-writer lock, how its errors read. ``open_backend`` picks the implementation from the
  index reference; ``SqliteBackend`` only forwards to ``store.db``.
- ``documents``, ``chunks``, ``vectors``, ``db``, ``fields``, ``extractions``, ``removal``,
  ``health`` and ``transcripts`` (store/routed.py, imported from here) stand for the store modules
  of the same names: ``store.keyword_search(conn, ...)`` runs on the backend of ``conn``.

Nothing here imports a database driver: a keyword search on a SQLite index pays for none of it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

from ..errors import BackendUnsupported
from ..paths import POSTGRES_SCHEMES, is_database_url  # noqa: F401 (imported from here too)
from .routed import (  # noqa: F401 (the routed store modules, imported from here by their callers)
    POSTGRES,
    backend_of,
    chunks,
    db,
    documents,
    extractions,
    fields,
    health,
    removal,
    transcripts,
    vectors,
)


class Backend(Protocol):
    """What the rest of tansaku asks of an index, whatever holds it."""

    kind: str  # "sqlite" or "postgresql"
    location: str  # what `status` shows: the file, or the URL without its password
    schema_version: int  # the version of the schema this tansaku writes on this backend

    def exists(self) -> bool:
        """Whether the index has been created (a reader of a missing one gets INDEX_MISSING)."""
        ...

    def size_bytes(self) -> int: ...

    def describe(self) -> Any:
        """The server behind the index (a types.ServerInfo), None for a file."""
        ...

    def reading(self) -> contextlib.AbstractContextManager[Any]:
        """A read connection for one block: the reads in it see one state of the index."""
        ...

    def open_write(self) -> Any:
        """A write connection (creating and migrating the index as needed); the caller closes it."""
        ...

    def write_lock(
        self, conn: Any, command: str, collection: str | None = None
    ) -> contextlib.AbstractContextManager[None]:
        """A write transaction, committed at the block's end. ``collection`` names the only one
        the block writes (an `update`): PostgreSQL then lets writers of other collections run
        beside it; without it, and always on SQLite, one writer at a time."""
        ...

    def translate(self, exc: BaseException) -> Exception:
        """A driver's exception raised mid-operation, as the matching tansaku error."""
        ...

    def change_watch(self) -> Any:
        """What a long-lived reader asks (``token()``) whether the index changed since."""
        ...

    def reader_pool(self) -> Any:
        """Read connections kept for a long-lived process (a server): ``reading()`` as above,
        without opening a connection per block; each thread gets its own."""
        ...

    @property
    def database_error(self) -> type[BaseException]:
        """The driver's base exception class (what ``translate`` understands)."""
        ...


class SqliteBackend:
    """The index as one SQLite file (store/db.py does the work)."""

    kind = "sqlite"

    def __init__(self, path: Path) -> None:
        from .migrations import SCHEMA_VERSION

        self.path = path
        self.location = str(path)
        self.schema_version = SCHEMA_VERSION

    def exists(self) -> bool:
        return self.path.exists()

    def size_bytes(self) -> int:
        try:
            return self.path.stat().st_size
        except OSError:
            return 0

    def describe(self) -> None:
        return None

    def reading(self) -> contextlib.AbstractContextManager[Any]:
        from . import db as sqlite_db

        return sqlite_db.reading(self.path)

    def open_write(self) -> Any:
        from . import db as sqlite_db

        return sqlite_db.open_write(self.path)

    def write_lock(
        self, conn: Any, command: str, collection: str | None = None
    ) -> contextlib.AbstractContextManager[None]:
        from . import db as sqlite_db

        return sqlite_db.write_lock(conn, self.path, command)

    def translate(self, exc: BaseException) -> Exception:
        from . import db as sqlite_db

        return sqlite_db.translate(exc, self.path)

    @property
    def database_error(self) -> type[BaseException]:
        from . import db as sqlite_db

        return sqlite_db.DatabaseError

    def change_watch(self) -> Any:
        from . import db as sqlite_db

        return sqlite_db.ChangeWatch(self.path)

    def reader_pool(self) -> Any:
        from . import db as sqlite_db

        return sqlite_db.ReaderPool(self.path)


def open_backend(ref: Path | str) -> Backend:
    """The backend for an index reference: a ``postgresql://`` URL, else a SQLite file path."""
    if isinstance(ref, str) and is_database_url(ref):
        from .postgres.backend import PostgresBackend

        return PostgresBackend(ref)
    return SqliteBackend(Path(ref))


def sqlite_path(backend: Backend) -> Path:
    """The SQLite file of the index; the commands not ported to other backends yet use it, and so
    refuse another backend with BACKEND_UNSUPPORTED."""
    if not isinstance(backend, SqliteBackend):
        raise BackendUnsupported(
            f"this command does not work on a {backend.kind} index yet ({backend.location})",
            hint="docs/backends.md lists the commands that do; use a SQLite index for this one",
        )
    return backend.path


@contextlib.contextmanager
def writing(backend: Backend, command: str) -> Iterator[Any]:
    """A write connection holding the writer lock for one block, closed after it."""
    conn = backend.open_write()
    try:
        with backend.write_lock(conn, command):
            yield conn
    except backend.database_error as exc:
        raise backend.translate(exc) from exc
    finally:
        conn.close()
