"""The one way in: the CLI (and later the MCP and HTTP servers) call these methods and render
what they return. Nothing here prints, exits or parses arguments.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .config import settings
from .config.contexts import GLOBAL, normalize_context_path
from .errors import (
    CollectionExists,
    CollectionNotFound,
    ContextNotFound,
    IndexCorrupt,
    IndexError_,
    IndexSchemaMismatch,
    ModelMissing,
    PathNotFound,
    TansakuError,
    UsageError,
)
from .paths import Locations, locations, virtual_path
from .store import db
from .store import documents as store

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
        Context,
        ContextPack,
        DocumentChunks,
        DocumentSlice,
        EmbedReport,
        FileEntry,
        MultiGetResult,
        StatusReport,
        UpdateReport,
    )


class Tansaku:
    def __init__(
        self, index_name: str | None = None, *, cwd: str | None = None, keep_vectors: bool = True
    ) -> None:
        """``keep_vectors``: vsearch reads the model's vectors into memory once and answers every
        later query from there while the index is unchanged (for a process that lives on, like a
        server). A one-shot command passes False: it searches them on disk with sqlite-vec rather
        than read them all for a single query."""
        self.locations: Locations = locations(index_name)
        self.cwd = cwd
        self.keep_vectors = keep_vectors
        self._vectors: VectorCache | None = None

    def _vector_cache(self) -> VectorCache:
        from .search.vector_cache import VectorCache

        if self._vectors is None:
            self._vectors = VectorCache(self.index_path, None if self.keep_vectors else 0)
        return self._vectors

    # --- config -------------------------------------------------------------------------------

    @property
    def config_path(self) -> Path:
        return self.locations.config_file

    @property
    def index_path(self) -> Path:
        return self.locations.index_file

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

    @contextlib.contextmanager
    def _reader(self) -> Iterator[db.Connection]:
        conn = db.open_read(self.index_path)
        try:
            yield conn
        except db.DatabaseError as exc:
            raise db.translate(exc, self.index_path) from exc
        finally:
            conn.close()

    @contextlib.contextmanager
    def _writer(self, command: str) -> Iterator[db.Connection]:
        conn = db.open_write(self.index_path)
        try:
            with db.write_lock(conn, self.index_path, command):
                yield conn
        except db.DatabaseError as exc:
            raise db.translate(exc, self.index_path) from exc
        finally:
            conn.close()

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
    ) -> UpdateReport:
        from .config.masks import expand_masks, validate_collection_name

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
            masks=expand_masks(masks or settings.DEFAULT_MASKS),
            ignore=expand_masks(ignore) if ignore else (),
            chunk_strategy=chunk_strategy,
        )
        config = self.config()
        if name in config.collections:
            raise CollectionExists(
                f"a collection named {name!r} already exists ({config.collections[name].path})",
                hint="choose another --name, or `tansaku collection remove` the old one",
            )
        new_config = config.with_collection(collection)
        if dry_run:
            return self._update(new_config, [name], dry_run=True, run_hooks=False, progress=progress)
        # Index first, register after: if indexing raises (a locked or damaged index), the config
        # is untouched and simply retrying the add works instead of failing with COLLECTION_EXISTS.
        report = self._update(new_config, [name], dry_run=False, run_hooks=False, progress=progress)
        settings.save(self.config_path, new_config)
        return report

    def collections(self) -> list[CollectionInfo]:
        from .types import CollectionInfo

        config = self.config()
        if not self.index_path.exists():
            return [CollectionInfo(c, 0, None) for c in config.collection_list()]
        try:
            with self._reader() as conn:
                return self._infos(conn, config)
        except IndexSchemaMismatch:
            # The list comes from the config; counts wait for `update` to upgrade the index.
            return [CollectionInfo(c, 0, None) for c in config.collection_list()]

    def _infos(self, conn: db.Connection, config: settings.Config) -> list[CollectionInfo]:
        from .index.chunks import params_for
        from .store.chunks import collection_chunk_counts
        from .types import CollectionInfo

        counts, states = store.collection_counts(conn), store.collection_states(conn)
        fingerprint = self._current_fingerprint(conn)
        infos = []
        for c in config.collection_list():
            documents, size = counts.get(c.name, (0, 0))
            params = params_for(c).fingerprint()
            chunked, chunks, fallbacks = collection_chunk_counts(conn, c.name, params)
            vectors = stale = unembedded = 0
            if _has_table(conn, "chunk_vectors"):
                from .store.vectors import collection_vector_counts

                vectors, distinct_chunks, stale = collection_vector_counts(conn, c.name, params, fingerprint)
                if fingerprint is not None or stale:
                    unembedded = distinct_chunks - vectors
            infos.append(
                CollectionInfo(
                    c,
                    documents,
                    states.get(c.name),
                    size,
                    chunked,
                    chunks,
                    fallbacks,
                    vectors,
                    stale,
                    unembedded,
                )
            )
        return infos

    def _embed_status(self) -> tuple[str | None, int | None]:
        """The configured embed model file if present, and the window the index last used with it."""
        from .models.registry import resolve

        ref = resolve("embed", self.config_path)
        if not ref.present:
            return None, None
        window = None
        if self.index_path.exists():
            try:
                with self._reader() as conn:
                    if _has_table(conn, "embed_models"):
                        row = conn.execute(
                            "SELECT window_tokens FROM embed_models WHERE model_path = ?"
                            " ORDER BY created_at DESC",
                            (str(ref.local_path),),
                        ).fetchone()
                        window = row[0] if row else None
            except TansakuError:
                window = None
        return str(ref.local_path), window

    def _current_fingerprint(self, conn: db.Connection) -> str | None:
        """The fingerprint the configured embed model has in this index (no hashing, no loading)."""
        from .models.registry import resolve

        ref = resolve("embed", self.config_path)
        if not ref.present or not _has_table(conn, "embed_models"):
            return None
        from .models.llama import file_sha256

        st = ref.local_path.stat()
        row = conn.execute(
            "SELECT fingerprint FROM embed_models WHERE model_path = ? AND model_size = ?"
            " AND model_mtime_ns = ? ORDER BY created_at DESC LIMIT 1",
            (str(ref.local_path), st.st_size, st.st_mtime_ns),
        ).fetchone()
        if row is None:  # the same file may have been embedded under another name
            row = conn.execute(
                "SELECT fingerprint FROM embed_models WHERE model_sha256 = ?"
                " ORDER BY created_at DESC LIMIT 1",
                (file_sha256(str(ref.local_path)),),
            ).fetchone()
        return row[0] if row else None

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
        if self.index_path.exists():
            with self._writer("collection rename") as conn:
                store.rename_collection(conn, old, new)
        settings.save(self.config_path, replace(config, collections=collections, contexts=contexts))
        return renamed

    def remove_collection(self, name: str) -> int:
        """Unregister a collection and drop its index rows. Its files are never touched."""
        config = self.config()
        self._collection(config, name)
        removed = 0
        if self.index_path.exists():
            with self._writer("collection remove") as conn:
                removed = store.delete_collection(conn, name)
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

    def set_chunk_strategy(self, name: str, strategy: str) -> Collection:
        config = self.config()
        updated = replace(self._collection(config, name), chunk_strategy=strategy)
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
            self.index_path,
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
    ) -> SearchResult:
        from .search.keyword import SearchOptions, search

        config = self.config()
        chosen, warnings = self._chosen(config, collections)
        with self._reader() as conn:
            return search(
                conn,
                query,
                chosen,
                config.contexts,
                SearchOptions(limit=limit, min_score=min_score, full=full, snippets=snippets),
                warnings,
            )

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
    ) -> EmbedReport:
        """Embed chunks that have no vector for the configured model (all of them with ``force``)."""
        from .index.embed import embed_collections
        from .models.embedding import embed_model, load_embedder, prompt_format
        from .models.threads import resolve_threads

        config = self.config()
        chosen = [self._collection(config, n) for n in dict.fromkeys(collections)] or config.collection_list()
        threads = resolve_threads(self.config_path).batch
        ref = embed_model(self.config_path)
        prompt = prompt_format(ref.local_path, self.config_path)
        if not self.index_path.exists():
            db.open_read(self.index_path)  # raises INDEX_MISSING with its hint
        report = embed_collections(
            self.index_path,
            chosen,
            str(ref.local_path),
            prompt,
            lambda: load_embedder(ref.local_path, threads=threads, verbose=verbose),
            force=force,
            progress=progress,
        )
        return report

    def vsearch(
        self,
        query: str,
        *,
        collections: Sequence[str] = (),
        limit: int | None = 5,
        min_score: float = 0.3,
        full: bool = False,
        verbose: bool = False,
    ) -> SearchResult:
        return self._vsearch(query, collections, limit, min_score, full, verbose)[0]

    def _vsearch(
        self,
        query: str,
        collections: Sequence[str],
        limit: int | None,
        min_score: float,
        full: bool,
        verbose: bool,
        snippets: bool = True,
    ) -> tuple[SearchResult, float]:
        """The vector results, and the share of the query's tokens the embedder does not know."""
        import time as _time

        from .index.chunks import params_for
        from .index.embed import model_identity, pack
        from .models.embedding import embed_model, load_embedder, prompt_format
        from .search.vector import VectorQuery, vsearch
        from .store import vectors as vec

        started = _time.perf_counter()
        if not query.strip():
            from .errors import EmptyQuery

            raise EmptyQuery("the query is empty")
        config = self.config()
        chosen, warnings = self._chosen(config, collections)
        ref = embed_model(self.config_path)
        prompt = prompt_format(ref.local_path, self.config_path)
        cache = self._vector_cache()
        cache.sync()
        with self._reader() as conn:
            vec.load_extension(conn)
            # One snapshot for every read below: vectors, their chunks and the counts agree even
            # while an `embed` commits batches (a server keeps searching during one).
            conn.execute("BEGIN")
            identity = model_identity(conn, str(ref.local_path), prompt)
            pairs = [(c, params_for(c).fingerprint()) for c in chosen]
            counts = [
                cache.memo(
                    ("counts", c.name, p, identity.fingerprint),
                    lambda c=c, p=p: vec.collection_vector_counts(conn, c.name, p, identity.fingerprint),
                )
                for c, p in pairs
            ]
            warnings += _vector_warnings(chosen, counts)
            if not any(embedded for embedded, _, _ in counts):
                other = sum(stale for _, _, stale in counts)
                why = f" ({other} chunks have vectors from another model)" if other else ""
                names = ", ".join(c.name for c in chosen) or "any collection"
                raise NoVectors(
                    f"no vectors for the embedding model {ref.reference} in {names}{why}",
                    hint="run `tansaku embed`"
                    + (" (add -c NAME for one collection)" if len(chosen) > 1 else ""),
                )
            from .models.threads import resolve_threads

            threads = resolve_threads(self.config_path).query
            embedder = load_embedder(ref.local_path, threads=threads, verbose=verbose)
            vector = pack(embedder.embed([prompt.query(query)])[0])
            request = VectorQuery(
                query, vector, identity.fingerprint, embedder.dims, limit, min_score, full, snippets
            )
            result = vsearch(conn, request, pairs, config.contexts, warnings, started, cache)
            return result, embedder.unknown_share(query)

    def _query_vectors(
        self, query: str, collections: Sequence[str], pool: int | None, full: bool
    ) -> tuple[SearchResult | None, float]:
        """The vector side of `query`: the text without its exclusions is embedded, and the
        documents the exclusions rule out are dropped from its results."""
        from dataclasses import replace

        from .search.keyword import excluded
        from .search.query import without_exclusions

        with self._reader() as conn:
            text = without_exclusions(query, lambda name: store.option_defined(conn, name))
        if not text.strip():
            return None, 0.0
        result, unknown = self._vsearch(text, collections, pool, 0.0, full, False, snippets=False)
        with self._reader() as conn:
            ruled_out = excluded(conn, query, [(h.collection, h.path) for h in result.hits])
        if ruled_out:
            kept = tuple(h for h in result.hits if (h.collection, h.path) not in ruled_out)
            result = replace(result, hits=kept, total=max(result.total - len(ruled_out), len(kept)))
        return result, unknown

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
    ) -> SearchResult:
        """Keyword and vector results fused by weighted Reciprocal Rank Fusion (hybrid/).

        ``query`` may be a query document (typed ``lex:``/``vec:``/``hyde:``/``intent:`` lines,
        hybrid/document.py): each line is its own list. Without vectors or an embedding model
        the keyword results come back alone, with the warning that says why
        (``VECTORS_UNAVAILABLE``, ``MODEL_MISSING``), never an error.
        """
        from .hybrid.run import QuerySteps, run_query
        from .search.keyword import add_snippets, is_name_lookup

        pool = max(candidate_limit, limit or 0) if limit is not None else None

        def keyword(text: str) -> SearchResult:
            return self.search(text, collections=collections, limit=pool, full=full, snippets=False)

        def vector(text: str) -> tuple[SearchResult | None, float, Notice | None]:
            try:
                return (*self._query_vectors(text, collections, pool, full), None)
            except NoVectors as exc:
                why = f"{exc.message}; keyword results only ({exc.hint})"
                return None, 0.0, Notice("VECTORS_UNAVAILABLE", why)
            except ModelMissing as exc:
                hint = f" ({exc.hint})" if exc.hint else ""
                return None, 0.0, Notice("MODEL_MISSING", f"{exc.message}; keyword results only{hint}")

        with self._reader() as conn:
            steps = QuerySteps(
                keyword,
                vector,
                lambda text: is_name_lookup(conn, text),
                lambda text, hits: add_snippets(conn, text, hits),
            )
            return run_query(
                query,
                steps,
                limit=limit,
                min_score=min_score,
                candidate_limit=candidate_limit,
                explain=explain,
            )

    def pack(
        self,
        query: str,
        *,
        collections: Sequence[str] = (),
        max_items: int = 8,
        max_bytes: int = 10 * 1024,
        min_score: float = 0.0,
        candidate_limit: int = 40,
    ) -> ContextPack:
        """The best passages of ``query`` (hybrid/pack.py), whole, greedily by score into
        ``max_items`` and ``max_bytes``; an item that does not fit is left out and counted."""
        from .hybrid.pack import build_pack, candidate_count, stored_passages

        result = self.query(
            query,
            collections=collections,
            limit=candidate_count(max_items),
            min_score=min_score,
            candidate_limit=candidate_limit,
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
    ) -> DocumentSlice:
        from .retrieve.get import DEFAULT_GET_MAX_BYTES, LineRange, resolve, slice_document, split_range

        config = self.config()
        base, suffix_from, suffix_count = split_range(ref)
        bounds = LineRange(
            from_line=from_line or suffix_from or 1,
            max_lines=max_lines if max_lines is not None else suffix_count,
            max_bytes=max_bytes or DEFAULT_GET_MAX_BYTES,
        )
        with self._reader() as conn:
            doc = resolve(conn, base, config.collections)
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
            )

    def chunks(self, ref: str, *, chunk_strategy: str | None = None) -> DocumentChunks:
        """A document's chunks as stored; computed (not stored) when `update` has not made them yet."""
        from .chunking import chunk_text
        from .index.chunks import params_for
        from .retrieve.get import resolve, split_range
        from .store import chunks as chunk_store
        from .types import ChunkView, DocumentChunks

        config = self.config()
        base, _, _ = split_range(ref)
        with self._reader() as conn:
            doc = resolve(conn, base, config.collections)
            collection = config.collections[doc.collection]
            params = params_for(collection, chunk_strategy)
            text = store.body(conn, doc.hash)
            stored = chunk_store.chunks_of(conn, doc.hash, params.fingerprint())
        warnings: list[Notice] = []
        items: Sequence[Any]
        if stored is not None:
            run, items = stored
            strategy_used, notes = run.strategy_used, run.warnings
        else:
            result = chunk_text(text, doc.path, params)
            strategy_used, notes, items = result.strategy_used, result.warnings, result.chunks
            warnings.append(
                Notice(
                    "CHUNKS_NOT_STORED", f"computed now, not stored: run `tansaku update -c {doc.collection}`"
                )
            )
        warnings += [Notice("CHUNKER_FALLBACK", note) for note in notes]
        return DocumentChunks(
            docid=doc.hash[:6],
            collection=doc.collection,
            path=doc.path,
            virtual_path=virtual_path(doc.collection, doc.path),
            disk_path=os.path.join(collection.path, *doc.path.split("/")),
            title=doc.title,
            params=params.fingerprint(),
            strategy_used=strategy_used,
            stored=stored is not None,
            chunks=tuple(
                ChunkView(
                    c.seq,
                    c.start_line,
                    c.end_line,
                    c.tokens,
                    tuple(c.heading_path),
                    c.oversized,
                    text[c.start_char : c.end_char],
                )
                for c in items
            ),
            warnings=tuple(warnings),
        )

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

    def add_context(self, path: str, text: str) -> Context:
        from .types import Context

        if not text.strip():
            raise UsageError("context text is empty")
        config = self.config()
        key = normalize_context_path(path, config.collections, self.cwd)
        contexts = dict(config.contexts)
        contexts[key] = text.strip()
        settings.save(self.config_path, replace(config, contexts=contexts))
        return Context(key, text.strip())

    def contexts(self) -> list[Context]:
        return self.config().context_list()

    def remove_context(self, path: str) -> Context:
        from .types import Context

        config = self.config()
        key = path if path in config.contexts else normalize_context_path(path, config.collections, self.cwd)
        if key not in config.contexts:
            raise ContextNotFound(f"no context at {key!r}", hint="see `tansaku context list`")
        contexts = dict(config.contexts)
        text = contexts.pop(key)
        settings.save(self.config_path, replace(config, contexts=contexts))
        return Context(key, text)

    def check_contexts(self) -> list[str]:
        """Collections and top-level folders that have no context yet (as virtual paths)."""
        config = self.config()
        missing: list[str] = []
        folders: dict[str, set[str]] = {}
        if self.index_path.exists():
            with self._reader() as conn:
                for collection, path in store.all_paths(conn):
                    if "/" in path:
                        folders.setdefault(collection, set()).add(path.split("/", 1)[0])
        for c in config.collection_list():
            key = virtual_path(c.name)
            if key not in config.contexts:
                missing.append(key)
            for folder in sorted(folders.get(c.name, ())):
                sub = virtual_path(c.name, folder)
                if sub not in config.contexts:
                    missing.append(sub)
        if GLOBAL not in config.contexts and not missing:
            return [GLOBAL]
        return missing

    # --- health -------------------------------------------------------------------------------

    def status(self) -> StatusReport:
        from .chunking import available_grammars
        from .index.runner import pending_summary
        from .store.migrations import SCHEMA_VERSION
        from .types import CollectionInfo, StatusReport

        config = self.config()
        exists = self.index_path.exists()
        warnings: list[Notice] = []
        schema: int | None = None
        embed_path, embed_window = self._embed_status()
        threads = self._thread_status(warnings)
        infos: list[CollectionInfo] = [CollectionInfo(c, 0, None) for c in config.collection_list()]
        states: dict[str, str | None] = {}
        pending: list[str] = []
        if not exists:
            warnings.append(
                Notice(
                    "INDEX_MISSING",
                    f"no index at {self.index_path}: `tansaku collection add PATH` creates it",
                )
            )
        else:
            try:
                with self._reader() as conn:
                    schema = SCHEMA_VERSION
                    infos, states = self._infos(conn, config), store.collection_states(conn)
                    pending = pending_summary(conn, config)
            except (IndexSchemaMismatch, IndexCorrupt) as exc:
                warnings.append(Notice(exc.code, exc.message))
                schema = exc.details.get("version")
        for c in config.collection_list():
            if exists and c.name not in states:
                pending.append(f"{c.name}: never indexed; run `tansaku update -c {c.name}`")
        for info in infos:
            if info.unembedded:
                name = info.collection.name
                pending.append(
                    f"{name}: {info.unembedded} chunks have no vector yet; run `tansaku embed -c {name}`"
                )
            if info.chunked < info.documents:
                missing = info.documents - info.chunked
                name = info.collection.name
                pending.append(f"{name}: {missing} documents not chunked yet; run `tansaku update -c {name}`")
        return StatusReport(
            index_path=str(self.index_path),
            index_exists=exists,
            index_bytes=self.index_path.stat().st_size if exists else 0,
            schema_version=schema,
            code_schema_version=SCHEMA_VERSION,
            config_path=str(self.config_path),
            collections=tuple(infos),
            contexts=tuple(config.context_list()),
            pending=tuple(pending),
            warnings=tuple(warnings),
            grammars=tuple(sorted(available_grammars().items())),
            embed_model=embed_path,
            embed_window=embed_window,
            model_threads=threads,
        )

    def _thread_status(self, warnings: list[Notice]) -> str | None:
        from .models.threads import resolve_threads

        try:
            return resolve_threads(self.config_path).describe()
        except TansakuError as exc:  # status reports a bad setting; the model commands refuse it
            warnings.append(Notice(exc.code, exc.message))
            return None


class NoVectors(IndexError_):
    code = "NO_VECTORS"


def _has_table(conn: db.Connection, name: str) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (name,)).fetchone() is not None


def _vector_warnings(chosen: Sequence[Collection], counts: Sequence[tuple[int, int, int]]) -> list[Notice]:
    notices: list[Notice] = []
    stale = sum(s for _, _, s in counts)
    if stale:
        notices.append(
            Notice(
                "STALE_VECTORS",
                f"{stale} chunks have vectors from another embedding model only; `tansaku embed` redoes them",
            )
        )
    pending = [
        (c.name, total - embedded)
        for c, (embedded, total, _) in zip(chosen, counts, strict=True)
        if total > embedded
    ]
    if pending:
        listed = ", ".join(f"{name} ({n})" for name, n in pending)
        notices.append(
            Notice(
                "PENDING_VECTORS", f"chunks without vectors are not searched: {listed}; run `tansaku embed`"
            )
        )
    return notices


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
