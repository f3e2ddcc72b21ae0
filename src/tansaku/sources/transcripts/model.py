"""The normalised units of an agent transcript, shared by every format adapter.

A session is one file; a run is one real user prompt and everything until the next; a turn is one
content block (text, tool call, tool result, thinking). Every unit is a frozen dataclass so the
indexer can hash, compare and cache them freely.

Ids (stable across re-parses, file growth and a Codex session moving into the archive):
- session: Claude: the file name without ``.jsonl``; a sub-agent file is ``<parent>/<agent-stem>``.
  Codex: ``session_meta.payload.id``, else the uuid in the file name.
- turn: the record's message uuid (Claude), else ``<session id>:<line>``; a record whose content
  is a list of blocks adds ``#<block index>`` (the index in the original list, so dropping a block
  never renumbers its neighbours). The session id is used instead of the file path because the
  path changes when Codex archives a session while the id must not.
- run: ``<session id>/run/<index>``, index counted from 1; turns before the first real prompt
  belong to run 0, which has no Run record and an empty prompt.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Role = Literal["user", "assistant", "tool"]
Kind = Literal["text", "tool_call", "tool_result", "thinking"]
SourceFormat = Literal["claude", "codex"]


@dataclass(frozen=True)
class Turn:
    id: str
    session_id: str
    role: Role
    kind: Kind
    text: str
    source_path: str
    line: int  # 1-based line of the record in the source file
    timestamp: str | None  # ISO 8601 as written by the tool; some records have none
    run_index: int
    run_prompt: str
    block_index: int | None = None
    tool_name: str | None = None


@dataclass(frozen=True)
class Run:
    session_id: str
    index: int
    prompt: str
    line: int
    timestamp: str | None

    @property
    def id(self) -> str:
        return f"{self.session_id}/run/{self.index}"


@dataclass(frozen=True)
class Session:
    id: str
    source_format: SourceFormat
    project: str | None  # the working directory; None until a record names it
    title: str | None
    source_path: str
    parent_session_id: str | None  # set for sub-agent (sidechain) transcripts
    first_timestamp: str | None
    last_timestamp: str | None
    run_count: int
    turn_count: int


@dataclass(frozen=True)
class BadRecord:
    line: int
    reason: str


@dataclass(frozen=True)
class ParseState:
    """What a later parse of the same file's appended bytes needs to continue exactly.

    Everything here is plain data so the indexer can store it as JSON (``as_dict``/``from_dict``)
    next to the byte offset, line count and prefix hash it keeps for append mode.
    """

    source_format: SourceFormat
    session_id: str | None = None  # None until the record that decides it has been read
    parent_session_id: str | None = None
    project: str | None = None
    explicit_title: str | None = None  # Claude custom-title, Codex thread_name_updated
    summary_title: str | None = None  # Claude summary: used only without an explicit title
    first_timestamp: str | None = None
    last_timestamp: str | None = None
    run_index: int = 0
    run_prompt: str = ""
    turn_count: int = 0
    # Codex writes each prompt twice (response_item message and event_msg/user_message): the
    # first copy is kept and remembered here until its twin or any other turn arrives.
    pending_prompt: str | None = None
    pending_prompt_source: str | None = None
    # The last line read had no newline but parsed: its newline, still to come, must not be
    # counted as the start of a new line.
    open_line: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ParseState:
        return cls(**data)


@dataclass(frozen=True)
class ParseReport:
    """The units found in one piece of a file, and where reading stopped.

    ``turns`` and ``runs`` hold only what this piece added; ``session`` describes the whole file
    read so far (title, timestamps and counts accumulate through ``state``). ``end_offset`` is an
    absolute byte offset into the file: pass it back as ``start_offset`` with ``line_count`` and
    ``state`` to read what is appended later.
    """

    session: Session
    runs: tuple[Run, ...]
    turns: tuple[Turn, ...]
    skipped_types: dict[str, int] = field(default_factory=dict)  # unknown record types, by type
    bad_records: tuple[BadRecord, ...] = ()
    end_offset: int = 0
    line_count: int = 0
    truncated_tail: bool = False  # an unfinished last line was left unread for next time
    state: ParseState | None = None

    @property
    def partial_source(self) -> bool:
        """True when records were skipped as unreadable: the PARTIAL_SOURCE warning's condition."""
        return bool(self.bad_records)

    def partial_source_message(self) -> str | None:
        if not self.bad_records:
            return None
        lines = ", ".join(str(bad.line) for bad in self.bad_records[:10])
        more = f" and {len(self.bad_records) - 10} more" if len(self.bad_records) > 10 else ""
        return f"{self.session.source_path}: skipped unreadable records at line {lines}{more}"
