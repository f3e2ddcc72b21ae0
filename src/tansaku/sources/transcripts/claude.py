"""Claude Code transcripts (``~/.claude/projects/<slug>/<session>.jsonl``) into normalised units.

One record per line; ``user`` and ``assistant`` records carry ``message.content``, a string or a
list of blocks (``text``, ``thinking``, ``tool_use``, ``tool_result``). Not turns: meta records
(``isMeta``, compaction summaries), injected context (command caveats, system reminders),
placeholder replies (``No response requested.``) and empty texts. A user text that is a real
prompt starts a run; a user record holding only tool results does not.

Sub-agent transcripts (``agent-*.jsonl``, or any file whose records say ``isSidechain``) are
sessions of their own, ``<parent>/<agent-stem>``, linked to the parent session named by the
``<session>/subagents/`` folder or by the records' ``sessionId``.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from . import jsonl
from .builder import SessionBuilder, file_stem, render_tool_input, valid_timestamp
from .model import ParseReport, ParseState
from .noise import is_placeholder_or_empty, is_real_prompt

# Known record types that carry nothing to index (not counted as unknown).
IGNORED_TYPES = frozenset({"system", "file-history-snapshot"})
# Known block types that carry nothing to index as text.
IGNORED_BLOCKS = frozenset({"image", "document", "redacted_thinking"})
# Records that are shown to the model but were not typed by the user.
META_FLAGS = ("isMeta", "isCompactSummary", "isVisibleInTranscriptOnly")


def parse(
    data: bytes, path: str, *, start_offset: int = 0, start_line: int = 0, state: ParseState | None = None
) -> ParseReport:
    """Parse ``data`` (the file's bytes from ``start_offset`` on) of the transcript at ``path``."""
    scan = jsonl.scan(
        data, start_offset=start_offset, start_line=start_line, open_line=bool(state and state.open_line)
    )
    builder = SessionBuilder("claude", path, state)
    for record in scan.records:
        _read_record(builder, record)
    session_id, _ = _session_identity(path, {})
    return builder.report(scan, provisional_session_id=session_id)


def _session_identity(path: str, value: dict[str, Any]) -> tuple[str, str | None]:
    stem = file_stem(path)
    if not (stem.startswith("agent-") or value.get("isSidechain") is True):
        return stem, None
    parts = PurePath(path).parts
    parent: str | None = None
    if len(parts) >= 3 and parts[-2] == "subagents":
        parent = parts[-3]
    elif isinstance(value.get("sessionId"), str) and value["sessionId"] != stem:
        parent = value["sessionId"]
    return (f"{parent}/{stem}" if parent else stem), parent


def _identify(builder: SessionBuilder, value: dict[str, Any], *, force: bool) -> None:
    # A sub-agent's parent is named by its records' sessionId, which the first lines (a summary)
    # may lack: wait for a record that has it, or for the first turn, whichever comes first.
    if builder.identified or not (force or "sessionId" in value):
        return
    builder.identify(*_session_identity(builder.path, value))


def _read_record(builder: SessionBuilder, record: jsonl.Record) -> None:
    value = record.value
    record_type = value.get("type")
    timestamp = valid_timestamp(value.get("timestamp"))
    builder.see_timestamp(timestamp)
    builder.set_project(value.get("cwd"))
    _identify(builder, value, force=False)
    if record_type == "user":
        if not any(value.get(flag) for flag in META_FLAGS):
            _read_user(builder, record, timestamp)
    elif record_type == "assistant":
        _read_assistant(builder, record, timestamp)
    elif record_type == "custom-title":
        builder.set_explicit_title(value.get("customTitle"))
    elif record_type == "summary":
        builder.set_summary_title(value.get("summary"))
    elif record_type not in IGNORED_TYPES:
        builder.skip_unknown(str(record_type))


def _content(value: dict[str, Any]) -> Any:
    message = value.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _read_user(builder: SessionBuilder, record: jsonl.Record, timestamp: str | None) -> None:
    uuid = record.value.get("uuid") if isinstance(record.value.get("uuid"), str) else None
    content = _content(record.value)
    if isinstance(content, str):
        if is_real_prompt(content):
            _identify(builder, record.value, force=True)
            builder.add_turn(
                uuid=uuid,
                line=record.line,
                block_index=None,
                role="user",
                kind="text",
                text=content,
                timestamp=timestamp,
                starts_run=True,
            )
        return
    if not isinstance(content, list):
        return
    prompt_texts = [
        block["text"]
        for block in content
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
        and is_real_prompt(block["text"])
    ]
    run_started = False
    for index, block in enumerate(content):
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "text":
            text = block.get("text")
            if not isinstance(text, str) or not is_real_prompt(text):
                continue
            _identify(builder, record.value, force=True)
            builder.add_turn(
                uuid=uuid,
                line=record.line,
                block_index=index,
                role="user",
                kind="text",
                text=text,
                timestamp=timestamp,
                starts_run=not run_started,
                prompt="\n\n".join(prompt_texts),
            )
            run_started = True
        elif block_type == "tool_result":
            text = tool_result_text(block.get("content"))
            if is_placeholder_or_empty(text):
                continue
            _identify(builder, record.value, force=True)
            builder.add_turn(
                uuid=uuid,
                line=record.line,
                block_index=index,
                role="tool",
                kind="tool_result",
                text=text,
                timestamp=timestamp,
            )
        elif block_type not in IGNORED_BLOCKS:
            builder.skip_unknown(f"user/{block_type}")


def tool_result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            block["text"]
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
        ]
        return "\n".join(texts)
    return ""


def _read_assistant(builder: SessionBuilder, record: jsonl.Record, timestamp: str | None) -> None:
    uuid = record.value.get("uuid") if isinstance(record.value.get("uuid"), str) else None
    content = _content(record.value)
    if isinstance(content, str):
        content_blocks: list[Any] = [{"type": "text", "text": content}]
        single = True
    elif isinstance(content, list):
        content_blocks, single = content, False
    else:
        return
    for index, block in enumerate(content_blocks):
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        tool_name: str | None = None
        if block_type == "text":
            kind, text = "text", block.get("text")
        elif block_type == "thinking":
            kind, text = "thinking", block.get("thinking")
        elif block_type == "tool_use":
            tool_name = block.get("name") if isinstance(block.get("name"), str) else None
            rendered = render_tool_input(block.get("input"))
            kind, text = "tool_call", f"{tool_name or 'tool'}\n{rendered}" if rendered else tool_name
        else:
            if block_type not in IGNORED_BLOCKS:
                builder.skip_unknown(f"assistant/{block_type}")
            continue
        if not isinstance(text, str) or is_placeholder_or_empty(text):
            continue
        _identify(builder, record.value, force=True)
        builder.add_turn(
            uuid=uuid,
            line=record.line,
            block_index=None if single else index,
            role="assistant",
            kind=kind,
            text=text,
            timestamp=timestamp,
            tool_name=tool_name,
        )
