"""An index's own collections and contexts, kept in the database (migration 8).

A database is shared: every member of a team, on any machine, reads and writes one list here, so a
collection one adds is the others' too, and none of it shows up in anyone's local SQLite index. A
SQLite index keeps its list in its own config file instead (config/index_lists.py says why).
Each collection is its config table (``settings.collection_entry``) as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .migrations import current_version

LISTS_VERSION = 8  # the schema version that created the tables


@dataclass
class Snapshot:
    """What a command needs to know of a database's list: its schema version (None: no tansaku
    index there yet), its collections' entries and contexts (empty before version 8), and which of
    the names asked about have documents here (for moving today's configs' collections)."""

    version: int | None
    collections: dict[str, dict[str, Any]] = field(default_factory=dict)
    contexts: dict[str, str] = field(default_factory=dict)
    holding: set[str] = field(default_factory=set)

    @property
    def has_lists(self) -> bool:
        return self.version is not None and self.version >= LISTS_VERSION


# Every search reads the list first: the version, the lists and the names asked for in one
# statement (five round trips before). An index before LISTS_VERSION, or none, fails it: then
# statement by statement below.
_AT_ONCE = (
    "SELECT (SELECT version FROM tansaku_schema LIMIT 1),"
    " (SELECT coalesce(json_agg(json_build_array(name, entry) ORDER BY name), '[]') FROM collections),"
    " (SELECT coalesce(json_agg(json_build_array(path, text)), '[]') FROM contexts),"
    " ARRAY(SELECT a.name FROM unnest(%s::text[]) AS a(name) WHERE EXISTS (SELECT FROM (SELECT 1"
    " FROM documents WHERE collection = a.name ORDER BY collection, path LIMIT 1) AS d))"
)


def _at_once(conn: Any, asked: Sequence[str]) -> Snapshot | None:
    import psycopg

    if conn.in_transaction and not getattr(conn, "schema_current", False):
        return None  # a failed statement would end the caller's transaction
    try:
        version, collections, contexts, holding = conn.execute(_AT_ONCE, (list(asked),)).fetchone()
    except psycopg.errors.UndefinedTable:
        return None
    found = Snapshot(0 if version is None else int(version))
    if not found.has_lists:
        return None
    found.collections = {name: entry for name, entry in collections}
    found.contexts = {path: text for path, text in contexts}
    found.holding = set(holding) if asked else set()
    return found


def snapshot(conn: Any, asked: Sequence[str] = ()) -> Snapshot:
    """The list, read on a connection that does not insist on the current schema (an index of an
    older version still answers what it holds; `update` upgrades it)."""
    fast = _at_once(conn, asked)
    if fast is not None:
        return fast
    version = current_version(conn)
    if version is None:
        return Snapshot(None)
    found = Snapshot(version)
    if found.has_lists:
        found.collections = {
            name: entry if isinstance(entry, dict) else json.loads(entry)
            for name, entry in conn.execute("SELECT name, entry FROM collections ORDER BY name")
        }
        found.contexts = {path: text for path, text in conn.execute("SELECT path, text FROM contexts")}
    if asked:
        # One index probe per name (a DISTINCT over the matches read every document's entry:
        # 2 to 12 ms a search at 10,000 files); ORDER BY ... LIMIT 1 makes it the index's.
        rows = conn.execute(
            "SELECT a.name FROM unnest(%s::text[]) AS a(name) WHERE EXISTS (SELECT FROM (SELECT 1"
            " FROM documents WHERE collection = a.name ORDER BY collection, path LIMIT 1) AS d)",
            (list(asked),),
        )
        found.holding = {name for (name,) in rows}
    return found


def write(
    conn: Any,
    put: Mapping[str, dict[str, Any]],
    gone: Iterable[str] = (),
    contexts_put: Mapping[str, str] | None = None,
    contexts_gone: Iterable[str] = (),
) -> None:
    """Add or replace the collections in ``put``, delete those ``gone`` (and the same for
    contexts), inside the caller's write transaction."""
    for name in gone:
        conn.execute("DELETE FROM collections WHERE name = %s", (name,))
    for name, entry in put.items():
        conn.execute(
            "INSERT INTO collections (name, entry) VALUES (%s, %s::jsonb)"
            " ON CONFLICT (name) DO UPDATE SET entry = excluded.entry",
            (name, json.dumps(entry, sort_keys=True)),
        )
    for path in contexts_gone:
        conn.execute("DELETE FROM contexts WHERE path = %s", (path,))
    for path, text in (contexts_put or {}).items():
        conn.execute(
            "INSERT INTO contexts (path, text) VALUES (%s, %s)"
            " ON CONFLICT (path) DO UPDATE SET text = excluded.text",
            (path, text),
        )
