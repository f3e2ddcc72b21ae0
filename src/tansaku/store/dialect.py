"""Statements written once for both backends, and the few words in which SQLite and PostgreSQL differ.

A store function whose SQL is the same on both backends is written once, in ``store/X.py``, with
SQLite's ``?`` placeholders, and marked ``@both``; ``run`` (or ``run_many``) sends its statements
in the connection's own placeholders (``%s`` for psycopg, with a literal ``%`` doubled)::

    @both
    def mark_seen(conn, keys, seen_at):
        run_many(conn, "UPDATE extractions SET seen_at = ? WHERE hash = ? AND extractor = ?", rows)

Where a statement differs by a few words, ``dialect(conn)`` names them (as Django's backend
``operations`` do): ``one_of`` (a list of values; ``batches`` cuts a long one), ``contains`` (a
substring), ``upsert`` (insert or replace by key) and ``window`` (a column PostgreSQL cannot call
``window``); ``sql`` and ``mark`` fit a fragment to a statement built in the driver's own
placeholders. Rows are inserted in bulk by ``routed.db.insert_rows`` (PostgreSQL's: a COPY).
Whatever differs more (full-text matching and scoring, vector search, locks, migrations) is a
function of the backend's own module (``store/X.py`` for SQLite, ``store/postgres/X.py`` for
PostgreSQL) under the same name.

store/routed.py routes a call: a PostgreSQL connection runs ``store.postgres.X.f`` when that
module has an ``f``, else a ``@both`` function of ``store.X``, else fails with BACKEND_UNSUPPORTED.
A ``@both`` function that calls another store function whose SQL differs calls it through
store/routed.py's modules (``routed.documents.delete_document``), never directly.

Nothing here imports a database driver.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

BOTH = "__tansaku_both__"


def both(function: F) -> F:
    """Mark a store function whose statements run unchanged on both backends (through ``run``)."""
    setattr(function, BOTH, True)
    return function


def is_both(function: Any) -> bool:
    return bool(getattr(function, BOTH, False))


class Sqlite:
    name = "sqlite"
    mark = "?"  # a placeholder, for a fragment joined to statements in the driver's own style
    window = "window"  # chunk_vectors' window number
    MOST_VALUES = 500  # a one_of's values in one statement: well under SQLite's host-parameter limit

    def sql(self, statement: str) -> str:
        return statement

    def one_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        """``column`` is one of ``values`` (at least one): the condition and its parameters."""
        return f"{column} IN ({','.join('?' * len(values))})", list(values)

    def batches(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        """``values`` in as few parts as one ``one_of`` each can take (none when there are none)."""
        for start in range(0, len(values), self.MOST_VALUES):
            yield values[start : start + self.MOST_VALUES]

    def contains(self, text: str) -> str:
        """``text`` contains the (next) parameter."""
        return f"instr({text}, ?) > 0"

    def upsert(self, table: str, columns: str, key: str) -> str:
        """An INSERT of one row that replaces the row with the same ``key``; ``columns`` and
        ``key`` are lists of column names as SQL writes them ("doc_id, run_index")."""
        names = _names(columns)
        return f"INSERT OR REPLACE INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"


class Postgres(Sqlite):
    name = "postgresql"
    mark = "%s"
    window = "window_no"  # WINDOW is a reserved word

    def sql(self, statement: str) -> str:
        return _psycopg(statement)

    def one_of(self, column: str, values: Sequence[Any]) -> tuple[str, list[Any]]:
        return f"{column} = ANY(?)", [list(values)]

    def batches(self, values: Sequence[Any]) -> Iterator[Sequence[Any]]:
        if values:
            yield values  # an array is one parameter, of any length

    def contains(self, text: str) -> str:
        return f"strpos({text}, ?) > 0"

    def upsert(self, table: str, columns: str, key: str) -> str:
        names, keys = _names(columns), _names(key)
        updates = ", ".join(f"{c} = excluded.{c}" for c in names if c not in keys)
        return (
            f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})"
            f" ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {updates}"
        )


def _names(columns: str) -> list[str]:
    return [name.strip() for name in columns.split(",")]


SQLITE = Sqlite()
POSTGRES = Postgres()


def dialect(conn: Any) -> Sqlite:
    """The dialect of a connection (a PostgreSQL one says ``tansaku_backend = "postgresql"``)."""
    return POSTGRES if getattr(conn, "tansaku_backend", "sqlite") == "postgresql" else SQLITE


@functools.lru_cache(maxsize=512)
def _psycopg(statement: str) -> str:
    # No shared statement holds a "?" that is not a placeholder (no string literal has one).
    return statement.replace("%", "%%").replace("?", "%s")


def run(conn: Any, statement: str, params: Sequence[Any] = ()) -> Any:
    """``conn.execute`` of a statement written with ``?`` placeholders; the cursor."""
    return conn.execute(dialect(conn).sql(statement), params)


def run_many(conn: Any, statement: str, rows: Iterable[Sequence[Any]]) -> None:
    """``conn.executemany`` of a statement written with ``?`` placeholders (no rows: nothing)."""
    rows = list(rows)
    if rows:
        conn.executemany(dialect(conn).sql(statement), rows)
