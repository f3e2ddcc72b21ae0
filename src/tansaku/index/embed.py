"""Embedding chunks: stream pending chunks, reuse vectors of identical text, embed the rest in
batches, commit each batch (an interrupted run keeps what it finished; the next run resumes).

Only one embed runs at a time (a lock file beside the index); readers and `update` are not
blocked: each batch is its own short write transaction.
"""

from __future__ import annotations

import hashlib
import os
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from ..errors import EndpointError, UsageError
from ..models.gguf import file_sha256
from ..models.prompts import PromptFormat
from ..store.backend import Backend, SqliteBackend
from ..store.backend import documents as store
from ..store.backend import vectors as vec
from ..types import Collection, CollectionEmbed, EmbedReport
from . import embed_speed
from .chunks import params_for
from .locks import command_lock
from .progress import Progress
from .quick_digest import quick_window
from .vector_state import VectorState
from .windows import first_window, render_document, split_windows, with_outline

BATCH_CHUNKS = 32

# The quick pass (see QuickPass) embeds QUICK_TOKENS tokens of each chunk, prompt, title and
# headings included, taken from the start of each paragraph (index/quick_digest.py): measured in
# evals/RESULTS-embed.md, 56 keeps most of the full vectors' MRR@10 on the Chinese and npm sets at
# a sixteenth of their cost; 40 loses a quarter of it.
QUICK_TOKENS = 56
# Below this many pending chunks the full pass is soon done, and a quick pass first only adds to it.
QUICK_MIN_CHUNKS = 500
QUICK_MIN_CHUNKS_ENV = "TANSAKU_QUICK_MIN_CHUNKS"
# The full pass embeds each chunk's first EMBED_BUDGET tokens (prompt, title and headings
# included) with a model whose window is longer: measured with EmbeddingGemma (2,046-token
# window) in evals/RESULTS-embed.md ("How much of a chunk: the full pass"), 512 kept `query`'s
# MRR@10 within 0.011 of whole chunks on all ten sets measured (+0.010 on average) and vsearch's
# within 0.004 on average, for about three fifths of the tokens; 256 lost up to 0.07 on Chinese.
# A model with a shorter window (MiniLM: 254) embeds every window, as measured in issue 10.
# TANSAKU_EMBED_BUDGET ("all", or a number of tokens for any model) overrides it.
EMBED_BUDGET: int | None = 512
EMBED_BUDGET_ENV = "TANSAKU_EMBED_BUDGET"
# Tokens per decode when quick windows are packed: faster than one window a decode, and far
# less memory than a full 2,048-token batch (which was no faster).
QUICK_PACK_TOKENS = 512


class Embedder(Protocol):
    dims: int
    context_tokens: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]: ...

    def count_tokens(self, text: str) -> int: ...


# Bump when the text given to the model for the same chunk changes (its hash changes, but the
# chunk's link to its vector would not, so the old vectors would silently stay): 2 = every window
# starts with its document's title and is at most the model's trained length.
EMBEDDED_TEXT_VERSION = 2


def fingerprint_of(model_sha256: str, prompt_format: str) -> str:
    return f"{model_sha256[:16]}:{prompt_format}:c{EMBEDDED_TEXT_VERSION}"


def superseded_pattern(identity: ModelIdentity) -> str:
    """A LIKE pattern for the fingerprints of this model file and prompt at any embedded-text
    version (the current one included: callers exclude it)."""
    return f"{identity.sha256[:16]}:{identity.prompt.name}:c%"


@dataclass(frozen=True)
class ModelIdentity:
    """What a vector depends on besides its text: the file and the prompt format.

    Not the chunker version: a vector is keyed by the exact text embedded (heading path and
    chunk), so a new chunker costs only the chunks whose text changed, and ``embed`` relinks the
    rest. The ``c`` suffix is EMBEDDED_TEXT_VERSION (it was ``c`` + the chunker version, 1, until
    chunker 2)."""

    path: str
    sha256: str
    size: int
    mtime_ns: int
    prompt: PromptFormat
    dims: int | None = None  # an endpoint model's, part of its identity; a file's is in its header

    @property
    def fingerprint(self) -> str:
        return fingerprint_of(self.sha256, self.prompt.name)


def model_identity(conn: Any, path: str, prompt: PromptFormat) -> ModelIdentity:
    """Hash the model file, unless the index already knows this exact file (same size and mtime)."""
    st = os.stat(path)
    for known in vec.models(conn):
        if (
            known.model_path == path
            and known.model_size == st.st_size
            and known.model_mtime_ns == st.st_mtime_ns
        ):
            return ModelIdentity(path, known.model_sha256, st.st_size, st.st_mtime_ns, prompt)
    return ModelIdentity(path, file_sha256(path), st.st_size, st.st_mtime_ns, prompt)


def remote_identity(endpoint: Any, dims: int, prompt: PromptFormat) -> ModelIdentity:
    """A served model's identity: its name and dimensions (``Endpoint.identity``) stand where a
    file's hash does, so switching between a file and an endpoint marks vectors stale the same way."""
    return ModelIdentity(endpoint.reference, endpoint.identity(dims), 0, 0, prompt, dims)


def remote_records(known: Sequence[vec.EmbedModelRecord], endpoint: Any) -> list[vec.EmbedModelRecord]:
    """The records of vectors from ``endpoint``'s model, at every dimension count it had, on any
    host, the one embed registered last at the end: no request needed."""
    return [k for k in known if k.model_sha256 == endpoint.identity(k.dims)]


def known_remote(known: Sequence[vec.EmbedModelRecord], endpoint: Any) -> vec.EmbedModelRecord | None:
    """The record embed registered last for ``endpoint``'s model (what `status` shows)."""
    mine = remote_records(known, endpoint)
    return mine[-1] if mine else None


def current_fingerprint(known: Sequence[vec.EmbedModelRecord], path: str) -> str | None:
    """The fingerprint ``path``'s vectors would have now, from what the index recorded about the
    file (same size and mtime, else the same content); None when it was never embedded here."""
    st = os.stat(path)
    same_file = (path, st.st_size, st.st_mtime_ns)
    match = next((k for k in known if (k.model_path, k.model_size, k.model_mtime_ns) == same_file), None)
    if match is None:
        sha = file_sha256(path)
        match = next((k for k in known if k.model_sha256 == sha), None)
    if match is None:
        return None
    return fingerprint_of(match.model_sha256, match.prompt_format)


def pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


@dataclass(frozen=True)
class QuickPass:
    """Whether `embed` gives every pending chunk a quick vector before the full ones.

    ``mode``: "auto" (when at least ``min_chunks`` chunks are pending), "only" (the quick pass
    and nothing else: the full pass can run later, e.g. at night) or "off"."""

    mode: str = "auto"
    min_chunks: int = QUICK_MIN_CHUNKS
    tokens: int = QUICK_TOKENS

    @classmethod
    def from_setting(cls, mode: str) -> QuickPass:
        raw = os.environ.get(QUICK_MIN_CHUNKS_ENV, "").strip()
        if raw and not raw.isdigit():
            raise UsageError(f"{QUICK_MIN_CHUNKS_ENV}={raw!r} is not a whole number of chunks")
        return cls(mode, int(raw) if raw else QUICK_MIN_CHUNKS)

    def wanted(self, pending: int) -> bool:
        return self.mode == "only" or (self.mode == "auto" and pending > 0 and pending >= self.min_chunks)


@dataclass(frozen=True)
class _Unit:
    """One vector to have: a chunk, or a window of a long chunk."""

    hash: str
    seq: int
    window: int
    start_line: int
    end_line: int
    text: str
    text_sha: str
    label: str


def embed_collections(
    index: Path | Backend,
    collections: Sequence[Collection],
    model_path: str,
    prompt: PromptFormat,
    load_embedder: Callable[[], Embedder],
    *,
    force: bool = False,
    progress: Callable[[str], Progress | None] | None = None,
    identity: ModelIdentity | None = None,
    quick: QuickPass | None = None,
) -> EmbedReport:
    """``index``: a SQLite file or a backend (store/backend.py). ``identity``: the model's, when
    it is not a file to hash (an endpoint: ``remote_identity``); ``quick``: the quick pass's
    policy (none for an endpoint: it is fast, and paid per token)."""
    started = time.perf_counter()
    backend = SqliteBackend(index) if isinstance(index, Path) else index
    conn = backend.open_write()
    try:
        with command_lock(backend, conn, "embed"):
            vec.load_extension(conn)
            if identity is None:
                identity = model_identity(conn, model_path, prompt)
            return _run(
                conn, backend, collections, identity, load_embedder, force, progress, started,
                quick or QuickPass("off"),
            )  # fmt: skip
    except backend.database_error as exc:
        raise backend.translate(exc) from exc
    finally:
        conn.close()


def _run(
    conn: Any,
    backend: Backend,
    collections: Sequence[Collection],
    identity: ModelIdentity,
    load_embedder: Callable[[], Embedder],
    force: bool,
    progress: Callable[[str], Progress | None] | None,
    started: float,
    quick: QuickPass,
) -> EmbedReport:
    prompt = identity.prompt
    fingerprint = identity.fingerprint
    with backend.write_lock(conn, "embed"):
        # Remember this file's name, size and mtime so later runs and `status` need not hash it.
        vec.remember_model_file(conn, fingerprint, identity.path, identity.size, identity.mtime_ns)
    report = EmbedReport(identity.path, fingerprint, prompt.name, 0, 0, [])
    computed = chunks_done = 0
    work = _Work()  # what the model computed, and for how long: the speed kept for estimates
    loaded: list[Embedder] = []

    def model() -> Embedder:
        if not loaded:
            loaded.append(load_embedder())
            report.dims, report.window_tokens = loaded[0].dims, window_tokens(loaded[0])
            report.budget_tokens = embed_budget(report.window_tokens)
            with backend.write_lock(conn, "embed"):
                vec.ensure_vec_table(conn, loaded[0].dims)
                vec.register_model(conn, _record(identity, loaded[0]), _now())
        return loaded[0]

    every_plan: list[tuple[Collection, str, list[tuple[str, int]], CollectionEmbed]] = []
    try:
        plans: list[tuple[Collection, str, list[tuple[str, int]], CollectionEmbed]] = []
        for collection in collections:
            params = params_for(collection).fingerprint()
            if force:
                with backend.write_lock(conn, "embed -f"):
                    hashes = list({d.hash for d in store.documents_in(conn, collection.name).values()})
                    vec.clear(conn, fingerprint, hashes)
            pending = vec.pending_chunks(conn, fingerprint, collection.name, params)
            result = CollectionEmbed(collection.name, pending=len(pending))
            report.collections.append(result)
            plans.append((collection, params, pending, result))
        if quick.wanted(sum(len(pending) for _, _, pending, _ in plans)):
            for collection, params, _, result in plans:
                todo = vec.pending_chunks(conn, fingerprint, collection.name, params, quick=True)
                if todo:
                    _quick_pass(
                        conn,
                        backend,
                        collection,
                        params,
                        todo,
                        identity,
                        model,
                        result,
                        quick,
                        progress,
                        force,
                    )
        every_plan[:] = plans
        if quick.mode == "only":
            plans = []
        for collection, params, pending, result in plans:
            if not pending:
                continue
            embedder = model()
            callback = progress(collection.name) if progress else None
            paths = {doc.hash: path for path, doc in store.documents_in(conn, collection.name).items()}
            titles = {doc.hash: doc.title for doc in store.documents_in(conn, collection.name).values()}
            for start in range(0, len(pending), BATCH_CHUNKS):
                batch_started = time.perf_counter()
                batch = pending[start : start + BATCH_CHUNKS]
                units = _units(
                    conn, batch, params, prompt, embedder, titles, paths, budget=report.budget_tokens
                )
                vectors, chunks, embedded_chunks = _store_batch(
                    conn, backend, embedder, identity, params, units, result, force
                )
                computed += vectors
                chunks_done += chunks
                if embedded_chunks:
                    work.add(embedded_chunks, vectors, time.perf_counter() - batch_started)
                if callback:
                    callback(min(start + BATCH_CHUNKS, len(pending)), len(pending), "embedding")
    except KeyboardInterrupt:
        report.interrupted = True  # finished batches are committed; the next run resumes
    with backend.write_lock(conn, "embed prune"):
        vec.unlink_superseded(conn, identity.fingerprint, superseded_pattern(identity))
        vec.prune(conn)
        speed = embed_speed.measured(work.chunks, work.vectors, work.seconds)
        if speed is not None:
            embed_speed.remember(conn, identity.sha256, speed)
    for collection, params, _, result in every_plan:
        state = _vector_state(conn, collection.name, params, fingerprint)
        result.state, result.state_note = state.name, state.describe(collection.name, quick.tokens)
    elapsed = time.perf_counter() - started
    report.took_ms = elapsed * 1000
    report.vectors_per_second = computed / elapsed if elapsed > 0 else 0.0
    report.chunks_per_second = chunks_done / elapsed if elapsed > 0 else 0.0
    report.peak_memory_mb = _peak_memory_mb()
    return report


def _vector_state(conn: Any, collection: str, params: str, fingerprint: str) -> VectorState:
    full, chunks, _ = vec.collection_vector_counts(conn, collection, params, fingerprint)
    quick = vec.collection_quick_count(conn, collection, params, fingerprint)
    return VectorState(chunks, full, quick)


@dataclass
class _Work:
    """Chunks the model embedded (reused vectors aside) and the seconds their batches took."""

    chunks: int = 0
    vectors: int = 0
    seconds: float = 0.0

    def add(self, chunks: int, vectors: int, seconds: float) -> None:
        self.chunks += chunks
        self.vectors += vectors
        self.seconds += seconds


def window_tokens(embedder: Embedder) -> int:
    """Tokens per embedded window: ``TANSAKU_EMBED_WINDOW`` if set, else the model's trained
    window where it declares one, else its whole context."""
    override = os.environ.get("TANSAKU_EMBED_WINDOW", "").strip()
    limit = int(getattr(embedder, "window_tokens", embedder.context_tokens))
    if override:
        if not override.isdigit() or int(override) < 16:
            raise UsageError(
                f"TANSAKU_EMBED_WINDOW={override!r} is not a whole number of tokens (16 or more)"
            )
        return min(int(override), embedder.context_tokens)
    return limit


_DEFAULT = "default"


def embed_budget_setting() -> int | str | None:
    """``TANSAKU_EMBED_BUDGET``: None for "all", a number of tokens (16 or more), or "default"
    when unset (``EMBED_BUDGET`` for a model whose window is longer: ``embed_budget``)."""
    raw = os.environ.get(EMBED_BUDGET_ENV, "").strip().lower()
    if not raw:
        return _DEFAULT
    if raw == "all":
        return None
    if not raw.isdigit() or int(raw) < 16:
        raise UsageError(f"{EMBED_BUDGET_ENV}={raw!r} is not 'all' or a whole number of tokens (16 or more)")
    return int(raw)


def embed_budget(window: int) -> int | None:
    """Tokens of each chunk the full pass embeds with a model of ``window`` tokens a window (None:
    every token): the setting, else EMBED_BUDGET where the window is longer than it."""
    setting = embed_budget_setting()
    if setting != _DEFAULT:
        return setting if isinstance(setting, int) else None
    return EMBED_BUDGET if EMBED_BUDGET is not None and window > EMBED_BUDGET else None


def _record(identity: ModelIdentity, embedder: Embedder) -> vec.EmbedModelRecord:
    return vec.EmbedModelRecord(
        fingerprint=identity.fingerprint,
        model_path=identity.path,
        model_sha256=identity.sha256,
        model_size=identity.size,
        model_mtime_ns=identity.mtime_ns,
        prompt_format=identity.prompt.name,
        dims=embedder.dims,
        window_tokens=window_tokens(embedder),
    )


def _quick_pass(
    conn: Any,
    backend: Backend,
    collection: Collection,
    params: str,
    todo: Sequence[tuple[str, int]],
    identity: ModelIdentity,
    model: Callable[[], Embedder],
    result: CollectionEmbed,
    quick: QuickPass,
    progress: Callable[[str], Progress | None] | None,
    force: bool = False,
) -> None:
    """A quick vector for each chunk that has no vector yet: its first ``quick.tokens`` tokens.
    Their speed is not kept as the model's (a short text costs less a token than a chunk).
    ``force`` (`embed -f`) computes them again rather than reuse stored vectors of the same text."""
    embedder = model()
    callback = progress(collection.name) if progress else None
    documents = store.documents_in(conn, collection.name)
    paths = {doc.hash: path for path, doc in documents.items()}
    titles = {doc.hash: doc.title for doc in documents.values()}
    limit = min(quick.tokens, window_tokens(embedder))
    for start in range(0, len(todo), BATCH_CHUNKS):
        batch = todo[start : start + BATCH_CHUNKS]
        units = _units(conn, batch, params, identity.prompt, embedder, titles, paths, quick_limit=limit)
        scratch = CollectionEmbed(collection.name)
        _, linked, _ = _store_batch(
            conn, backend, embedder, identity, params, units, scratch, force, quick=True
        )
        result.quick += linked
        if callback:
            callback(min(start + BATCH_CHUNKS, len(todo)), len(todo), "quick vectors")


def _units(
    conn: Any,
    batch: Sequence[tuple[str, int]],
    params: str,
    prompt: PromptFormat,
    embedder: Embedder,
    titles: dict[str, str],
    paths: dict[str, str],
    quick_limit: int | None = None,
    budget: int | None = None,
) -> list[_Unit]:
    """The texts to embed for these chunks: the windows of the chunk's first ``budget`` tokens
    (None: of all of it), or with ``quick_limit`` a window of ``quick_limit`` tokens from the start
    of each of its paragraphs (quick_digest.py), as the chunk's quick window."""
    from ..store.backend import chunks as chunk_store

    units: list[_Unit] = []
    by_hash: dict[str, list[int]] = {}
    for content_hash, seq in batch:
        by_hash.setdefault(content_hash, []).append(seq)
    for content_hash, seqs in by_hash.items():
        stored = chunk_store.chunks_of(conn, content_hash, params)
        if stored is None:
            continue
        body = store.body(conn, content_hash)
        title = titles.get(content_hash, "")
        for chunk in stored[1]:
            if chunk.seq not in seqs:
                continue
            text = body[chunk.start_char : chunk.end_char].removesuffix("\n")
            render = partial(render_document, prompt, title, tuple(chunk.heading_path))
            lines = text.split("\n")
            if quick_limit is not None:
                quick_text = quick_window(lines, chunk.start_line, render, embedder.count_tokens, quick_limit)
                windows, numbers = [quick_text], [vec.QUICK_WINDOW]
            else:
                if budget is not None:
                    render = with_outline(
                        render, paths.get(content_hash, ""), lines, embedder.count_tokens, budget
                    )
                    head = first_window(lines, chunk.start_line, render, embedder.count_tokens, budget)
                    lines = head.text.split("\n")
                windows = split_windows(
                    lines, chunk.start_line, render, embedder.count_tokens, window_tokens(embedder)
                )
                numbers = list(range(len(windows)))
            for number, window in zip(numbers, windows, strict=True):
                rendered = render(window.text)
                units.append(
                    _Unit(
                        content_hash,
                        chunk.seq,
                        number,
                        window.start_line,
                        window.end_line,
                        rendered,
                        hashlib.sha256(rendered.encode("utf-8")).hexdigest(),
                        f"{paths.get(content_hash, content_hash[:8])}#{chunk.seq}",
                    )
                )
    return units


def _store_batch(
    conn: Any,
    backend: Backend,
    embedder: Embedder,
    identity: ModelIdentity,
    params: str,
    units: list[_Unit],
    result: CollectionEmbed,
    force: bool,
    *,
    quick: bool = False,
) -> tuple[int, int, int]:
    """Embed and link one batch; returns (vectors computed, chunks that now have their vectors,
    chunks the model embedded at least one window of). ``quick``: the batch is quick windows; a
    failure then is not recorded (the full pass tries the chunk again)."""
    fingerprint = identity.fingerprint
    # With force nothing is reused: every text is embedded again and its vector replaced.
    known = {} if force else vec.existing_embeddings(conn, fingerprint, [u.text_sha for u in units])
    todo = list({u.text_sha: u for u in units if u.text_sha not in known}.values())
    vectors, failures = _embed_resilient(embedder, todo, pack=quick)
    with backend.write_lock(conn, "embed"):
        for unit, vector in zip(todo, vectors, strict=True):
            if vector is not None:
                known[unit.text_sha] = vec.add_embedding(
                    conn, fingerprint, embedder.dims, unit.text_sha, pack(vector)
                )
        chunk_errors = {(u.hash, u.seq): failures[u.text_sha] for u in units if u.text_sha in failures}
        links = [
            (fingerprint, u.hash, params, u.seq, u.window, known[u.text_sha], u.start_line, u.end_line)
            for u in units
            if (u.hash, u.seq) not in chunk_errors
        ]
        vec.link_chunks(conn, links)
        if not quick:
            vec.unlink_quick(conn, fingerprint, params, sorted({(u.hash, u.seq) for u in units}))
            for (content_hash, seq), error in sorted(chunk_errors.items()):
                vec.record_failure(conn, fingerprint, content_hash, params, seq, error)
    computed = sum(1 for v in vectors if v is not None)
    result.embedded += computed
    computed_shas = {t.text_sha for t in todo}
    result.reused += len({(u.hash, u.seq) for u in units if u.text_sha not in computed_shas})
    result.windows += sum(1 for u in units if u.window > 0)
    result.failed += sorted({f"{u.label}: {failures[u.text_sha]}" for u in units if u.text_sha in failures})
    embedded = {(u.hash, u.seq) for u in units if u.text_sha in computed_shas} - set(chunk_errors)
    return computed, len({(u.hash, u.seq) for u in units} - set(chunk_errors)), len(embedded)


def _embed_resilient(
    embedder: Embedder, units: list[_Unit], *, pack: bool = False
) -> tuple[list[list[float] | None], dict[str, str]]:
    """Embed a batch; if the batch fails, embed one by one so one bad chunk only loses itself.

    ``pack``: several texts per decode where the embedder can (quick windows: measured, packing
    56-token texts 512 tokens to a decode costs a fifth less CPU a token; their vectors move by
    ~1e-4, which a quick vector can afford)."""
    if not units:
        return [], {}
    try:
        texts = [u.text for u in units]
        if pack and getattr(embedder, "packs", False):
            return list(embedder.embed(texts, pack=True, pack_tokens=QUICK_PACK_TOKENS)), {}  # type: ignore[call-arg]
        return list(embedder.embed(texts)), {}
    except (KeyboardInterrupt, EndpointError):
        # An endpoint that is down, refusing or rate-limiting fails every text alike: stop the run
        # with its error (finished batches are kept) rather than try each text and record each.
        raise
    except Exception:  # a model error on one text must not stop the run
        pass
    vectors: list[list[float] | None] = []
    failures: dict[str, str] = {}
    for unit in units:
        try:
            vectors.append(embedder.embed([unit.text])[0])
        except (KeyboardInterrupt, EndpointError):
            raise
        except Exception as exc:
            vectors.append(None)
            failures[unit.text_sha] = f"{type(exc).__name__}: {exc}"
    return vectors, failures


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _peak_memory_mb() -> float:
    try:
        import resource
    except ImportError:  # Windows
        return 0.0
    # ru_maxrss is KiB on Linux, bytes on macOS.
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if os.uname().sysname == "Darwin" else peak / 1024
