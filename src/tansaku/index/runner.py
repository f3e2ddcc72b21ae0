"""Updating several collections: hooks first, then one transaction per collection.

A collection that fails (its hook exits non-zero, its folder is gone) is reported and left as it
was; the others still update. A vanished folder does not empty the collection's index: an
unmounted drive should not wipe what was found there.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from ..config.masks import MaskMatcher, expand_masks
from ..config.selection import no_collections_notice
from ..config.settings import Config
from ..sources.walk import FoundFile, walk_collection
from ..store.backend import Backend
from ..store.backend import chunks as chunk_store
from ..store.backend import documents as store
from ..store.backend import vectors as vector_store
from ..store.migrations import migrate
from ..types import Collection, CollectionUpdate, UpdateReport
from . import update as indexing
from .chunks import ChunkingSummary, chunk_collection, params_for
from .hooks import run_hook
from .progress import ProgressFactory


def update_named(
    backend: Backend,
    config: Config,
    names: Sequence[str],
    *,
    dry_run: bool,
    run_hooks: bool,
    progress: ProgressFactory | None = None,
) -> UpdateReport:
    """Update the collections ``names`` of ``config``, timed; none named is NO_COLLECTIONS."""
    started = time.perf_counter()
    report = update_collections(
        backend,
        [config.collections[n] for n in names],
        config.max_file_bytes,
        dry_run=dry_run,
        run_hooks=run_hooks,
        progress=progress,
    )
    report.took_ms = (time.perf_counter() - started) * 1000
    if not names:
        report.warnings.append(no_collections_notice())
    return report


def update_collections(
    backend: Backend,
    collections: Sequence[Collection],
    max_file_bytes: int,
    *,
    dry_run: bool,
    run_hooks: bool,
    progress: ProgressFactory | None = None,
) -> UpdateReport:
    report = UpdateReport(dry_run=dry_run, collections=[])
    if not collections:
        return report
    opener = _dry_connection(backend) if dry_run else _write_connection(backend)
    with opener as conn:
        for collection in collections:
            report.collections.append(
                _one(conn, backend, collection, max_file_bytes, dry_run, run_hooks, progress)
            )
    return report


def _one(
    conn: Any,
    backend: Backend,
    collection: Collection,
    max_file_bytes: int,
    dry_run: bool,
    run_hooks: bool,
    progress: ProgressFactory | None,
) -> CollectionUpdate:
    if not Path(collection.path).is_dir():
        return CollectionUpdate(
            name=collection.name,
            failed=f"folder {collection.path} is missing or not a folder; its index entries were kept",
        )
    hook = None
    if run_hooks and collection.update and not dry_run:
        hook = run_hook(collection)
        if hook.exit_code != 0:
            return CollectionUpdate(
                name=collection.name,
                hook=hook,
                failed=f"pre-update hook exited with code {hook.exit_code}; collection not updated",
            )
    callback = progress(collection.name) if progress else None
    if collection.type != "files":
        result = _transcripts(conn, backend, collection, dry_run, callback)
        result.hook = hook
        if dry_run and run_hooks and collection.update:
            result.hook_pending = collection.update
        return result
    if dry_run:
        work = indexing.plan(conn, collection, max_file_bytes, callback)
    else:
        try:
            with backend.write_lock(conn, f"update {collection.name}", collection=collection.name):
                work = indexing.plan(conn, collection, max_file_bytes, callback)
                chunking = ChunkingSummary()
                indexing.apply(conn, collection, work, callback, chunking)
                chunk_collection(conn, collection, params_for(collection), callback, chunking)
                # Re-chunked or removed texts leave vectors behind: unlink them (embed reuses or drops them).
                vector_store.prune_if_present(conn, keep_unlinked=True)
                total = _chunk_total(conn, collection)
        except backend.database_error as exc:
            raise backend.translate(exc) from exc
    result = indexing.report(collection.name, work)
    result.hook = hook
    if not dry_run:
        result.chunked, result.new_chunks, result.chunks = chunking.documents, chunking.chunks, total
        result.chunk_warnings = chunking.notes(collection.name)
        result.split_blocks = chunking.split_blocks.total()
        result.chunk_ms = chunking.seconds * 1000
    if dry_run and run_hooks and collection.update:
        result.hook_pending = collection.update
    return result


def _transcripts(
    conn: Any, backend: Backend, collection: Collection, dry_run: bool, callback: Any
) -> CollectionUpdate:
    """A transcript collection (index/transcripts.py): sessions, runs and turns, append mode."""
    from . import transcripts

    if dry_run:
        return transcripts.report(collection, transcripts.plan(conn, collection, callback))
    try:
        with backend.write_lock(conn, f"update {collection.name}", collection=collection.name):
            work = transcripts.plan(conn, collection, callback)
            result = transcripts.apply(conn, collection, work, callback)
            vector_store.prune_if_present(conn, keep_unlinked=True)
            result.chunks = _chunk_total(conn, collection)
    except backend.database_error as exc:
        raise backend.translate(exc) from exc
    return result


def _chunk_total(conn: Any, collection: Collection) -> int:
    """The collection's chunks as `status` and `collection show` count them."""
    return chunk_store.collection_chunk_counts(conn, collection.name, params_for(collection).fingerprint())[1]


@contextlib.contextmanager
def _write_connection(backend: Backend) -> Iterator[Any]:
    conn = backend.open_write()
    try:
        yield conn
    finally:
        conn.close()


@contextlib.contextmanager
def _dry_connection(backend: Backend) -> Iterator[Any]:
    """Read-only view for --dry-run; with no index yet, plan against an empty one in memory."""
    if backend.exists():
        with backend.reading() as conn:
            yield conn
        return
    import sqlean

    conn = sqlean.connect(":memory:", isolation_level=None)
    conn.row_factory = sqlean.Row
    migrate(conn)
    try:
        yield conn
    finally:
        conn.close()


def pending_summary(conn: Any, config: Config) -> list[str]:
    """Cheap read-only look at what `update` would have to do: files added, changed or gone by stat."""
    lines: list[str] = []
    for collection in config.collection_list():
        if not Path(collection.path).is_dir():
            lines.append(f"{collection.name}: folder {collection.path} is missing")
            continue
        known = store.documents_in(conn, collection.name)
        # Skipped on purpose and unchanged since: `status` counts them as skipped, not new.
        standing = indexing.standing_skips(conn, collection, config.max_file_bytes)
        masks = MaskMatcher(expand_masks(collection.masks))
        ignore = MaskMatcher(expand_masks(collection.ignore)) if collection.ignore else None
        new = changed = 0
        seen: set[str] = set()
        for item in walk_collection(Path(collection.path), masks, ignore):
            if not isinstance(item, FoundFile):
                continue
            if collection.type != "files" and item.size == 0 and item.rel_path not in known:
                continue  # an empty transcript is not a session yet
            seen.add(item.rel_path)
            old = known.get(item.rel_path)
            if old is None:
                # A name that is not UTF-8 is skipped by every update (update lists it): not new.
                new += item.rel_path not in standing and indexing.is_utf8(item.rel_path)
            elif old.size != item.size or old.mtime_ns != item.mtime_ns:
                changed += 1
        gone = len(set(known) - seen)
        if new or changed or gone:
            lines.append(
                f"{collection.name}: {new} new, {changed} changed, {gone} deleted on disk; "
                f"run `tansaku update -c {collection.name}`"
            )
    return lines
