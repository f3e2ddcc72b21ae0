"""Each index's own collections and contexts. Mixed into api.Tansaku (``self`` is an api_facade.Facade).

Every index has its own list: the default SQLite file's is ``index.toml``'s, ``--index NAME``'s is
``NAME.toml``'s, and an index in PostgreSQL (``--index postgresql://...`` or a config's
``[index] url``) keeps its list in the database (store/postgres/collection_lists.py), so every
member of a team sees the same collections and none of them shows up in anyone's local index.

Why the two backends differ: a SQLite index is one machine's derived data in the cache folder
(deleting it and running `update` rebuilds it from the config), and its config file is already
its own (one file per index name), hand-editable, the source of truth. A database is shared by
machines that each have their own config file; a list kept in any one of them would be that
member's alone, which is the bug this fixes. Contexts go with the collections (both kept in the
same place): their paths name collections (``tansaku://NAME/...``), `collection rename` and
`remove` carry them along, and a team's results should carry the team's notes.

Today's configs (before the database kept a list) are moved on first use: the collections of
the config a database index used to share whose documents are in the database are added to its
list, with their contexts (and the config's global context, if the database has none yet); they
leave the config file only if its own SQLite index holds none of their documents (a collection
with documents in both is in both lists; one with documents in neither stays in the file).
A config whose own index is the database (``[index] url``) gives it all its collections and
contexts. The move is idempotent: what moved is in the database's list, which is read first.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from .config import settings
from .errors import ConfigInvalid, IndexMissing, IndexSchemaMismatch, TansakuError
from .paths import VIRTUAL_PREFIX
from .store.backend import SqliteBackend, writing

if TYPE_CHECKING:
    from .api_facade import Facade
    from .store.postgres.backend import PostgresBackend
    from .store.postgres.collection_lists import Snapshot
    from .types import Collection


@dataclass
class _FromFile:
    """Collections and contexts of the config file that belong to a database index but are not
    in its list yet (a config of before the move, or entries written into the file by hand)."""

    file: settings.Config
    own: bool  # the file's own index is this database ([index] url)
    collections: dict[str, Collection] = field(default_factory=dict)
    contexts: dict[str, str] = field(default_factory=dict)


def _collection_of(key: str) -> str | None:
    if not key.startswith(VIRTUAL_PREFIX):
        return None
    return key[len(VIRTUAL_PREFIX) :].partition("/")[0]


class IndexListMethods:
    _from_file: _FromFile | None = None

    @property
    def _lists_in_index(self: Facade) -> bool:
        """Whether the index keeps its own list (PostgreSQL) rather than its config file (SQLite)."""
        return not isinstance(self.backend, SqliteBackend)

    def _file_config(self: Facade) -> settings.Config:
        return settings.load(self.config_path)

    def config(self: Facade) -> settings.Config:
        """The selected index's config: its collections and contexts, and the file's settings."""
        return self._config(move=True)

    def listed_config(self: Facade) -> settings.Config:
        """config() without moving anything (doctor is read-only)."""
        return self._config(move=False)

    def _config(self: Facade, *, move: bool) -> settings.Config:
        file = self._file_config()
        if not self._lists_in_index:
            return file
        return self._database_config(file, self.backend, move=move)  # type: ignore[arg-type]

    def _database_config(
        self: Facade, file: settings.Config, backend: PostgresBackend, *, move: bool
    ) -> settings.Config:
        try:
            own = settings.index_url(file) == backend.url
        except ConfigInvalid:
            own = False
        found = self._list_snapshot(backend, () if own else sorted(file.collections))
        stored = {name: settings.collection_from_entry(name, entry, backend.location)
                  for name, entry in found.collections.items()}  # fmt: skip
        pending = _FromFile(file, own)
        pending.collections = {
            name: c
            for name, c in file.collections.items()
            if name not in stored and (own or name in found.holding)
        }
        if own or pending.collections:
            pending.contexts = {
                key: text
                for key, text in file.contexts.items()
                if key not in found.contexts
                and (own or key == "/" or _collection_of(key) in pending.collections)
            }
        self._from_file = pending
        if move and found.has_lists and (pending.collections or pending.contexts):
            with writing(backend, "collection list move") as conn:
                self._write_lists(conn, dict(pending.collections), (), dict(pending.contexts), ())
            self._forget_moved(pending, set(pending.collections), set(pending.contexts))
        collections = {**pending.collections, **stored}
        contexts = {**pending.contexts, **found.contexts}
        return replace(file, collections=collections, contexts=contexts)

    def _list_snapshot(self: Facade, backend: PostgresBackend, asked: Any) -> Snapshot:
        from .store.postgres.collection_lists import Snapshot, snapshot

        if self.keep_connections:
            # A server reads through its pool (one list read per request, no new connection).
            try:
                with self._reader() as conn:
                    return snapshot(conn, asked)
            except IndexMissing:
                return Snapshot(None)
            except IndexSchemaMismatch:
                pass
        with backend.unchecked() as conn:
            return snapshot(conn, asked)

    def _write_lists(
        self: Facade,
        conn: Any,
        put: dict[str, Collection],
        gone: Any,
        contexts_put: dict[str, str],
        contexts_gone: Any,
    ) -> None:
        from .store.postgres import collection_lists

        entries = {name: settings.collection_entry(c) for name, c in put.items()}
        collection_lists.write(conn, entries, gone, contexts_put, contexts_gone)

    def _forget_moved(self: Facade, pending: _FromFile, names: set[str], contexts: set[str]) -> None:
        """Take out of the config file what is now in the database's list: all of it when the
        file's own index is the database; else the collections its SQLite index holds no
        documents of, with their contexts (the global context stays: it is the file's too)."""
        if pending.own:
            leaving = names
        elif settings.index_url(pending.file) is None:
            held = self._held_by_file_index(sorted(names))
            leaving = {name for name in names if name not in held}
        else:
            return  # the file belongs to another database: it moves there on its own first use
        current = self._file_config()
        left_contexts = {
            key: text
            for key, text in current.contexts.items()
            if not (key in contexts and (pending.own or _collection_of(key) in leaving))
        }
        left = {name: c for name, c in current.collections.items() if name not in leaving}
        if left != current.collections or left_contexts != current.contexts:
            settings.save(self.config_path, replace(current, collections=left, contexts=left_contexts))

    def _held_by_file_index(self: Facade, names: list[str]) -> set[str]:
        """Of ``names``, those the file's SQLite index has documents of (all of them when it cannot
        be read: nothing leaves the file on a guess)."""
        from .store.backend import documents

        sqlite = SqliteBackend(self.locations.index_file)
        if not sqlite.exists():
            return set()
        try:
            with sqlite.reading() as conn:
                counts = documents.collection_counts(conn)
        except TansakuError:
            return set(names)
        return {name for name in names if counts.get(name, (0, 0))[0] > 0}

    def _save_config(
        self: Facade,
        old: settings.Config,
        new: settings.Config,
        command: str = "collection list",
        conn: Any = None,
    ) -> None:
        """Save what a command changed of ``old`` (what config() gave it): to the config file
        for a SQLite index; to the database's list for one in PostgreSQL (inside ``conn``'s write
        transaction when given), the file keeping its other settings."""
        backend = self.backend
        if isinstance(backend, SqliteBackend):
            settings.save(self.config_path, new)
            return
        pending = self._from_file
        from_file = set(pending.collections) if pending else set()
        from_file_contexts = set(pending.contexts) if pending else set()
        put = {n: c for n, c in new.collections.items() if n in from_file or old.collections.get(n) != c}
        gone = [n for n in old.collections if n not in new.collections]
        contexts_put = {
            k: t for k, t in new.contexts.items() if k in from_file_contexts or old.contexts.get(k) != t
        }
        contexts_gone = [k for k in old.contexts if k not in new.contexts]
        if conn is not None:
            self._write_lists(conn, put, gone, contexts_put, contexts_gone)
        else:
            with writing(backend, command) as own_conn:
                self._write_lists(own_conn, put, gone, contexts_put, contexts_gone)
        if pending and (from_file or from_file_contexts):
            self._forget_moved(pending, from_file, from_file_contexts)
