"""Typed results shared by the library, the renderers and (later) the servers.

Field names here are the JSON contract (see docs/formats.md): renderers turn these into text and
never query the store themselves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar, dataclass_transform

SCHEME = "tansaku"

# Start-up cost. ``@dataclass`` compiles every generated method (``__init__``, ``__repr__``,
# ``__eq__``, ...) with ``exec`` when the class is created, and a ``.pyc`` cannot cache that: with
# all 23 classes built at import this module took about 20 ms, a sixth of a whole `tansaku search`.
# So only the classes a keyword search returns are built at import (``@dataclass``); the others
# (``@_deferred``) are built, exactly as ``@dataclass`` would build them, the first time anything
# looks them up (``from tansaku.types import X``, ``tansaku.types.X``, unpickling). No instance
# can exist before that, so nothing but start-up time can tell the two apart.

_C = TypeVar("_C", bound=type)
_DEFERRED: dict[str, tuple[type, dict[str, Any]]] = {}  # name -> (class body, dataclass options)
_BUILD_LOCK = threading.Lock()


@dataclass_transform(field_specifiers=(field,))  # type checkers treat these classes as dataclasses
def _deferred(*, frozen: bool = False) -> Callable[[_C], _C]:
    """``@dataclass(frozen=...)``, applied on the class's first look-up instead of at import."""

    def register(cls: _C) -> _C:
        _DEFERRED[cls.__name__] = (cls, {"frozen": frozen})
        return cls

    return register


@dataclass(frozen=True)
class Notice:
    """A warning attached to a result: something the reader must know, with a stable code."""

    code: str
    message: str


@dataclass(frozen=True)
class Collection:
    name: str
    path: str
    masks: tuple[str, ...] = ("**/*.md",)
    ignore: tuple[str, ...] = ()
    update: str | None = None
    include: bool = True
    chunk_strategy: str = "regex"  # "regex" | "auto" (tree-sitter cut points for code files)
    type: str = "files"  # "files" | "claude" | "codex" (agent session transcripts)
    redact: bool = True  # transcripts: secrets are redacted before indexing


@_deferred(frozen=True)
class Context:
    path: str  # "/" for global, else a virtual path such as tansaku://notes/meetings
    text: str


@dataclass(frozen=True)
class Snippet:
    start_line: int  # 1-based line number in the source file of lines[0]
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Hit:
    docid: str
    score: float
    collection: str
    path: str  # relative to the collection root, with forward slashes
    virtual_path: str
    disk_path: str
    title: str
    contexts: tuple[str, ...]
    snippet: Snippet
    stale: bool = False
    matched_terms: int = 0
    total_terms: int = 0
    body: str | None = None  # only with --full
    chunk_lines: tuple[int, int] | None = None  # vector modes: the matching chunk's first and last line
    transcript: TranscriptHit | None = None  # transcript collections searched by --level
    # --fields: the document's front-matter fields, (name, value or tuple of values) as written.
    fields: tuple[tuple[str, Any], ...] | None = None
    page: int | None = None  # a PDF's page where the snippet (or the matching chunk) starts
    # The virtual paths of the other documents with the same text (exact copies), shown once
    # here (search/copies.py); empty with --all-copies or when there are none.
    also_at: tuple[str, ...] = ()
    # The languages of the same page at paths that differ only by a language segment (docs/fr/,
    # index.ja.html), shown once here (search/languages.py); empty with --all-copies.
    also_in: tuple[str, ...] = ()


@_deferred(frozen=True)
class TranscriptHit:
    """Where a hit in an agent transcript is, at the level it was aggregated to."""

    level: str  # turn | run | session | project
    project: str | None
    session_id: str | None  # None at project level
    session_title: str | None
    run_index: int | None  # turn and run levels
    run_prompt: str | None
    role: str | None  # turn level: user | assistant | tool
    kind: str | None  # turn level: text | tool_call | tool_result | thinking
    turn_id: str | None
    timestamp: str | None  # the best hit's
    line: int | None  # the best hit's 1-based line in the source file
    matches: int  # matching turns aggregated into this result
    first_timestamp: str | None  # time span of the matching turns
    last_timestamp: str | None
    sessions: int = 1  # project level: sessions with a match


@dataclass(frozen=True)
class SearchResult:
    query: str
    mode: str
    hits: tuple[Hit, ...]
    total: int  # matching documents before the limit was applied
    limit: int | None  # None = --all
    warnings: tuple[Notice, ...] = ()
    took_ms: float = 0.0
    collections: tuple[str, ...] = ()  # the collections that were searched
    # False when only the nearest candidates were counted (vsearch on disk): total is a lower bound.
    total_exact: bool = True
    used: str | None = None  # query: the retrievals that ran ("keyword+vector", "keyword")
    explain: QueryExplanation | None = None  # query --explain
    # search: the hits (virtual paths) that define a name of the query; how far `query` may trust
    # the keyword list. Not rendered.
    definers: tuple[str, ...] = ()
    # query: how many of the first hits are definitions of a looked-up name that lead by rule
    # (hybrid/pipeline.py); reranking keeps their places. Not rendered.
    pinned: int = 0


@_deferred(frozen=True)
class ListWeight:
    """One ranked list that `query` fused: its weight and why."""

    name: str  # "keyword", "vector"
    weight: float
    reason: str
    count: int  # documents it contributed


@_deferred(frozen=True)
class ListRank:
    name: str
    rank: int  # 1-based, in that list
    score: float  # that list's own score
    rrf: float  # weight / (60 + rank)


@_deferred(frozen=True)
class HitExplanation:
    path: str  # virtual path of the result
    ranks: tuple[ListRank, ...]
    bonus: float
    fused: float  # the RRF sum plus bonus, before scaling to 0..1
    rrf_rank: int = 0  # 1-based place in the fused order, before reranking
    rerank: float | None = None  # the rerank model's 0..1 score; None: not reranked
    blended: float | None = None  # w / rrf_rank + (1 - w) * rerank, the final score when reranked


@_deferred(frozen=True)
class StageTime:
    stage: str
    seconds: float
    tokens: int = 0  # rerank: the prompt tokens the model read (tokens / model_seconds = its speed)
    model_seconds: float = 0.0  # rerank: the time inside the model


@_deferred(frozen=True)
class QueryExplanation:
    lists: tuple[ListWeight, ...]
    hits: tuple[HitExplanation, ...]  # in result order
    notes: tuple[str, ...] = ()  # pipeline decisions: probe, skipped steps
    # Seconds per step that ran, in order: probe, expansion, embedding, retrieval, fusion, rerank.
    stages: tuple[StageTime, ...] = ()


@_deferred(frozen=True)
class DocumentSlice:
    """A bounded view of one document: lines [from_line, from_line + len(lines))."""

    docid: str
    collection: str
    path: str
    virtual_path: str
    disk_path: str
    title: str
    contexts: tuple[str, ...]
    size: int
    total_lines: int
    from_line: int
    lines: tuple[str, ...]
    truncated: bool  # True when lines after the slice exist and were not returned
    stale: bool = False
    missing: bool = False  # the file is gone from disk (deleted or moved since it was indexed)
    # `get #docid` of a text at several paths: the others (this one is the first by collection
    # and path); None otherwise, and then not in JSON.
    also_at: tuple[str, ...] | None = field(default=None, metadata={"omit_if_none": True})


@_deferred(frozen=True)
class SessionMessage:
    """One turn of a transcript as `session read` returns it."""

    turn_id: str
    line: int  # 1-based line in the source file
    role: str
    kind: str
    timestamp: str | None
    run_index: int
    tool_name: str | None
    text: str


@_deferred(frozen=True)
class SessionRead:
    """A bounded run of a session's turns, in file order."""

    collection: str
    session_id: str
    path: str
    virtual_path: str
    disk_path: str
    project: str | None
    title: str | None
    parent_session_id: str | None
    source_format: str
    first_timestamp: str | None
    last_timestamp: str | None
    total_turns: int
    messages: tuple[SessionMessage, ...]
    runs: tuple[tuple[int, str], ...]  # (index, prompt) of the runs the messages belong to
    truncated: bool  # more turns after these were not returned (--limit or --max-bytes)
    next_line: int | None  # --from-line for the next page
    max_bytes: int
    raw: bool  # text read from the source file, unredacted
    warnings: tuple[Notice, ...] = ()
    # `get SESSION.jsonl:LINE`: the source line of the turns shown with context around them.
    focus_line: int | None = None


@_deferred(frozen=True)
class SkippedDocument:
    virtual_path: str
    size: int  # the file's bytes on disk, as `ls` shows them
    reason: str
    text_bytes: int = 0  # the bytes of its text: what --max-bytes is compared with


@_deferred(frozen=True)
class MultiGetResult:
    pattern: str
    documents: tuple[DocumentSlice, ...]
    skipped: tuple[SkippedDocument, ...]
    max_bytes: int
    max_lines: int | None
    warnings: tuple[Notice, ...] = ()


@_deferred(frozen=True)
class SkippedFile:
    path: str
    # binary | invalid-utf8 | too-large | unreadable | symlink-outside-root | symlink-loop
    # | symlink-duplicate | symlink-broken | not-a-file
    reason: str


@_deferred(frozen=True)
class HookRun:
    command: str
    exit_code: int
    stdout: str
    stderr: str


@_deferred()
class CollectionUpdate:
    """What one collection's update did (or, with dry_run, would do)."""

    name: str
    added: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    moved: list[tuple[str, str]] = field(default_factory=list)  # (old path, new path)
    removed: list[str] = field(default_factory=list)
    unchanged: int = 0
    repaired: list[str] = field(default_factory=list)  # invalid UTF-8 decoded with replacement
    skipped: list[SkippedFile] = field(default_factory=list)
    hook: HookRun | None = None
    hook_pending: str | None = None  # dry run: the hook that would run
    chunked: int = 0  # texts chunked in this run (unchanged texts keep their chunks)
    new_chunks: int = 0  # the chunks those texts were cut into
    # The collection's chunks once updated, counted as `status` and `collection show` count them
    # (CollectionInfo.chunks: a text two files hold is counted once); 0 in a dry run.
    chunks: int = 0
    # One line for the blocks longer than max_tokens split at line boundaries (split_blocks of
    # them), then per-file notes ("path: note"), e.g. grammar missing, fell back to regex.
    chunk_warnings: list[str] = field(default_factory=list)
    split_blocks: int = 0
    # Blocks a site repeats on its pages (menus, footers) left out of the HTML pages read, and
    # the pages they were left out of (index/repeated.py).
    repeated_blocks: int = 0
    repeated_pages: int = 0
    chunk_ms: float = 0.0  # time spent chunking and storing chunks
    failed: str | None = None  # why this collection was not updated
    # transcript collections
    appended: list[str] = field(default_factory=list)  # read from where the last update stopped
    redactions: dict[str, int] = field(default_factory=dict)  # secrets redacted, by kind
    turns: int = 0  # turns indexed in this run
    warnings: list[Notice] = field(default_factory=list)  # PARTIAL_SOURCE, ...


@_deferred()
class UpdateReport:
    dry_run: bool
    collections: list[CollectionUpdate]
    took_ms: float = 0.0
    warnings: list[Notice] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.failed is None for c in self.collections)


@_deferred(frozen=True)
class CollectionInfo:
    collection: Collection
    documents: int
    last_update: str | None  # ISO 8601 UTC
    bytes: int = 0
    chunked: int = 0  # documents whose text has chunks for the collection's current parameters
    chunks: int = 0  # the chunks of those texts, each distinct text once (what embed embeds)
    chunk_fallbacks: int = 0  # documents chunked with regex instead (e.g. no grammar for the language)
    vectors: int = 0  # chunks with a vector from the configured embedding model
    stale_vectors: int = 0  # chunks whose only vectors come from another model
    unembedded: int = 0  # chunks without a vector from the configured model (once embedding began)
    quick_vectors: int = 0  # of those, chunks searched by a quick vector until their full one
    # What the vector side holds (index/vector_state.py): "none", "quick", "partial" or "full",
    # and the sentence that says it.
    vector_state: str = "none"
    vector_state_note: str = ""
    # Files the last `update` skipped on purpose and that are unchanged since (not pending: a
    # change makes them pending again), and how many per reason code ({"corrupt": 1}).
    skipped: int = 0
    skipped_reasons: dict[str, int] = field(default_factory=dict)


@_deferred(frozen=True)
class CollectionSummary:
    """A collection's counts as a front end shows them beside results (``IndexSummary``)."""

    name: str
    documents: int
    chunks: int
    vectors: int  # chunks with their full vector from the configured embedding model
    quick_vectors: int  # chunks searched by a quick vector until their full one
    vector_state: str  # "none", "quick", "partial" or "full" (index/vector_state.py)


@_deferred(frozen=True)
class IndexSummary:
    """What the index holds, for a status line that follows it: the counts of `status` without
    its walk of the folders (pending changes), cheap enough to ask for after every search."""

    documents: int
    chunks: int
    vectors: int
    quick_vectors: int
    vector_state: str  # over every collection: "none", "quick", "partial" or "full"
    collections: tuple[CollectionSummary, ...]


@_deferred(frozen=True)
class FileEntry:
    virtual_path: str
    docid: str
    size: int
    modified: str  # ISO 8601 UTC
    title: str


@_deferred(frozen=True)
class EmbedSpeed:
    """One measured `embed` run: chunks that got new vectors per second of embedding."""

    chunks_per_second: float
    vectors_per_second: float  # windows: a chunk longer than the model's window has several
    chunks: int  # chunks embedded in the measured run
    seconds: float  # time spent embedding them (model load excluded)
    measured_at: str  # ISO 8601 UTC, to the second

    def seconds_for(self, chunks: int) -> float:
        return chunks / self.chunks_per_second


@_deferred(frozen=True)
class StatusReport:
    index_path: str
    index_exists: bool
    index_bytes: int
    schema_version: int | None
    code_schema_version: int
    config_path: str
    collections: tuple[CollectionInfo, ...]
    contexts: tuple[Context, ...]
    pending: tuple[str, ...]  # human sentences: what `update` would have to do
    warnings: tuple[Notice, ...] = ()
    grammars: tuple[tuple[str, bool], ...] = ()  # tree-sitter languages for --chunk-strategy auto
    # The configured embedding model file when it is present, or its model at its endpoint.
    embed_model: str | None = None
    embed_window: int | None = None  # tokens per vector window of that model (as last used by embed)
    embed_budget: int | None = None  # tokens of each chunk `embed` embeds with it (None: all)
    model_threads: str | None = None  # the llama.cpp thread setting and where it comes from
    # Every setting with its source (flag, env, config, default): tansaku.precedence.SettingSource
    settings: tuple[Any, ...] = ()
    # A database server's index (PostgreSQL): its version, pgvector's, the round trip to it.
    # Absent from JSON for a SQLite file.
    server: ServerInfo | None = field(default=None, metadata={"omit_if_none": True})
    # How fast the configured embedding model embedded on this machine (its latest measured
    # `embed` run), and what that makes of the chunks still without a vector; None: not measured.
    embed_speed: EmbedSpeed | None = None
    embed_pending_seconds: float | None = None
    # True when the embed model is an endpoint (another program embeds: no speed is measured here).
    # Absent from JSON for a model file.
    embed_remote: bool | None = field(default=None, metadata={"omit_if_none": True})


@_deferred(frozen=True)
class ServerInfo:
    """The database server behind an index (`status` for a postgresql:// index)."""

    product: str  # "PostgreSQL 18.3"
    pgvector: str | None  # the version installed in the database, else None
    pgvector_available: str | None  # the version the server could install, else None
    round_trip_ms: float  # the median of a few `SELECT 1`


@_deferred(frozen=True)
class QueryOutcome:
    """One query of an evaluation set, run in one mode."""

    id: str
    query: str
    kind: str
    mode: str
    relevant: tuple[str, ...]  # primary answer first
    ranked: tuple[str, ...]  # paths returned, best first (at most k)
    first_relevant_rank: int | None  # 1-based; None = no relevant document in the top k
    reciprocal_rank: float
    ndcg: float
    latency_ms: float
    warnings: tuple[str, ...] = ()


@_deferred(frozen=True)
class MetricSummary:
    mode: str
    kind: str  # "all" or one query kind
    queries: int
    hit_at_1: float
    hit_at_3: float
    hit_at_5: float
    hit_at_10: float
    mrr_at_10: float
    ndcg_at_10: float
    latency_p50_ms: float
    latency_p95_ms: float


@_deferred(frozen=True)
class BenchReport:
    query_set: str
    collection: str
    modes: tuple[str, ...]  # modes that ran
    summaries: tuple[MetricSummary, ...]
    queries: tuple[QueryOutcome, ...]
    warnings: tuple[Notice, ...]  # unavailable modes, a stale index, unknown relevant paths
    record: dict[str, object]  # what makes the run reproducible (see docs/evals.md)


@_deferred(frozen=True)
class ChunkView:
    seq: int
    start_line: int
    end_line: int
    tokens: int
    heading_path: tuple[str, ...]
    oversized: bool
    text: str


@_deferred(frozen=True)
class DocumentChunks:
    """A document's chunks as stored (or, when not stored yet, as they would be)."""

    docid: str
    collection: str
    path: str
    virtual_path: str
    disk_path: str
    title: str
    params: str  # chunking parameters fingerprint, e.g. v1:900:135:200:regex
    strategy_used: str  # "regex" or "ast:<language>"
    stored: bool  # False: computed for display; `tansaku update` stores them
    chunks: tuple[ChunkView, ...]
    warnings: tuple[Notice, ...] = ()


@_deferred()
class CollectionEmbed:
    name: str
    pending: int = 0  # chunks without a vector for the model when the run started
    embedded: int = 0  # vectors computed by the model in this run
    reused: int = 0  # chunks whose exact text already had a vector (no model call)
    windows: int = 0  # extra vectors for chunks longer than the model's window
    quick: int = 0  # chunks given a quick vector (index/quick_digest.py) before their full ones
    failed: list[str] = field(default_factory=list)  # "path#seq: error"
    # What the collection's vector side holds once the run ends (index/vector_state.py).
    state: str = ""
    state_note: str = ""


@_deferred()
class EmbedReport:
    model_path: str
    fingerprint: str
    prompt_format: str
    dims: int
    window_tokens: int
    collections: list[CollectionEmbed]
    # Tokens of each chunk the full pass embedded (its first ones), None for all of it.
    budget_tokens: int | None = None
    interrupted: bool = False
    took_ms: float = 0.0
    chunks_per_second: float = 0.0  # chunks that got their vectors (computed or reused)
    vectors_per_second: float = 0.0  # vectors computed by the model (windows count one each)
    peak_memory_mb: float = 0.0
    warnings: list[Notice] = field(default_factory=list)
    # For an endpoint model: where the text went and what it cost (requests, retries, texts,
    # bytes_sent, prompt_tokens as the server reported them or None, seconds in HTTP).
    remote: dict[str, Any] | None = None


@_deferred(frozen=True)
class PackItem:
    """One passage of a context pack, whole, with everything needed to cite it."""

    docid: str
    score: float  # the document's fused `query` score
    collection: str
    path: str
    virtual_path: str
    disk_path: str
    title: str
    contexts: tuple[str, ...]
    start_line: int  # 1-based, inclusive
    end_line: int  # inclusive
    heading_path: tuple[str, ...]  # the headings above start_line, outermost first
    text: str  # lines start_line..end_line joined with LF
    stale: bool = False


@_deferred(frozen=True)
class ContextPack:
    """The best passages of a `query`, greedily by score, that fit the item and byte budgets."""

    query: str
    items: tuple[PackItem, ...]  # in score order
    bytes_used: int  # UTF-8 bytes of the items' text
    max_bytes: int
    max_items: int
    omitted: int  # candidate items left out whole because they did not fit
    warnings: tuple[Notice, ...] = ()
    used: str | None = None  # the retrievals the query ran ("keyword+vector", "keyword")


@_deferred(frozen=True)
class DoctorCheck:
    """One finding of `tansaku doctor`: ok, warn or fail, with the command that fixes it."""

    check: str  # e.g. "config", "index.fts", "model.embed", "device.cpu"
    status: str  # "ok" | "warn" | "fail"
    detail: str
    fix: str | None = None  # the exact command (or edit) that fixes it; None when nothing to do


# The deferred classes leave the module namespace, so that a look-up reaches __getattr__ (PEP 562).
for _name in _DEFERRED:
    del globals()[_name]
del _name


def __getattr__(name: str) -> Any:
    try:
        cls, options = _DEFERRED[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    namespace = globals()
    with _BUILD_LOCK:  # @dataclass must run once per class: a second run fails on a frozen class
        if name not in namespace:
            namespace[name] = dataclass(**options)(cls)
    return namespace[name]


def __dir__() -> list[str]:
    return sorted({*globals(), *_DEFERRED})
