"""Accumulating turns, runs and session facts while an adapter walks a file's records.

Both adapters feed this one builder so run numbering, ids, timestamps and the append state work
the same way for every format. It starts from a ``ParseState`` (or from nothing) and hands back
the state to continue from, so parsing a file in two pieces gives the same units as parsing it
whole.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from .jsonl import LineScan
from .model import Kind, ParseReport, ParseState, Role, Run, Session, SourceFormat, Turn
from .redact import redact


def _timestamp_key(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    # Naive timestamps are taken as UTC so they can be compared with the usual "...Z" ones.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def valid_timestamp(value: Any) -> str | None:
    if isinstance(value, str) and _timestamp_key(value) is not None:
        return value
    return None


def render_tool_input(value: Any) -> str:
    """Tool arguments as searchable text: ``key: value`` lines with strings left unescaped, so a
    command or a written file reads as it was (and ``KEY=value`` lines inside stay lines)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return " ".join(value)
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            rendered = render_tool_input(item) if isinstance(item, str | list) else None
            if rendered is None:
                rendered = json.dumps(item, ensure_ascii=False)
            parts.append(f"{key}: {rendered}")
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


class SessionBuilder:
    def __init__(self, source_format: SourceFormat, path: str, state: ParseState | None) -> None:
        if state is not None and state.source_format != source_format:
            raise ValueError(
                f"state of a {state.source_format} transcript given to the {source_format} parser"
            )
        self.path = path
        self.state = state or ParseState(source_format=source_format)
        self.turns: list[Turn] = []
        self.runs: list[Run] = []
        self.skipped_types: dict[str, int] = {}

    # -- session facts ---------------------------------------------------------------------------

    @property
    def identified(self) -> bool:
        return self.state.session_id is not None

    def identify(self, session_id: str, parent_session_id: str | None = None) -> None:
        """Fix the session id once; later calls are ignored so a split parse decides it at the
        same record as a whole parse."""
        if self.state.session_id is None:
            self.state = replace(self.state, session_id=session_id, parent_session_id=parent_session_id)

    def set_project(self, cwd: Any) -> None:
        if self.state.project is None and isinstance(cwd, str) and cwd:
            self.state = replace(self.state, project=cwd)

    def set_explicit_title(self, title: Any) -> None:
        if isinstance(title, str) and title.strip():
            self.state = replace(self.state, explicit_title=title.strip())

    def set_summary_title(self, title: Any) -> None:
        if isinstance(title, str) and title.strip():
            self.state = replace(self.state, summary_title=title.strip())

    def see_timestamp(self, timestamp: str | None) -> None:
        # Timestamps are not monotonic after compaction or resume: keep the earliest and latest.
        if timestamp is None:
            return
        key = _timestamp_key(timestamp)
        first, last = self.state.first_timestamp, self.state.last_timestamp
        if key is None:
            return
        if first is None or key < (_timestamp_key(first) or key):
            first = timestamp
        if last is None or key > (_timestamp_key(last) or key):
            last = timestamp
        self.state = replace(self.state, first_timestamp=first, last_timestamp=last)

    def skip_unknown(self, record_type: str) -> None:
        self.skipped_types[record_type] = self.skipped_types.get(record_type, 0) + 1

    # -- turns -------------------------------------------------------------------------------

    def add_turn(
        self,
        *,
        uuid: str | None,
        line: int,
        block_index: int | None,
        role: Role,
        kind: Kind,
        text: str,
        timestamp: str | None,
        tool_name: str | None = None,
        starts_run: bool = False,
        prompt: str | None = None,
    ) -> None:
        session_id = self.state.session_id
        if session_id is None:
            raise RuntimeError("identify() the session before adding turns")
        if starts_run:
            run_prompt = (prompt if prompt is not None else text).strip()
            run_index = self.state.run_index + 1
            self.state = replace(self.state, run_index=run_index, run_prompt=run_prompt)
            self.runs.append(Run(session_id, run_index, run_prompt, line, timestamp))
        base = uuid if uuid else f"{session_id}:{line}"
        turn_id = base if block_index is None else f"{base}#{block_index}"
        self.turns.append(
            Turn(
                id=turn_id,
                session_id=session_id,
                role=role,
                kind=kind,
                text=text.strip(),
                source_path=self.path,
                line=line,
                timestamp=timestamp,
                run_index=self.state.run_index,
                run_prompt=self.state.run_prompt,
                block_index=block_index,
                tool_name=tool_name,
            )
        )
        # Any turn ends the window in which a prompt's twin may still arrive.
        self.state = replace(
            self.state, turn_count=self.state.turn_count + 1, pending_prompt=None, pending_prompt_source=None
        )

    def remember_prompt(self, source: str, text: str) -> None:
        self.state = replace(self.state, pending_prompt=text.strip(), pending_prompt_source=source)

    def is_twin_of_pending_prompt(self, source: str, text: str) -> bool:
        state = self.state
        if state.pending_prompt is None or state.pending_prompt_source == source:
            return False
        prompt = text.strip()
        # A state read back from the index holds the prompt as it was indexed: redacted.
        return state.pending_prompt == prompt or state.pending_prompt == redact(prompt).text

    def forget_pending_prompt(self) -> None:
        self.state = replace(self.state, pending_prompt=None, pending_prompt_source=None)

    # -- result ------------------------------------------------------------------------------

    def report(self, scan: LineScan, provisional_session_id: str) -> ParseReport:
        state = replace(self.state, open_line=scan.open_line)
        session = Session(
            id=state.session_id or provisional_session_id,
            source_format=state.source_format,
            project=state.project,
            title=state.explicit_title or state.summary_title,
            source_path=self.path,
            parent_session_id=state.parent_session_id,
            first_timestamp=state.first_timestamp,
            last_timestamp=state.last_timestamp,
            run_count=state.run_index,
            turn_count=state.turn_count,
        )
        return ParseReport(
            session=session,
            runs=tuple(self.runs),
            turns=tuple(self.turns),
            skipped_types=dict(self.skipped_types),
            bad_records=tuple(scan.bad_records),
            end_offset=scan.end_offset,
            line_count=scan.line_count,
            truncated_tail=scan.truncated_tail,
            state=state,
        )


def file_stem(path: str) -> str:
    name = PurePath(path).name
    return name[: -len(".jsonl")] if name.endswith(".jsonl") else PurePath(path).stem
