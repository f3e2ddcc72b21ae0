"""`status` and `collection list`: what each collection holds, and what is still to do."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import IndexSchemaMismatch, TansakuError
from ..store.backend import db
from ..store.backend import documents as store
from ..types import Notice

if TYPE_CHECKING:
    from ..config.settings import Config
    from ..store.backend import Backend
    from ..types import CollectionInfo, EmbedSpeed, StatusReport


def collection_list(config: Config, config_path: Path, index: Backend) -> list[CollectionInfo]:
    """Every configured collection with its counts; zero counts when there is no usable index."""
    from ..types import CollectionInfo

    if not index.exists():
        return [CollectionInfo(c, 0, None) for c in config.collection_list()]
    try:
        with index.reading() as conn:
            return collection_infos(conn, config, config_path)
    except IndexSchemaMismatch:
        # The list comes from the config; counts wait for `update` to upgrade the index.
        return [CollectionInfo(c, 0, None) for c in config.collection_list()]


def collection_infos(conn: Any, config: Config, config_path: Path) -> list[CollectionInfo]:
    from ..index.chunks import params_for
    from ..index.embed import QUICK_TOKENS
    from ..index.update import skip_code, standing_skips
    from ..index.vector_state import VectorState
    from ..store.backend import chunks
    from ..types import CollectionInfo

    counts, states = store.collection_counts(conn), store.collection_states(conn)
    fingerprint = current_fingerprint(conn, config_path)
    infos = []
    for c in config.collection_list():
        documents, size = counts.get(c.name, (0, 0))
        params = params_for(c).fingerprint()
        chunked, chunk_count, fallbacks = chunks.collection_chunk_counts(conn, c.name, params)
        vectors = stale = unembedded = quick = 0
        if db.has_table(conn, "chunk_vectors"):
            from ..store.backend import vectors as vector_store

            vectors, distinct_chunks, stale = vector_store.collection_vector_counts(
                conn, c.name, params, fingerprint
            )
            quick = vector_store.collection_quick_count(conn, c.name, params, fingerprint)
            if fingerprint is not None or stale:
                unembedded = distinct_chunks - vectors
        skips = Counter(skip_code(r) for r in standing_skips(conn, c, config.max_file_bytes).values())
        state = VectorState(chunk_count, vectors, quick)
        infos.append(
            CollectionInfo(
                c,
                documents,
                states.get(c.name),
                size,
                chunked,
                chunk_count,
                fallbacks,
                vectors,
                stale,
                unembedded,
                quick,
                vector_state=state.name,
                vector_state_note=state.describe(c.name, QUICK_TOKENS),
                skipped=sum(skips.values()),
                skipped_reasons=dict(sorted(skips.items())),
            )
        )
    return infos


def embed_status(config_path: Path, index: Backend) -> tuple[str | None, int | None, EmbedSpeed | None]:
    """The configured embed model file (or endpoint) if present, the window the index last used
    with it, and its speed as last measured by `embed` here. The file is never hashed: an index
    that does not know this exact file (by size and time) has no speed for it."""
    from ..models.registry import resolve

    ref = resolve("embed", config_path)
    if not ref.present:
        return None, None, None
    if ref.endpoint is not None:
        shown, endpoint_window = _endpoint_status(ref.endpoint, index)
        return shown, endpoint_window, None
    window = speed = None
    if index.exists():
        try:
            with index.reading() as conn:
                if db.has_table(conn, "embed_models"):
                    from ..store.backend import vectors as vector_store

                    window = vector_store.model_window(conn, str(ref.local_path))
                    speed = _known_speed(conn, ref.local_path)
        except TansakuError:
            window = speed = None
    return str(ref.local_path), window, speed


def _is_endpoint(config_path: Path) -> bool:
    from ..models.registry import resolve

    ref = resolve("embed", config_path)
    return ref.present and ref.endpoint is not None


def _known_speed(conn: db.Connection, path: Path) -> EmbedSpeed | None:
    from ..index.embed_speed import known
    from ..store.backend import vectors as vector_store

    st = path.stat()
    same_file = (str(path), st.st_size, st.st_mtime_ns)
    for record in vector_store.models(conn):
        if (record.model_path, record.model_size, record.model_mtime_ns) == same_file:
            return known(conn, record.model_sha256)
    return None


def _pending_seconds(infos: list[CollectionInfo], speed: EmbedSpeed | None) -> float | None:
    """Seconds the chunks without a vector would take at the measured speed (0: none pending)."""
    if speed is None:
        return None
    return speed.seconds_for(sum(info.unembedded for info in infos))


def _endpoint_status(endpoint: object, index: Backend) -> tuple[str, int | None]:
    """The endpoint as status shows it, and its window: no request (a status must not wait on a
    network), but what the index recorded of its model (the dimensions embed saw)."""
    from ..models.remote.endpoint import Endpoint

    assert isinstance(endpoint, Endpoint)
    machine = "this machine" if endpoint.loopback else "another machine"
    shown = f"{endpoint.model} at {endpoint.base_url}, an endpoint on {machine}"
    if index.exists():
        try:
            with index.reading() as conn:
                if db.has_table(conn, "embed_models"):
                    from ..index.embed import known_remote
                    from ..store.backend import vectors as vector_store

                    record = known_remote(vector_store.models(conn), endpoint)
                    if record is not None:
                        return f"{shown}, {record.dims} dims", record.window_tokens
        except TansakuError:
            pass
    return shown, None


def _embed_budget(window: int | None) -> int | None:
    """The tokens of each chunk `embed` embeds with a model of this window (a bad setting: None,
    `embed` itself refuses it)."""
    from ..index.embed import embed_budget

    if window is None:
        return None
    try:
        return embed_budget(window)
    except TansakuError:
        return None


def current_fingerprint(conn: Any, config_path: Path) -> str | None:
    """The fingerprint the configured embed model's vectors have with this version of tansaku
    (no hashing when the index knows the file, no loading). Built from the stored model hash
    and prompt format, not read back, so vectors of an older embedded-text version count as
    stale."""
    from ..models.registry import resolve

    ref = resolve("embed", config_path)
    if not ref.present or not db.has_table(conn, "embed_models"):
        return None
    from ..index.embed import current_fingerprint as fingerprint_of
    from ..index.embed import fingerprint_of as fingerprint_from
    from ..index.embed import known_remote
    from ..store.backend import vectors as vector_store

    if ref.endpoint is not None:
        record = known_remote(vector_store.models(conn), ref.endpoint)
        return None if record is None else fingerprint_from(record.model_sha256, record.prompt_format)
    return fingerprint_of(vector_store.models(conn), str(ref.local_path))


def thread_status(config_path: Path, warnings: list[Notice]) -> str | None:
    from ..models.threads import resolve_threads

    try:
        return resolve_threads(config_path).describe()
    except TansakuError as exc:  # status reports a bad setting; the model commands refuse it
        warnings.append(Notice(exc.code, exc.message))
        return None


def status_report(config: Config, config_path: Path, index: Backend) -> StatusReport:
    from ..chunking import available_grammars
    from ..index.runner import pending_summary
    from ..types import CollectionInfo, StatusReport
    from .settings import all_settings

    exists = index.exists()
    warnings: list[Notice] = []
    schema: int | None = None
    embed_path, embed_window, embed_speed = embed_status(config_path, index)
    threads = thread_status(config_path, warnings)
    infos: list[CollectionInfo] = [CollectionInfo(c, 0, None) for c in config.collection_list()]
    states: dict[str, str | None] = {}
    pending: list[str] = []
    if not exists:
        warnings.append(
            Notice(
                "INDEX_MISSING",
                f"no index at {index.location}: `tansaku collection add PATH` creates it",
            )
        )
    else:
        try:
            with index.reading() as conn:
                schema = index.schema_version
                infos, states = collection_infos(conn, config, config_path), store.collection_states(conn)
                pending = pending_summary(conn, config)
        except IndexSchemaMismatch as exc:
            # An older index is usable once `update` upgrades it: a warning. A damaged one
            # (IndexCorrupt) is raised: "0 docs, never indexed" with exit 0 would hide it.
            warnings.append(Notice(exc.code, exc.message))
            schema = exc.details.get("version")
    for c in config.collection_list():
        if exists and c.name not in states:
            pending.append(f"{c.name}: never indexed; run `tansaku update -c {c.name}`")
    for info in infos:
        if info.unembedded:
            name = info.collection.name
            if info.quick_vectors:
                pending.append(
                    f"{name}: {info.unembedded} chunks have no full vector yet ({info.quick_vectors} are"
                    f" searched by a quick one); run `tansaku embed -c {name}`"
                )
            else:
                pending.append(
                    f"{name}: {info.unembedded} chunks have no vector yet; run `tansaku embed -c {name}`"
                )
        if info.chunked < info.documents:
            missing = info.documents - info.chunked
            name = info.collection.name
            pending.append(f"{name}: {missing} documents not chunked yet; run `tansaku update -c {name}`")
    return StatusReport(
        index_path=index.location,
        index_exists=exists,
        index_bytes=index.size_bytes() if exists else 0,
        schema_version=schema,
        code_schema_version=index.schema_version,
        config_path=str(config_path),
        collections=tuple(infos),
        contexts=tuple(config.context_list()),
        pending=tuple(pending),
        warnings=tuple(warnings),
        grammars=tuple(sorted(available_grammars().items())),
        embed_model=embed_path,
        embed_remote=_is_endpoint(config_path) or None,
        embed_window=embed_window,
        embed_budget=_embed_budget(embed_window),
        model_threads=threads,
        settings=all_settings(config_path),
        server=index.describe(),
        embed_speed=embed_speed,
        embed_pending_seconds=_pending_seconds(infos, embed_speed),
    )
