"""The one way in: the CLI, the MCP and HTTP servers call these methods and render what they
return. Each resolves settings and collections and calls the package that does the work; nothing
here prints, exits or parses arguments.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .api_collections import CollectionMethods
from .api_contexts import ContextMethods
from .api_display import DisplayMethods
from .api_lists import IndexListMethods
from .api_transcripts import TranscriptMethods
from .config import settings
from .config.selection import named_or_all, searched_collections
from .errors import ConfigInvalid
from .fields.scope import fields_shown, where_filter, where_scope
from .paths import Locations, locations
from .store.backend import Backend, SqliteBackend, open_backend, sqlite_path, writing
from .store.kept_readers import KeptReaders

# Only the result types a keyword search builds are imported here; the others are imported by the
# methods that build them, because tansaku.types builds those dataclasses on first import (its
# comment says why) and every command pays for what this module imports.
from .types import Notice, SearchResult

if TYPE_CHECKING:
    from .index.progress import ProgressFactory
    from .search.vector_cache import VectorCache
    from .types import (
        CollectionInfo,
        CollectionUpdate,
        ContextPack,
        DocumentChunks,
        DocumentSlice,
        EmbedReport,
        FileEntry,
        MultiGetResult,
        StatusReport,
        UpdateReport,
    )


class Tansaku(IndexListMethods, CollectionMethods, ContextMethods, TranscriptMethods, DisplayMethods):
    """The collection, context, agent-transcript and display methods are mixed in from
    api_collections.py, api_contexts.py, api_transcripts.py and api_display.py; each index's own
    collection list (config()) from api_lists.py."""

    def __init__(
        self,
        index_name: str | None = None,
        *,
        cwd: str | None = None,
        keep_vectors: bool = True,
        keep_connections: bool = False,
        disk_paths: bool = True,
    ) -> None:
        """``disk_paths``: a file path on this machine inside a collection names its document too
        (a server passes False). ``keep_vectors``: vsearch reads the model's vectors into memory
        once and answers every later query from there while the index is unchanged (for a
        process that lives on, like a server). A one-shot command passes False: it searches them
        on disk with sqlite-vec rather than read them all for a single query.
        ``keep_connections``: read connections stay open between calls, one per thread
        (``Backend.reader_pool``: SQLite's kept files, PostgreSQL's connection pool), for the
        same kind of process."""
        self.locations: Locations = locations(index_name)
        self.cwd = cwd
        self.keep_vectors = keep_vectors
        self.disk_paths = disk_paths
        self._vectors: VectorCache | None = None
        self.keep_connections = keep_connections
        self._kept_readers = KeptReaders()
        self._backend: tuple[str | None, Backend] | None = None
        self._creating = threading.Lock()

    def _vector_cache(self) -> VectorCache:
        from .search.vector_cache import vector_cache_for

        with self._creating:  # two threads of a server must not each read the vectors
            if self._vectors is None:
                self._vectors = vector_cache_for(self.backend, self.keep_vectors)
        return self._vectors

    # --- config -------------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self.locations.config_file

    @property
    def backend(self) -> Backend:
        """Where the index is: ``--index postgresql://...``, else the config's ``[index] url``, else
        the SQLite file."""
        url = self.locations.index_url or self._configured_url()
        if self._backend is None or self._backend[0] != url:
            self._backend = (url, open_backend(url) if url else SqliteBackend(self.locations.index_file))
        return self._backend[1]

    def _configured_url(self) -> str | None:
        try:
            config = self._file_config()
        except ConfigInvalid:
            # A config that does not parse has no [index] url; the commands that read it report the
            # problem (doctor as a failed check), so choosing the index must not fail first.
            return None
        return settings.index_url(config)

    @property
    def index_path(self) -> Path:
        """The SQLite file, for the commands not ported to other backends yet (a PostgreSQL index
        is BACKEND_UNSUPPORTED for them)."""
        return sqlite_path(self.backend)

    def roles_left_out(self) -> dict[str, str]:
        """The model roles `query` does not use by default here, each with why
        (hybrid/model_defaults.py): what `models pull` without a role does not fetch."""
        from .hybrid.model_defaults import roles_left_out

        return roles_left_out(self.config_path, self._file_config().other.get("query"))

    def _reader(self) -> contextlib.AbstractContextManager[Any]:
        backend = self.backend
        return self._kept_readers.reading(backend) if self.keep_connections else backend.reading()

    def close(self) -> None:
        """Close the read connections kept for a long-lived process (``keep_connections``); the
        next read opens them again (store/kept_readers.py)."""
        self._kept_readers.close()
        if self._summaries is not None:
            self._summaries.close()

    def _writer(self, command: str) -> contextlib.AbstractContextManager[Any]:
        return writing(self.backend, command)

    # --- indexing -----------------------------------------------------------------------------

    def update(
        self,
        names: Sequence[str] = (),
        *,
        dry_run: bool = False,
        progress: ProgressFactory | None = None,
        chunk_strategy: str | None = None,
    ) -> UpdateReport:
        """Re-index. A ``chunk_strategy`` becomes the setting of the collections updated (so the
        next plain `update` does not re-chunk them back); a dry run saves nothing."""
        config = self.config()
        chosen = [c.name for c in named_or_all(config, names)]
        if chunk_strategy:
            from .config.collections import with_chunk_strategy

            changed = with_chunk_strategy(config, chosen, chunk_strategy)
            if not dry_run:
                self._save_config(config, changed, "update")
            config = changed
        return self._update(config, chosen, dry_run=dry_run, run_hooks=True, progress=progress)

    def watch(self, names: Sequence[str] = (), *, on_update: Any, stop: Any = None) -> int:
        """`update --watch` (index/watch.py): update, then update again the collections whose files
        change, until Ctrl-C or ``stop`` (a threading.Event); each report goes to ``on_update``."""
        from .index.watch import watch

        config = self.config()
        chosen = named_or_all(config, names)

        def update(which: Sequence[str], hooks: bool) -> UpdateReport:
            return self._update(self.config(), which, dry_run=False, run_hooks=hooks, progress=None)

        return watch(chosen, update, on_update, stop=stop)

    def _update(
        self,
        config: settings.Config,
        names: Sequence[str],
        *,
        dry_run: bool,
        run_hooks: bool,
        progress: ProgressFactory | None,
    ) -> UpdateReport:
        from .index.runner import update_named

        return update_named(
            self.backend, config, names, dry_run=dry_run, run_hooks=run_hooks, progress=progress
        )

    # --- search and retrieval -----------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        collections: Sequence[str] = (),
        limit: int | None = 5,
        min_score: float = 0.0,
        full: bool = False,
        snippets: bool = True,
        where: Sequence[str] = (),
        fields: bool = False,
        all_copies: bool = False,
    ) -> SearchResult:
        """``where``: ``--where`` conditions on front-matter fields, applied before the limit;
        ``fields``: each hit carries its document's fields (fields/); ``all_copies``: every
        document, not each text once with its copies' paths (search/copies.py)."""
        from .search.keyword import SearchOptions, search

        doc_filter = where_filter(where)
        config = self.config()
        chosen, warnings = searched_collections(config, collections)
        options = SearchOptions(
            limit=limit,
            min_score=min_score,
            full=full,
            snippets=snippets,
            where=doc_filter,
            all_copies=all_copies,
        )
        with self._reader() as conn:
            return fields_shown(conn, search(conn, query, chosen, config.contexts, options, warnings), fields)

    def _fields_added(self, result: SearchResult, fields: bool) -> SearchResult:
        if not fields:
            return result
        with self._reader() as conn:
            return fields_shown(conn, result, fields)

    def _file_scope(
        self, collections: Sequence[str], where: Sequence[str]
    ) -> tuple[list[str], list[Notice]] | None:
        """fields/scope.py: where_scope (the file collections a ``--where`` searches)."""
        return where_scope(self.config(), collections, where) if where else None

    def embed(
        self,
        collections: Sequence[str] = (),
        *,
        force: bool = False,
        progress: ProgressFactory | None = None,
        verbose: bool = False,
        consent: bool = False,
        quick: str = "auto",
    ) -> EmbedReport:
        """Embed chunks that have no vector for the configured model (all of them with ``force``);
        ``quick`` and ``consent``: index/embed_entry.py."""
        from .index.embed_entry import embed_index

        backend = self.backend
        chosen = named_or_all(self.config(), collections)
        return embed_index(
            backend, self.config_path, chosen,
            force=force, progress=progress, verbose=verbose, consent=consent, quick=quick,
        )  # fmt: skip

    def vsearch(
        self,
        query: str,
        *,
        collections: Sequence[str] = (),
        limit: int | None = 5,
        min_score: float = 0.3,
        full: bool = False,
        verbose: bool = False,
        where: Sequence[str] = (),
        fields: bool = False,
        all_copies: bool = False,
    ) -> SearchResult:
        from .search.vector_texts import with_unreadable_warning

        found = self._vsearch(
            query, collections, limit, min_score, full, verbose, where=where, all_copies=all_copies
        )
        return self._fields_added(with_unreadable_warning(*found), fields)

    def _vsearch(
        self,
        query: str,
        collections: Sequence[str],
        limit: int | None,
        min_score: float,
        full: bool,
        verbose: bool,
        snippets: bool = True,
        where: Sequence[str] = (),
        all_copies: bool = False,
    ) -> tuple[SearchResult, float]:
        """The vector results, and the share of the query's tokens the embedder does not know."""
        if not query.strip():
            from .errors import EmptyQuery

            raise EmptyQuery("the query is empty")
        found = self.vector_search_texts(
            [query], collections, limit, min_score, full, snippets, verbose,
            where=where, all_copies=all_copies,
        )  # fmt: skip
        return found.results[0], found.unreadable_shares[0]

    def vector_search_texts(
        self,
        texts: Sequence[str],
        collections: Sequence[str],
        limit: int | None,
        min_score: float,
        full: bool,
        snippets: bool,
        verbose: bool = False,
        levels: Any = None,
        where: Sequence[str] = (),
        all_copies: bool = False,
    ) -> Any:
        """``levels``: a search.transcripts.TurnQuery, for `vsearch --level` (see vsearch_levels);
        ``where``: ``--where`` conditions on front-matter fields; ``all_copies``: as search's."""
        from .search.vector_texts import VectorRequest, search_texts

        doc_filter = where_filter(where)
        started = time.perf_counter()
        config = self.config()
        chosen, warnings = searched_collections(config, collections)
        cache = self._vector_cache()
        cache.sync()
        with self._reader() as conn:
            return search_texts(
                conn,
                texts,
                VectorRequest(limit, min_score, full, snippets, verbose, levels, doc_filter, all_copies),
                config_path=self.config_path,
                config=config,
                chosen=chosen,
                warnings=warnings,
                cache=cache,
                started=started,
            )

    def query(
        self,
        query: str,
        *,
        collections: Sequence[str] = (),
        limit: int | None = 5,
        min_score: float = 0.0,
        full: bool = False,
        candidate_limit: int = 40,
        explain: bool = False,
        intent: str | None = None,
        expand: bool | None = None,
        rerank: bool | None = None,
        rerank_budget: float | None = None,
        levels: dict[str, Any] | None = None,
        where: Sequence[str] = (),
        fields: bool = False,
        all_copies: bool = False,
    ) -> SearchResult:
        """Hybrid search: keyword and vector lists fused, reranked within ``rerank_budget``
        seconds (hybrid/run.py: run_query says how, and what ``expand`` and ``rerank`` None do);
        ``all_copies``: as search's."""
        from .hybrid.run import run_query
        from .hybrid.steps import query_steps

        where_filter(where)  # a bad --where is refused before any model loads
        notices: list[Notice] = []
        scope = self._file_scope(collections, where)
        if scope is not None:  # --where searches file collections only, not by transcript levels
            collections, notices, levels = scope[0], scope[1], None
        pool = max(candidate_limit, limit or 0) if limit is not None else None
        with (
            self._reader() as conn,
            query_steps(
                self,
                conn,
                collections,
                pool,
                full,
                expand=expand,
                rerank=rerank,
                budget=rerank_budget,
                levels=levels,
                where=where,
                all_copies=all_copies,
            ) as steps,
        ):
            result = run_query(
                query,
                steps,
                limit=limit,
                min_score=min_score,
                candidate_limit=candidate_limit,
                explain=explain,
                intent=intent,
            )
            if notices:
                result = replace(result, warnings=(*notices, *result.warnings))
            return fields_shown(conn, result, fields)

    def pack(
        self,
        query: str,
        *,
        collections: Sequence[str] = (),
        max_items: int = 8,
        max_bytes: int = 10 * 1024,
        min_score: float = 0.0,
        candidate_limit: int = 40,
        **query_options: Any,
    ) -> ContextPack:
        """The best passages of ``query`` (hybrid/pack.py), whole, greedily by score into
        ``max_items`` and ``max_bytes``; an item that does not fit is left out and counted.
        ``query_options`` are those of ``query`` (intent, expand, rerank, rerank_budget)."""
        from .hybrid.pack import build_pack, candidate_count, stored_passages

        result = self.query(
            query,
            collections=collections,
            limit=candidate_count(max_items),
            min_score=min_score,
            candidate_limit=candidate_limit,
            **query_options,
        )
        config = self.config()
        with self._reader() as conn:
            lookup = stored_passages(conn, config.collections)
            return build_pack(result, lookup, max_items=max_items, max_bytes=max_bytes)

    def get(
        self,
        ref: str,
        *,
        from_line: int | None = None,
        max_lines: int | None = None,
        max_bytes: int | None = None,
        raw: bool = False,
        context: int | None = None,
    ) -> DocumentSlice | Any:
        """A document's lines. A transcript session with a line (``SESSION.jsonl:LINE``, the
        source line a search hit names) is shown as the turns there with ``context`` turns around
        them, at most ``max_lines`` messages: a SessionRead (retrieve/sessions.py)."""
        from .retrieve.get import get_document

        return get_document(
            self._reader, ref, self.config(),
            from_line=from_line, max_lines=max_lines, max_bytes=max_bytes, raw=raw, context=context,
            disk_paths=self.disk_paths,
        )  # fmt: skip

    def multi_get(
        self, pattern: str, *, max_lines: int | None = None, max_bytes: int | None = None
    ) -> MultiGetResult:
        from .retrieve.get import DEFAULT_MULTI_GET_MAX_BYTES, multi_get

        config = self.config()
        with self._reader() as conn:
            return multi_get(
                conn,
                pattern,
                config.collections,
                config.contexts,
                max_lines,
                max_bytes or DEFAULT_MULTI_GET_MAX_BYTES,
                disk_paths=self.disk_paths,
            )

    def chunks(self, ref: str, *, chunk_strategy: str | None = None) -> DocumentChunks:
        """A document's chunks as stored; computed (not stored) when `update` has not made them yet."""
        from .inspect.chunks import document_chunks

        return document_chunks(self.backend, self.config(), ref, chunk_strategy)

    def ls(self, target: str | None = None) -> list[CollectionInfo] | list[FileEntry]:
        if not target:
            return self.collections()
        from .retrieve.listing import file_entries

        return file_entries(self._reader, self.config(), target)

    # --- health -------------------------------------------------------------------------------

    def status(self) -> StatusReport:
        from .inspect.status import status_report

        return status_report(self.config(), self.config_path, self.backend)

    def model_files(self) -> Any:
        """Each model role: is its file on this machine, and the command that brings a missing one
        (inspect/model_files.py); reads no model."""
        from .inspect.model_files import model_files

        return model_files(self.config_path)

    def doctor(self, *, deep: bool = False) -> list[Any]:
        """Health checks (``DoctorCheck``: ok / warn / fail with a fix); read-only."""
        backend = self.backend
        if not isinstance(backend, SqliteBackend):
            from .inspect import doctor_postgres

            # The database keeps its own collections: their folders are checked.
            return doctor_postgres.run_doctor(self.config_path, backend, deep=deep, listed=self.listed_config)
        from .inspect.doctor import run_doctor

        return run_doctor(self.config_path, backend.path, deep=deep)


def __getattr__(name: str) -> Any:
    # CollectionUpdate is re-exported here (see __all__) but imported on first use, like the other
    # result types above: only `update` builds one.
    if name == "CollectionUpdate":
        from .types import CollectionUpdate

        return CollectionUpdate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CollectionUpdate", "Tansaku"]
