"""Incremental indexing of a transcript collection (Claude Code or Codex sessions).

Each session file is a document whose text is its turns' texts (each followed by a blank line);
each turn is a chunk of it and a row of its own (role, time, source line, run) searchable in
``turns_fts``. Per file, by what the index remembers (size, mtime, the byte offset and line where
reading stopped, a hash of the head and tail of what was read, the parser's state):

- same size and mtime: not opened;
- grown, with the same head and tail: read from the remembered offset only (append mode); the
  session's document keeps its id, its old chunks (and their vectors) and gains the new turns;
- anything else (rewritten, shortened): re-indexed whole;
- gone, while a new path holds the same session (Codex moving a rollout into
  ``archived_sessions``): moved, ids unchanged, then read on from the offset if it grew.

An unfinished last line is left for the next update. Unreadable records are skipped and named in
a ``PARTIAL_SOURCE`` warning. Secrets are redacted before anything is stored (unless the
collection says ``redact = false``). The caller holds the write transaction.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..chunking import ChunkParams, EstimatedTokens, chunk_text
from ..config.masks import MaskMatcher, expand_masks
from ..sources.reader import line_count
from ..sources.transcripts.formats import parser_for, provisional_session_id
from ..sources.transcripts.model import ParseReport, ParseState, Run, Turn
from ..sources.transcripts.redact_units import redact_report
from ..sources.walk import FoundFile, walk_collection
from ..store.backend import chunks as chunk_store
from ..store.backend import documents as doc_store
from ..store.backend import transcripts as tstore
from ..text.cjk import segment
from ..types import Collection, CollectionUpdate, Notice, SkippedFile
from .chunks import params_for
from .progress import Progress
from .update import fts_path, now_iso

# Bytes hashed at each end of what was read: enough to tell a rewritten file from a grown one
# without reading what was already indexed.
PREFIX_SAMPLE = 4096
TRANSCRIPT_STRATEGY = "transcript"
SEPARATOR = "\n\n"
_ESTIMATE = EstimatedTokens()
# 2: session titles, projects, tool names and the stored parser state are redacted too (1 redacted
# turn texts and prompts only), so sessions indexed by 1 are read again.
TRANSCRIPT_INDEXER_VERSION = 2


def prefix_sha(path: str, end: int) -> str:
    """A hash of the first and last PREFIX_SAMPLE bytes before ``end`` (the offset read up to)."""
    digest = hashlib.sha256(str(end).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(min(end, PREFIX_SAMPLE)))
        if end > PREFIX_SAMPLE:
            handle.seek(max(PREFIX_SAMPLE, end - PREFIX_SAMPLE))
            digest.update(handle.read(end - max(PREFIX_SAMPLE, end - PREFIX_SAMPLE)))
    return digest.hexdigest()


@dataclass
class Plan:
    new: list[FoundFile] = field(default_factory=list)
    append: list[tuple[tstore.StoredSession, FoundFile]] = field(default_factory=list)
    rewrite: list[tuple[tstore.StoredSession, FoundFile]] = field(default_factory=list)
    move: list[tuple[tstore.StoredSession, FoundFile]] = field(default_factory=list)
    remove: list[tstore.StoredSession] = field(default_factory=list)
    unchanged: int = 0
    skipped: list[SkippedFile] = field(default_factory=list)


def _grew(old: tstore.StoredSession, item: FoundFile) -> bool:
    if item.size < old.end_offset:
        return False
    try:
        return prefix_sha(item.abs_path, old.end_offset) == old.prefix_sha
    except OSError:
        return False


def plan(conn: Any, collection: Collection, progress: Progress | None = None) -> Plan:
    masks = MaskMatcher(expand_masks(collection.masks))
    ignore = MaskMatcher(expand_masks(collection.ignore)) if collection.ignore else None
    existing = tstore.sessions_in(conn, collection.name)
    # Sessions indexed by an older indexer are read again whole, even when unchanged on disk.
    outdated = doc_store.indexer_version(conn, collection.name) not in (None, TRANSCRIPT_INDEXER_VERSION)
    result = Plan()
    found: list[FoundFile] = []
    for item in walk_collection(Path(collection.path), masks, ignore):
        if isinstance(item, SkippedFile):
            result.skipped.append(item)
        else:
            found.append(item)
    seen: set[str] = set()
    fresh: list[FoundFile] = []
    for done, item in enumerate(found, start=1):
        seen.add(item.rel_path)
        old = existing.get(item.rel_path)
        if old is None:
            fresh.append(item)
        elif outdated:
            result.rewrite.append((old, item))
        elif old.size == item.size and old.mtime_ns == item.mtime_ns:
            result.unchanged += 1
        elif _grew(old, item):
            result.append.append((old, item))
        else:
            result.rewrite.append((old, item))
        if progress and done % 100 == 0:
            progress(done, len(found), "reading")
    gone = {s.session_id: s for path, s in existing.items() if path not in seen}
    for item in fresh:
        old = gone.get(provisional_session_id(collection.type, item.rel_path))
        if old is not None and not outdated and _grew(old, item):
            del gone[old.session_id]
            result.move.append((old, item))
        else:
            result.new.append(item)
    result.remove = list(gone.values())
    return result


@dataclass
class _Totals:
    redactions: Counter[str] = field(default_factory=Counter)
    turns: int = 0
    chunks: int = 0
    warnings: list[Notice] = field(default_factory=list)
    skipped_types: Counter[str] = field(default_factory=Counter)
    skipped: list[SkippedFile] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # texts of grown sessions, now unused


def apply(
    conn: Any, collection: Collection, work: Plan, progress: Progress | None = None
) -> CollectionUpdate:
    indexed_at = now_iso()
    params = params_for(collection)
    totals = _Totals()
    writer = chunk_store.ChunkWriter(conn)
    for old in work.remove:
        tstore.delete_session(conn, old.doc_id)
    for old, item in work.move:
        tstore.move_session(
            conn, old.doc_id, item.rel_path, fts_path(item.rel_path), old.size, old.mtime_ns, indexed_at
        )
    appended = [*work.move, *work.append]
    total = len(appended) + len(work.rewrite) + len(work.new)
    done = 0
    for old, item in appended:
        _append(conn, collection, old, item, params, writer, totals, indexed_at)
        done += 1
        if progress and done % 100 == 0:
            progress(done, total, "writing")
    rewritten: list[str] = []
    for old, item in work.rewrite:
        tstore.delete_session(conn, old.doc_id)
        if _index_whole(conn, collection, item, params, writer, totals, indexed_at):
            rewritten.append(item.rel_path)
        done += 1
        if progress and done % 100 == 0:
            progress(done, total, "writing")
    added: list[str] = []
    for item in work.new:
        if _index_whole(conn, collection, item, params, writer, totals, indexed_at):
            added.append(item.rel_path)
        done += 1
        if progress and done % 100 == 0:
            progress(done, total, "writing")
    writer.flush()
    # Only the texts this update replaced can have become unused: drop those (a generic prune
    # reads every chunk of the index).
    replaced = [old.hash for old in work.remove] + [old.hash for old, _ in work.rewrite]
    tstore.drop_texts(conn, [*replaced, *totals.replaced])
    doc_store.set_collection_state(
        conn, collection.name, collection.path, indexed_at, TRANSCRIPT_INDEXER_VERSION
    )
    if totals.skipped_types:
        listed = ", ".join(f"{kind} ({n})" for kind, n in sorted(totals.skipped_types.items()))
        totals.warnings.append(
            Notice("UNKNOWN_RECORDS", f"{collection.name}: skipped unknown records: {listed}")
        )
    return CollectionUpdate(
        name=collection.name,
        added=added,
        updated=rewritten,
        moved=[(old.path, item.rel_path) for old, item in work.move],
        removed=[old.path for old in work.remove],
        unchanged=work.unchanged,
        skipped=[*work.skipped, *totals.skipped],
        appended=[item.rel_path for _, item in appended],
        redactions=dict(sorted(totals.redactions.items())),
        turns=totals.turns,
        chunked=len(added) + len(rewritten) + len(appended),
        new_chunks=totals.chunks,
        warnings=totals.warnings,
    )


def report(collection: Collection, work: Plan) -> CollectionUpdate:
    """What `update --dry-run` says (nothing is read beyond the stat and the hashed ends)."""
    return CollectionUpdate(
        name=collection.name,
        added=[item.rel_path for item in work.new],
        updated=[item.rel_path for _, item in work.rewrite],
        moved=[(old.path, item.rel_path) for old, item in work.move],
        removed=[old.path for old in work.remove],
        unchanged=work.unchanged,
        skipped=work.skipped,
        appended=[item.rel_path for _, item in [*work.move, *work.append]],
    )


# --- one file ---------------------------------------------------------------------------------


def _read(path: str, offset: int) -> bytes:
    with open(path, "rb") as handle:
        handle.seek(offset)
        return handle.read()


def _epoch(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    try:
        parsed = datetime.fromisoformat(timestamp)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _parse(
    collection: Collection, data: bytes, path: str, totals: _Totals, **position: Any
) -> tuple[ParseReport, int]:
    """The adapter's report on ``data`` with every text in it redacted (unless the collection says
    ``redact = false``), and how many secrets its turns held. The only way parsed text reaches
    the store: whatever a format's adapter emits, and in whichever field, passes through here."""
    report = parser_for(collection.type)(data, path, **position)
    _note_problems(report, totals)
    if not collection.redact:
        return report, 0
    redacted = redact_report(report)
    totals.redactions.update(redacted.turn_counts)
    totals.redactions.update(redacted.session_counts)
    return redacted.report, sum(redacted.turn_counts.values()) + sum(redacted.session_counts.values())


def _heading(turn: Turn) -> tuple[str, ...]:
    if turn.kind == "text":
        return (turn.role,)
    label = f"{turn.role} {turn.kind.replace('_', ' ')}"
    return (f"{label} {turn.tool_name}" if turn.tool_name else label,)


@dataclass
class _Rendered:
    text: str  # what the session text gains
    rows: list[tstore.TurnRow]
    chunks: list[chunk_store.StoredChunk]


def _render(
    turns: list[Turn],
    *,
    start_char: int,
    start_line: int,
    start_byte: int,
    first_seq: int,
    first_chunk: int,
    params: ChunkParams,
) -> _Rendered:
    pieces: list[str] = []
    rows: list[tstore.TurnRow] = []
    chunks: list[chunk_store.StoredChunk] = []
    char, line, byte = start_char, start_line, start_byte
    seq, chunk_seq = first_seq, first_chunk
    for turn in turns:
        text = turn.text
        lines = text.count("\n")
        nbytes = len(text.encode("utf-8"))
        rows.append(
            tstore.TurnRow(
                seq=seq,
                turn_id=turn.id,
                role=turn.role,
                kind=turn.kind,
                tool_name=turn.tool_name,
                line=turn.line,
                timestamp=turn.timestamp,
                epoch=_epoch(turn.timestamp),
                run_index=turn.run_index,
                start_char=char,
                end_char=char + len(text),
                start_line=line,
                end_line=line + lines,
                fts_text=segment(text),
                text=text,
            )
        )
        heading = _heading(turn)
        tokens = _ESTIMATE.count(text)
        if tokens <= params.max_tokens:
            chunks.append(
                chunk_store.StoredChunk(
                    chunk_seq,
                    line,
                    line + lines,
                    char,
                    char + len(text),
                    byte,
                    byte + nbytes,
                    tokens,
                    heading,
                    False,
                )
            )
            chunk_seq += 1
        else:
            # A long tool result is cut like a document; its pieces keep the turn's heading.
            for piece in chunk_text(text, "turn.txt", params).chunks:
                chunks.append(
                    chunk_store.StoredChunk(
                        chunk_seq,
                        line + piece.start_line - 1,
                        line + piece.end_line - 1,
                        char + piece.start_char,
                        char + piece.end_char,
                        byte + piece.start_byte,
                        byte + piece.end_byte,
                        piece.tokens,
                        heading,
                        piece.oversized,
                    )
                )
                chunk_seq += 1
        pieces.append(text + SEPARATOR)
        char += len(text) + len(SEPARATOR)
        byte += nbytes + len(SEPARATOR)
        line += lines + 2
        seq += 1
    return _Rendered("".join(pieces), rows, chunks)


def _title(report: ParseReport, runs: list[Run], fallback: str, old_title: str | None = None) -> str:
    if report.session.title:
        return report.session.title
    if old_title:
        return old_title
    if runs and runs[0].prompt:
        first = runs[0].prompt.strip().splitlines()[0]
        return first if len(first) <= 80 else first[:79] + "…"
    return fallback


def _facts(report: ParseReport, state: ParseState | None, prefix: str, redacted: int) -> tstore.SessionFacts:
    session = report.session
    return tstore.SessionFacts(
        session_id=session.id,
        source_format=session.source_format,
        project=session.project,
        title=session.title,
        parent_session_id=session.parent_session_id,
        first_timestamp=session.first_timestamp,
        last_timestamp=session.last_timestamp,
        run_count=session.run_count,
        turn_count=session.turn_count,
        end_offset=report.end_offset,
        line_count=report.line_count,
        prefix_sha=prefix,
        state=json.dumps(state.as_dict() if state else {}, ensure_ascii=False),
        redacted=redacted,
    )


def _note_problems(report: ParseReport, totals: _Totals) -> None:
    message = report.partial_source_message()
    if message:
        totals.warnings.append(Notice("PARTIAL_SOURCE", message))
    totals.skipped_types.update(report.skipped_types)


def _index_whole(
    conn: Any,
    collection: Collection,
    item: FoundFile,
    params: ChunkParams,
    writer: chunk_store.ChunkWriter,
    totals: _Totals,
    indexed_at: str,
) -> bool:
    """Index a whole file as a new session; False when it has no turns yet (nothing stored)."""
    try:
        data = _read(item.abs_path, 0)
    except OSError as exc:
        totals.skipped.append(SkippedFile(item.rel_path, f"unreadable ({exc.strerror})"))
        return False
    report, redacted = _parse(collection, data, item.rel_path, totals)
    turns, runs, state = list(report.turns), list(report.runs), report.state
    if not turns:
        totals.skipped.append(SkippedFile(item.rel_path, "empty" if not data.strip() else "no-turns"))
        return False
    rendered = _render(
        turns, start_char=0, start_line=1, start_byte=0, first_seq=0, first_chunk=0, params=params
    )
    text = rendered.text
    content_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    title = _title(report, runs, Path(item.rel_path).stem)
    doc_store.put_content(conn, content_hash, text)
    fts = doc_store.FtsText(fts_path(item.rel_path), segment(title), segment(text))
    stored = doc_store.StoredDocument(
        id=0,
        collection=collection.name,
        path=item.rel_path,
        hash=content_hash,
        title=title,
        size=item.size,
        mtime_ns=item.mtime_ns,
        line_count=line_count(text),
        repaired=False,
        indexed_at=indexed_at,
    )
    doc_id = doc_store.insert_document(conn, stored, text, fts)
    # A text hash this index saw before may still carry vectors linked by seq: they belong to the
    # same text, so they stay valid; the chunks are written afresh.
    tstore.put_session(
        conn, doc_id, _facts(report, state, prefix_sha(item.abs_path, report.end_offset), redacted)
    )
    tstore.put_runs(conn, doc_id, [(r.index, r.prompt, r.line, r.timestamp) for r in runs])
    tstore.put_turns(conn, doc_id, rendered.rows)
    writer.add(content_hash, params.fingerprint(), TRANSCRIPT_STRATEGY, [], rendered.chunks)
    totals.turns += len(rendered.rows)
    totals.chunks += len(rendered.chunks)
    return True


def _append(
    conn: Any,
    collection: Collection,
    old: tstore.StoredSession,
    item: FoundFile,
    params: ChunkParams,
    writer: chunk_store.ChunkWriter,
    totals: _Totals,
    indexed_at: str,
) -> None:
    """Read a grown file from where the last update stopped and add what it gained."""
    data = _read(item.abs_path, old.end_offset)
    state = ParseState.from_dict(json.loads(old.state)) if old.state and old.state != "{}" else None
    report, redacted = _parse(
        collection,
        data,
        item.rel_path,
        totals,
        start_offset=old.end_offset,
        start_line=old.line_count,
        state=state,
    )
    turns, runs, new_state = list(report.turns), list(report.runs), report.state
    prefix = prefix_sha(item.abs_path, report.end_offset)
    if not turns:
        tstore.set_read_position(
            conn,
            old.doc_id,
            item.size,
            item.mtime_ns,
            report.end_offset,
            report.line_count,
            prefix,
            json.dumps(new_state.as_dict() if new_state else {}, ensure_ascii=False),
        )
        if report.session.title and report.session.title != old.title:
            tstore.put_session(conn, old.doc_id, _facts(report, new_state, prefix, old.redacted + redacted))
        return
    old_text = doc_store.body(conn, old.hash)
    fingerprint = params.fingerprint()
    previous = chunk_store.chunks_of(conn, old.hash, fingerprint)
    old_chunks = previous[1] if previous else []
    rendered = _render(
        turns,
        start_char=len(old_text),
        start_line=line_count(old_text) + 1,
        start_byte=len(old_text.encode("utf-8")),
        first_seq=tstore.last_turn_seq(conn, old.doc_id) + 1,
        first_chunk=len(old_chunks),
        params=params,
    )
    text = old_text + rendered.text
    content_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()
    title = _title(report, runs, Path(item.rel_path).stem, old.doc_title)
    doc_store.put_content(conn, content_hash, text)
    tstore.replace_text(
        conn,
        old.doc_id,
        new_hash=content_hash,
        title=title,
        size=item.size,
        mtime_ns=item.mtime_ns,
        line_count=line_count(text),
        indexed_at=indexed_at,
        fts=doc_store.FtsText(fts_path(item.rel_path), segment(title), segment(text)),
        text=text,
    )
    tstore.put_session(conn, old.doc_id, _facts(report, new_state, prefix, old.redacted + redacted))
    tstore.put_runs(conn, old.doc_id, [(r.index, r.prompt, r.line, r.timestamp) for r in runs])
    tstore.put_turns(conn, old.doc_id, rendered.rows)
    writer.add(content_hash, fingerprint, TRANSCRIPT_STRATEGY, [], [*old_chunks, *rendered.chunks])
    tstore.copy_vectors(conn, old.hash, content_hash, fingerprint)
    totals.replaced.append(old.hash)
    totals.turns += len(rendered.rows)
    totals.chunks += len(rendered.chunks)
