"""Where the index lives: a SQLite file (the default) or a PostgreSQL database (``postgresql://``).

Two seams, both small on purpose:

- ``Backend`` is what opening an index means: does it exist, a read block, a write connection,
  the one-writer lock, how its errors read. ``open_backend`` picks the implementation from the
  index reference; ``SqliteBackend`` only forwards to ``store.db``.
- ``documents``, ``chunks``, ``vectors``, ``db``, ``fields``, ``extractions``, ``removal`` and
  ``transcripts``
  below stand for the store modules of the same names. Callers keep calling
  ``store.keyword_search(conn, ...)``: the call goes to ``tansaku.store.documents`` for a SQLite
  connection and to ``tansaku.store.postgres.documents`` for a PostgreSQL one (a connection that
  says ``tansaku_backend = "postgresql"``), or to the function of ``store/X.py`` written once for
  both backends (marked ``@both``: store/dialect.py). Every SQL statement stays in the store
  package, and a function a backend does not have yet fails with ``BACKEND_UNSUPPORTED`` instead
  of a traceback. The modules' dataclasses and constants
  (``StoredDocument``, ``BM25_WEIGHTS``) are shared: both backends return and take the same ones.

Nothing here imports a database driver: a keyword search on a SQLite index pays for none of it.
"""

from __future__ import annotations

import contextlib
import importlib
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol

from ..errors import BackendUnsupported
from .dialect import is_both

POSTGRES_SCHEMES = ("postgresql://", "postgres://")
POSTGRES = "postgresql"


def is_database_url(ref: str | None) -> bool:
    """Whether an index reference names a database server rather than a file or an index name."""
    return bool(ref) and str(ref).startswith(POSTGRES_SCHEMES)


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
        from . import db

        return db.reading(self.path)

    def open_write(self) -> Any:
        from . import db

        return db.open_write(self.path)

    def write_lock(
        self, conn: Any, command: str, collection: str | None = None
    ) -> contextlib.AbstractContextManager[None]:
        from . import db

        return db.write_lock(conn, self.path, command)

    def translate(self, exc: BaseException) -> Exception:
        from . import db

        return db.translate(exc, self.path)

    @property
    def database_error(self) -> type[BaseException]:
        from . import db

        return db.DatabaseError

    def change_watch(self) -> Any:
        from . import db

        return db.ChangeWatch(self.path)

    def reader_pool(self) -> Any:
        from . import db

        return db.ReaderPool(self.path)


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


# --- routing store functions by connection ---------------------------------------------------

# Classes constructed with a connection as their first argument (the others are shared values).
_CONNECTION_CLASSES = frozenset({"ChunkWriter"})


def backend_of(conn: Any) -> str:
    return getattr(conn, "tansaku_backend", "sqlite")


class _Routed:
    """A store module whose functions run on the backend of the connection they are given."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        sqlite_module = importlib.import_module(f"tansaku.store.{self._name}")
        sqlite_value = getattr(sqlite_module, attr)
        if isinstance(sqlite_value, types.FunctionType) or attr in _CONNECTION_CLASSES:
            value: Any = _router(self._name, attr, sqlite_module)
        else:
            value = sqlite_value
        setattr(self, attr, value)  # looked up once: later calls skip __getattr__
        return value


def _router(module: str, attr: str, sqlite_module: types.ModuleType) -> Callable[..., Any]:
    # The SQLite function is looked up on its module at each call, not kept: what the module holds
    # is what runs (a test that wraps store.documents.list_documents sees every call).
    def route(conn: Any, *args: Any, **kwargs: Any) -> Any:
        if backend_of(conn) == POSTGRES:
            return _postgres_impl(module, attr, sqlite_module)(conn, *args, **kwargs)
        return getattr(sqlite_module, attr)(conn, *args, **kwargs)

    route.__name__ = attr
    route.__doc__ = getattr(sqlite_module, attr).__doc__
    return route


def _postgres_impl(module: str, attr: str, sqlite_module: types.ModuleType) -> Callable[..., Any]:
    """PostgreSQL's own function, else the one written for both backends (store/dialect.py)."""
    found = getattr(_postgres_module(module), attr, None)
    if found is not None:
        return found  # type: ignore[no-any-return]
    shared = getattr(sqlite_module, attr)
    if is_both(shared):
        return shared  # type: ignore[no-any-return]
    raise BackendUnsupported(
        f"this command needs {module}.{attr}, which the PostgreSQL backend does not have yet",
        hint="docs/backends.md lists what works on PostgreSQL; use a SQLite index for this command",
    )


_POSTGRES_MODULES: dict[str, types.ModuleType | None] = {}


def _postgres_module(module: str) -> types.ModuleType | None:
    """store/postgres/<module>.py, None when PostgreSQL has no module of its own for it."""
    if module not in _POSTGRES_MODULES:
        name = f"tansaku.store.postgres.{module}"
        try:
            _POSTGRES_MODULES[module] = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            _POSTGRES_MODULES[module] = None
    return _POSTGRES_MODULES[module]


documents: Any = _Routed("documents")
chunks: Any = _Routed("chunks")
vectors: Any = _Routed("vectors")
db: Any = _Routed("db")
fields: Any = _Routed("fields")
extractions: Any = _Routed("extractions")
removal: Any = _Routed("removal")
health: Any = _Routed("health")
transcripts: Any = _Routed("transcripts")
