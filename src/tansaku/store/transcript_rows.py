"""The rows of agent transcripts as the store takes and returns them (store/transcripts.py, on
both backends): sessions, turns, their facts, search filters and groups.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StoredSession:
    doc_id: int
    path: str
    hash: str
    size: int
    mtime_ns: int
    session_id: str
    source_format: str
    project: str | None
    title: str | None
    parent_session_id: str | None
    first_timestamp: str | None
    last_timestamp: str | None
    run_count: int
    turn_count: int
    end_offset: int
    line_count: int
    prefix_sha: str
    state: str  # ParseState as JSON
    redacted: int
    collection: str
    doc_title: str


@dataclass(frozen=True)
class TurnRow:
    seq: int
    turn_id: str
    role: str
    kind: str
    tool_name: str | None
    line: int
    timestamp: str | None
    epoch: float | None
    run_index: int
    start_char: int
    end_char: int
    start_line: int
    end_line: int
    fts_text: str  # what turns_fts is given (the text, CJK-segmented)
    text: str  # the text itself (stored once, in the session text)


@dataclass(frozen=True)
class SessionFacts:
    session_id: str
    source_format: str
    project: str | None
    title: str | None
    parent_session_id: str | None
    first_timestamp: str | None
    last_timestamp: str | None
    run_count: int
    turn_count: int
    end_offset: int
    line_count: int
    prefix_sha: str
    state: str
    redacted: int


@dataclass(frozen=True)
class TurnFilter:
    collections: tuple[str, ...]
    roles: tuple[str, ...] = ()
    since: float | None = None  # epoch seconds, inclusive
    until: float | None = None  # epoch seconds, exclusive
    project: str | None = None  # the working directory contains this


@dataclass(frozen=True)
class GroupRow:
    turn_id: int  # transcript_turns.id of the best turn
    bm25: float  # its raw bm25 (negative: lower is better)
    matches: int
    first_epoch: float | None
    last_epoch: float | None
    sessions: int


@dataclass(frozen=True)
class TurnView:
    id: int
    doc_id: int
    collection: str
    path: str
    hash: str
    size: int
    mtime_ns: int
    doc_title: str
    seq: int
    turn_id: str
    role: str
    kind: str
    tool_name: str | None
    line: int
    timestamp: str | None
    run_index: int
    run_prompt: str | None
    start_line: int
    end_line: int
    text: str
    session_id: str
    project: str | None
    session_title: str | None
    source_format: str
    parent_session_id: str | None
    first_timestamp: str | None
    last_timestamp: str | None
