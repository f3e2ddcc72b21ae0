"""The one way in: the CLI (and later the MCP and HTTP servers) call these methods and render
what they return. Nothing here prints, exits or parses arguments.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .api_contexts import ContextMethods
from .api_transcripts import TranscriptMethods
from .config import settings
from .errors import (
    CollectionExists,
    CollectionNotFound,
    ConfigInvalid,
    PathNotFound,
    UsageError,
)
from .paths import Locations, locations, virtual_path
from .store.backend import Backend, SqliteBackend, open_backend, writing
from .store.backend import documents as store

# Only the result types a keyword search builds are imported here; the others are imported by the
# methods that build them, because tansaku.types builds those dataclasses on first import (its
# comment says why) and every command pays for what this module imports.
from .types import Collection, Notice, SearchResult

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


class Tansaku(ContextMethods, TranscriptMethods):
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
        self._readers: tuple[Backend, Any] | None = None  # (the backend, its kept read connections)
        self._backend: tuple[str | None, Backend] | None = None
        self._creating = threading.Lock()

    def _vector_cache(self) -> VectorCache:
        from .search.vector_cache import VectorCache

        with self._creating:  # two threads of a server must not each read the vectors
            if self._vectors is None:
                backend = self.backend
                # A one-shot command keeps nothing between queries: no connection to a server to
                # watch it with (SQLite's watch is a file's, and cheap).
                keeps = self.keep_vectors or isinstance(backend, SqliteBackend)
                watch = backend.change_watch() if keeps else None
                self._vectors = VectorCache(watch, None if self.keep_vectors else 0)
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
            config = self.config()
        except ConfigInvalid:
            # A config that does not parse has no [index] url; the commands that read it report the
            # problem (doctor as a failed check), so choosing the index must not fail first.
            return None
        return settings.index_url(config)

    @property
    def index_path(self) -> Path:
        """The SQLite file; the commands not ported to other backends yet use it (and so refuse
        a PostgreSQL index with BACKEND_UNSUPPORTED)."""
        backend = self.backend
        if not isinstance(backend, SqliteBackend):
            from .errors import BackendUnsupported

            raise BackendUnsupported(
                f"this command does not work on a {backend.kind} index yet ({backend.location})",
                hint="docs/backends.md lists the commands that do; use a SQLite index for this one",
            )
        return backend.path

    def roles_left_out(self) -> dict[str, str]:
        """The model roles `query` does not use by default here, each with why
        (hybrid/model_defaults.py): what `models pull` without a role does not fetch."""
        from .hybrid.model_defaults import roles_left_out

        return roles_left_out(self.config_path, self.config().other.get("query"))

    def config(self) -> settings.Config:
        return settings.load(self.config_path)

    def _collection(self, config: settings.Config, name: str) -> Collection:
        try:
            return config.collections[name]
        except KeyError:
            known = ", ".join(sorted(config.collections)) or "none yet"
            raise CollectionNotFound(
                f"no collection named {name!r} (known: {known})",
                hint="see `tansaku collection list`",
            ) from None

    def _reader(self) -> contextlib.AbstractContextManager[Any]:
        backend = self.backend
        if not self.keep_connections:
            return backend.reading()
        with self._creating:
            if self._readers is None or self._readers[0] is not backend:
                if self._readers is not None and hasattr(self._readers[1], "close"):
                    self._readers[1].close()  # the config now names another index
                self._readers = (backend, backend.reader_pool())
            readers = self._readers[1]
        return readers.reading()  # type: ignore[no-any-return]

    def close(self) -> None:
        """Close the read connections kept for a long-lived process (``keep_connections``); the
        next read opens them again. A PostgreSQL pool's threads must be stopped, not left to
        the garbage collector."""
        with self._creating:
            readers, self._readers = self._readers, None
        if readers is not None and hasattr(readers[1], "close"):
            readers[1].close()

    def _writer(self, command: str) -> contextlib.AbstractContextManager[Any]:
        return writing(self.backend, command)

    # --- collections --------------------------------------------------------------------------

    def add_collection(
        self,
        path: str,
        *,
        name: str | None = None,
        masks: Sequence[str] = (),
        ignore: Sequence[str] = (),
        chunk_strategy: str = "regex",
        dry_run: bool = False,
        progress: ProgressFactory | None = None,
        formats: Sequence[str] = (),
    ) -> UpdateReport:
        """``formats`` (pdf, html, docx, epub) add their masks to ``masks``, or to the default
        ``**/*.md`` when no mask is given."""
        from .config.masks import expand_masks, validate_collection_name
        from .sources.formats import format_masks

        root = Path(self.cwd or os.getcwd(), path).expanduser()
        if not root.exists():
            raise PathNotFound(f"folder {path!r} does not exist")
        if not root.is_dir():
            raise PathNotFound(f"{path!r} is not a folder")
        root = Path(os.path.realpath(root))
        name = validate_collection_name(name if name is not None else root.name)
        collection = Collection(
            name=name,
            path=str(root),
            masks=expand_masks([*(masks or settings.DEFAULT_MASKS), *format_masks(formats)]),
            ignore=expand_masks(ignore) if ignore else (),
            chunk_strategy=chunk_strategy,
        )
        return self._register(collection, dry_run=dry_run, progress=progress)

    def _register(
        self, collection: Collection, *, dry_run: bool, progress: ProgressFactory | None
    ) -> UpdateReport:
        """Index a new collection, then save it in the config (a dry run saves nothing)."""
        config = self.config()
        name = collection.name
        if name in config.collections:
            raise CollectionExists(
                f"a collection named {name!r} already exists ({config.collections[name].path})",
                hint="choose another --name, or `tansaku collection remove` the old one",
            )
        new_config = config.with_collection(collection)
        # Index first, register after: if indexing raises (a locked or damaged index), the config
        # is untouched and simply retrying the add works instead of failing with COLLECTION_EXISTS.
        report = self._update(new_config, [name], dry_run=dry_run, run_hooks=False, progress=progress)
        if not dry_run:
            settings.save(self.config_path, new_config)
        return report

    def collections(self) -> list[CollectionInfo]:
        from .inspect.status import collection_list

        return collection_list(self.config(), self.config_path, self.backend)

    def collection(self, name: str) -> CollectionInfo:
        self._collection(self.config(), name)
        return next(info for info in self.collections() if info.collection.name == name)

    def rename_collection(self, old: str, new: str) -> Collection:
        from .config.masks import validate_collection_name

        config = self.config()
        collection = self._collection(config, old)
        validate_collection_name(new)
        if new in config.collections:
            raise CollectionExists(f"a collection named {new!r} already exists")
        renamed = replace(collection, name=new)
        collections = {k: v for k, v in config.collections.items() if k != old}
        collections[new] = renamed
        contexts = {_rename_context(k, old, new): v for k, v in config.contexts.items()}
        if self.backend.exists():
            with self._writer("collection rename") as conn:
                store.rename_collection(conn, old, new)
        settings.save(self.config_path, replace(config, collections=collections, contexts=contexts))
        return renamed

    def remove_collection(self, name: str) -> int:
        """Unregister a collection and drop its index rows. Its files are never touched."""
        config = self.config()
        self._collection(config, name)
        removed = 0
        if self.backend.exists():
            from .store.backend import removal

            with self._writer("collection remove") as conn:
                removed = removal.delete_collection(conn, name)
        collections = {k: v for k, v in config.collections.items() if k != name}
        prefix = virtual_path(name)
        contexts = {
            k: v for k, v in config.contexts.items() if not (k == prefix or k.startswith(prefix + "/"))
        }
        settings.save(self.config_path, replace(config, collections=collections, contexts=contexts))
        return removed

    def set_include(self, name: str, include: bool) -> Collection:
        config = self.config()
        updated = replace(self._collection(config, name), include=include)
        settings.save(self.config_path, config.with_collection(updated))
        return updated

    def set_update_command(self, name: str, command: str | None) -> Collection:
        config = self.config()
        updated = replace(self._collection(config, name), update=(command or None))
        settings.save(self.config_path, config.with_collection(updated))
        return updated

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
        for name in names:
            self._collection(config, name)
        chosen = list(dict.fromkeys(names)) or sorted(config.collections)
        if chunk_strategy:
            for name in chosen:
                config = config.with_collection(
                    replace(config.collections[name], chunk_strategy=chunk_strategy)
                )
            if not dry_run:
                settings.save(self.config_path, config)
        return self._update(config, chosen, dry_run=dry_run, run_hooks=True, progress=progress)

    def watch(self, names: Sequence[str] = (), *, on_update: Any, stop: Any = None) -> int:
        """`update --watch` (index/watch.py): update, then update again the collections whose files
        change, until Ctrl-C or ``stop`` (a threading.Event); each report goes to ``on_update``."""
        from .index.watch import watch

        config = self.config()
        chosen = [self._collection(config, n) for n in dict.fromkeys(names)] or config.collection_list()

        def update(which: Sequence[str], hooks: bool) -> UpdateReport:
            return self._update(self.config(), which, dry_run=False, run_hooks=hooks, progress=None)

        return watch(chosen, update, on_update, stop=stop)

    def set_chunk_strategy(self, name: str, strategy: str) -> Collection:
        config = self.config()
        current = self._collection(config, name)
        if current.type != "files" and strategy != "regex":
            raise UsageError(
                f"{name} is a {current.type} transcript collection: its chunks are its turns",
                hint="chunk strategies apply to collections of files",
            )
        updated = replace(current, chunk_strategy=strategy)
        settings.save(self.config_path, config.with_collection(updated))
        return updated

    def _update(
        self,
        config: settings.Config,
        names: Sequence[str],
        *,
        dry_run: bool,
        run_hooks: bool,
        progress: ProgressFactory | None,
    ) -> UpdateReport:
        from .index import runner

        started = time.perf_counter()
        report = runner.update_collections(
            self.backend,
            [config.collections[n] for n in names],
            config.max_file_bytes,
            dry_run=dry_run,
            run_hooks=run_hooks,
            progress=progress,
        )
        report.took_ms = (time.perf_counter() - started) * 1000
        if not names:
            report.warnings.append(
                Notice(
                    "NO_COLLECTIONS",
                    "no collections are configured: add one with `tansaku collection add PATH`",
                )
            )
        return report

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
    ) -> SearchResult:
        """``where``: ``--where`` conditions on front-matter fields, applied before the limit;
        ``fields``: each hit carries its document's fields (fields/)."""
        from .search.keyword import SearchOptions, search

        doc_filter = _document_filter(where)
        config = self.config()
        chosen, warnings = self._chosen(config, collections)
        options = SearchOptions(
            limit=limit, min_score=min_score, full=full, snippets=snippets, where=doc_filter
        )
        with self._reader() as conn:
            result = search(conn, query, chosen, config.contexts, options, warnings)
            return _with_fields(conn, result) if fields else result

    def _fields_added(self, result: SearchResult, fields: bool) -> SearchResult:
        if not fields:
            return result
        with self._reader() as conn:
            return _with_fields(conn, result)

    def _file_scope(
        self, collections: Sequence[str], where: Sequence[str]
    ) -> tuple[list[str], list[Notice]] | None:
        """With ``where``, the file collections to search and a notice naming the transcript
        collections left out (they have no front matter); None without ``where`` or with no
        transcript collection among those searched."""
        if not where:
            return None
        from .search.transcripts import files_only

        config = self.config()
        if files_only(config, collections):
            return None
        from .fields.lookup import file_scope

        chosen, warnings = self._chosen(config, collections)
        files, notice = file_scope(chosen)
        return files, [*warnings, notice]

    def _chosen(
        self, config: settings.Config, collections: Sequence[str]
    ) -> tuple[list[Collection], list[Notice]]:
        """The collections a query searches, with the warnings about what it leaves out."""
        warnings: list[Notice] = []
        if collections:
            return [self._collection(config, n) for n in dict.fromkeys(collections)], warnings
        chosen = [c for c in config.collection_list() if c.include]
        excluded = [c.name for c in config.collection_list() if not c.include]
        if excluded:
            warnings.append(
                Notice(
                    "EXCLUDED_COLLECTIONS",
                    f"not searched (excluded): {', '.join(excluded)}; use -c NAME to search one",
                )
            )
        if not config.collections:
            warnings.append(
                Notice(
                    "NO_COLLECTIONS",
                    "no collections are configured: add one with `tansaku collection add PATH`",
                )
            )
        return chosen, warnings

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
        """Embed chunks that have no vector for the configured model (all of them with ``force``).

        ``quick``: "auto" gives every pending chunk a quick vector (its first tokens) first when
        many are pending, so vsearch and query are useful long before the full pass ends; "only"
        stops after that pass; "off" never makes one (index/embed.py: QuickPass).

        An endpoint on another machine first needs the person's consent to send chunk text there:
        ``consent`` gives it (and records it), or ``[models] remote_ok`` in the config."""
        from .index.embed import QuickPass, embed_budget_setting, embed_collections
        from .models.embedding import embed_model, embedder_for, prompt_format_of
        from .models.threads import resolve_threads

        backend = self.backend
        config = self.config()
        chosen = [self._collection(config, n) for n in dict.fromkeys(collections)] or config.collection_list()
        embed_budget_setting()  # a bad TANSAKU_EMBED_BUDGET is refused before any model loads
        threads = resolve_threads(self.config_path).batch
        quick_pass = QuickPass.from_setting(quick)
        ref = embed_model(self.config_path)
        prompt = prompt_format_of(ref, self.config_path)
        if not backend.exists():
            with backend.reading():  # raises INDEX_MISSING with its hint
                pass
        if ref.endpoint is not None:
            from .index.remote_embed import embed_remote

            return embed_remote(
                backend, self.config_path, ref, chosen, prompt,
                force=force, progress=progress, consent=consent,
            )  # fmt: skip
        return embed_collections(
            backend,
            chosen,
            str(ref.local_path),
            prompt,
            lambda: embedder_for(ref, self.config_path, threads=threads, verbose=verbose),
            force=force,
            progress=progress,
            quick=quick_pass,
        )

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
    ) -> SearchResult:
        from .search.vector_texts import with_unreadable_warning

        found = self._vsearch(query, collections, limit, min_score, full, verbose, where=where)
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
    ) -> tuple[SearchResult, float]:
        """The vector results, and the share of the query's tokens the embedder does not know."""
        if not query.strip():
            from .errors import EmptyQuery

            raise EmptyQuery("the query is empty")
        found = self.vector_search_texts(
            [query], collections, limit, min_score, full, snippets, verbose, where=where
        )
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
    ) -> Any:
        """``levels``: a search.transcripts.TurnQuery, for `vsearch --level` (see vsearch_levels);
        ``where``: ``--where`` conditions on front-matter fields."""
        from .search.vector_texts import VectorRequest, search_texts

        doc_filter = _document_filter(where)
        started = time.perf_counter()
        config = self.config()
        chosen, warnings = self._chosen(config, collections)
        cache = self._vector_cache()
        cache.sync()
        with self._reader() as conn:
            return search_texts(
                conn,
                texts,
                VectorRequest(limit, min_score, full, snippets, verbose, levels, doc_filter),
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
    ) -> SearchResult:
        """Hybrid search (hybrid/run.py): probe, expansion, keyword and vector lists fused by
        weighted RRF, reranking within ``rerank_budget`` seconds. ``expand`` None (the default)
        expands where it pays: with a model on an endpoint or a GPU, not on a CPU, unless the
        config's ``[query] expand`` says (hybrid/model_defaults.py). ``rerank`` None (the default)
        reranks with a model on an endpoint or a GPU, or on a CPU when the rerank model is on this
        machine (a budget too short for it is then a note), unless ``[query] rerank`` says.

        ``query`` may be a query document (typed ``lex:``/``vec:``/``hyde:``/``intent:`` lines,
        hybrid/document.py): each line is its own list, and it is not expanded. A missing model,
        vectors or index step costs that step only, with the warning that says why
        (``VECTORS_UNAVAILABLE``, ``MODEL_MISSING``, ``EXPANSION_FAILED``, ``RERANK_PARTIAL``...).
        """
        from .hybrid.run import run_query
        from .hybrid.steps import query_steps

        _document_filter(where)  # a bad --where is refused before any model loads
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
            return _with_fields(conn, result) if fields else result

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
        from .retrieve.get import DEFAULT_GET_MAX_BYTES, LineRange, resolve, slice_document, split_range
        from .retrieve.pages import page_lines, split_page

        config = self.config()
        paged, page = split_page(ref)
        base, suffix_from, suffix_count = split_range(paged) if page is None else (paged, None, None)
        bounds = LineRange(
            from_line=from_line or suffix_from or 1,
            max_lines=max_lines if max_lines is not None else suffix_count,
            max_bytes=max_bytes or DEFAULT_GET_MAX_BYTES,
        )
        with self._reader() as conn:
            doc = resolve(conn, base, config.collections, disk_paths=self.disk_paths)
            if page is not None:  # REF:page=N: that page's lines (-l still caps them)
                first, count = page_lines(conn, doc, page, doc.line_count)
                shown = count if max_lines is None else min(count, max_lines)
                bounds = LineRange(first, shown, bounds.max_bytes)
            if config.collections[doc.collection].type != "files" and (from_line or suffix_from):
                from .retrieve.sessions import turn_window

                return turn_window(conn, doc, config.collections, bounds, context=context, raw=raw)
            return slice_document(conn, doc, config.collections, config.contexts, bounds)

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
        from .types import FileEntry

        if not target:
            return self.collections()
        config = self.config()
        target = target.removeprefix("tansaku://")
        name, _, sub = target.strip("/").partition("/")
        self._collection(config, name)
        with self._reader() as conn:
            docs = store.list_documents(conn, name, sub.strip("/"))
        return [
            FileEntry(
                virtual_path=virtual_path(d.collection, d.path),
                docid=d.hash[:6],
                size=d.size,
                modified=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(d.mtime_ns / 1e9)),
                title=d.title,
            )
            for d in docs
        ]

    # --- contexts -----------------------------------------------------------------------------

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

            return doctor_postgres.run_doctor(self.config_path, backend, deep=deep)
        from .inspect.doctor import run_doctor

        return run_doctor(self.config_path, backend.path, deep=deep)

    # --- agent transcripts (issue 13): thin wiring over config/, search/ and retrieve/ -----------


def _document_filter(where: Sequence[str]) -> Any:
    """The filter of ``--where`` conditions (store/fields.py), None without any; a bad one is a
    usage error. Imported only when there are some: a plain search pays nothing."""
    if not where:
        return None
    from .fields.lookup import document_filter

    return document_filter(where)


def _with_fields(conn: Any, result: SearchResult) -> SearchResult:
    from .fields.lookup import with_fields

    return with_fields(conn, result)


def _rename_context(key: str, old: str, new: str) -> str:
    prefix = virtual_path(old)
    if key == prefix or key.startswith(prefix + "/"):
        return virtual_path(new) + key[len(prefix) :]
    return key


def __getattr__(name: str) -> Any:
    # CollectionUpdate is re-exported here (see __all__) but imported on first use, like the other
    # result types above: only `update` builds one.
    if name == "CollectionUpdate":
        from .types import CollectionUpdate

        return CollectionUpdate
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CollectionUpdate", "Tansaku"]
