"""Cutting JSON Lines bytes into records, with byte offsets and 1-based line numbers.

Transcripts are appended to while an agent runs, so the bytes handed in may end in the middle of
a record. Rules:
- an unterminated last line that does not parse (or is not valid UTF-8 yet) is left unread: the
  returned offset stops before it and ``truncated_tail`` is set; it is not a bad record;
- an unterminated last line that parses is read (a file that simply lacks a final newline), and
  ``open_line`` is set so that the newline arriving later is not counted as a new line;
- a complete line that is not UTF-8, not JSON, or not a JSON object is a bad record (its line
  number and why) and the lines after it are still read;
- blank lines count as lines (line numbers must match an editor's) but yield nothing.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .model import BadRecord

UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Record:
    line: int
    value: dict[str, Any]


@dataclass
class LineScan:
    records: list[Record] = field(default_factory=list)
    bad_records: list[BadRecord] = field(default_factory=list)
    end_offset: int = 0
    line_count: int = 0
    truncated_tail: bool = False
    open_line: bool = False


class _Unreadable(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _decode(raw: bytes, is_first_line: bool) -> dict[str, Any]:
    if is_first_line and raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM) :]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"invalid UTF-8 at byte {exc.start} of the line") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _Unreadable(f"invalid JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(value, dict):
        raise _Unreadable(f"not a JSON object ({type(value).__name__})")
    return value


def scan(data: bytes, *, start_offset: int = 0, start_line: int = 0, open_line: bool = False) -> LineScan:
    """Read the records in ``data``, which holds the file's bytes from ``start_offset`` on."""
    result = LineScan(end_offset=start_offset, line_count=start_line, open_line=open_line)
    pos = 0
    if open_line and data:
        # The previous read took a last line that had no newline; what arrives up to the next
        # newline still belongs to that line.
        newline = data.find(b"\n")
        rest_of_line = data if newline < 0 else data[:newline]
        if newline < 0:
            if not rest_of_line.strip():
                result.end_offset = start_offset + len(data)
            else:
                result.truncated_tail = True
            return result
        if rest_of_line.strip():
            # The line grew after it was read: what was read from it no longer stands for it.
            result.bad_records.append(BadRecord(start_line, "line was extended after it was read"))
        pos = newline + 1
        result.open_line = False
    line_no = start_line
    while pos < len(data):
        newline = data.find(b"\n", pos)
        if newline < 0:
            tail = data[pos:]
            if not tail.strip():
                break  # trailing blanks without a newline: wait for what follows them
            try:
                value = _decode(tail, line_no == 0)
            except _Unreadable:
                result.truncated_tail = True
                break
            line_no += 1
            result.records.append(Record(line_no, value))
            pos = len(data)
            result.open_line = True
            break
        raw = data[pos:newline]
        pos = newline + 1
        line_no += 1
        if not raw.strip():
            continue
        try:
            result.records.append(Record(line_no, _decode(raw, line_no == 1)))
        except _Unreadable as exc:
            result.bad_records.append(BadRecord(line_no, exc.reason))
    result.end_offset = start_offset + pos
    result.line_count = line_no
    return result
