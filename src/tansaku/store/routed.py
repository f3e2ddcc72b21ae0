"""Store functions that run on the backend of the connection they are given.

``documents``, ``chunks``, ``vectors``, ``db``, ``fields``, ``extractions``, ``removal``,
``health`` and ``transcripts`` below stand for the store modules of the same names (callers import
them from store/backend.py). Callers keep calling ``store.keyword_search(conn, ...)``: the call
goes to ``tansaku.store.documents`` for a SQLite connection and, for a PostgreSQL one (a
connection that says ``tansaku_backend = "postgresql"``), to ``tansaku.store.postgres.documents``
when it has the function, else to the function of ``tansaku.store.documents`` written once for
both backends (marked ``@both``: store/dialect.py). Every SQL statement stays in the store
package, and a function a backend does not have yet fails with ``BACKEND_UNSUPPORTED`` instead of
a traceback. The modules' dataclasses and constants (``StoredDocument``, ``BM25_WEIGHTS``) are
shared: both backends return and take the same ones.

A store module's ``@both`` function that calls a function whose SQL differs calls it through
these (``routed.documents.delete_document``): this module imports no store module, so any of
them may import it. Nothing here imports a database driver.
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable
from typing import Any

from ..errors import BackendUnsupported
from .dialect import is_both

POSTGRES = "postgresql"

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
