"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) into normalised units.

Each line is ``{"timestamp", "type", "payload"}``. Conversation content is in ``response_item``
payloads (messages, reasoning, tool calls and their outputs); ``event_msg`` payloads mostly repeat
it for the UI and are ignored, except ``user_message`` (the prompt's second copy: only one of the
two becomes a turn, whichever comes first) and ``thread_name_updated`` (the title).

The session id comes from ``session_meta`` when the file starts with it (it always does), else
from the uuid in the file name, so a session keeps its id and its turns' ids when it is moved to
``archived_sessions``.
"""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

from . import jsonl
from .builder import SessionBuilder, file_stem, render_tool_input, valid_timestamp
from .model import Kind, ParseReport, ParseState, Role
from .noise import is_placeholder_or_empty, is_real_prompt

IGNORED_TYPES = frozenset({"turn_context", "compacted"})
IGNORED_ITEMS = frozenset({"reasoning_encrypted"})
# Messages from these roles are instructions the tool injects, never conversation.
IGNORED_ROLES = frozenset({"developer", "system"})
_FILE_UUID = re.compile(r"([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$", re.I)
TOOL_CALL_ITEMS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
TOOL_OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})


def parse(
    data: bytes, path: str, *, start_offset: int = 0, start_line: int = 0, state: ParseState | None = None
) -> ParseReport:
    """Parse ``data`` (the file's bytes from ``start_offset`` on) of the rollout at ``path``."""
    scan = jsonl.scan(
        data, start_offset=start_offset, start_line=start_line, open_line=bool(state and state.open_line)
    )
    builder = SessionBuilder("codex", path, state)
    for record in scan.records:
        _read_record(builder, record)
    return builder.report(scan, provisional_session_id=session_id_from_path(path))


def session_id_from_path(path: str) -> str:
    stem = file_stem(path)
    match = _FILE_UUID.search(stem)
    return match.group(1).lower() if match else stem


def _read_record(builder: SessionBuilder, record: jsonl.Record) -> None:
    value = record.value
    record_type = value.get("type")
    payload = value.get("payload") if isinstance(value.get("payload"), dict) else {}
    timestamp = valid_timestamp(value.get("timestamp"))
    builder.see_timestamp(timestamp)
    if not builder.identified:
        # The first record decides, in a whole parse and in a split one alike.
        meta_id = payload.get("id") if record_type == "session_meta" else None
        builder.identify(
            meta_id if isinstance(meta_id, str) and meta_id else session_id_from_path(builder.path)
        )
    if record_type == "session_meta":
        builder.set_project(payload.get("cwd"))
    elif record_type == "turn_context":
        builder.set_project(payload.get("cwd"))  # older rollouts name the directory only here
    elif record_type == "response_item":
        _read_item(builder, record, payload, timestamp)
    elif record_type == "event_msg":
        _read_event(builder, record, payload, timestamp)
    elif record_type not in IGNORED_TYPES:
        builder.skip_unknown(str(record_type))


def _add_prompt(
    builder: SessionBuilder,
    source: str,
    texts: list[tuple[int | None, str]],
    line: int,
    timestamp: str | None,
) -> None:
    real = [(index, text) for index, text in texts if is_real_prompt(text)]
    if not real:
        return
    prompt = "\n\n".join(text for _, text in real)
    if builder.is_twin_of_pending_prompt(source, prompt):
        builder.forget_pending_prompt()
        return
    for position, (index, text) in enumerate(real):
        builder.add_turn(
            uuid=None,
            line=line,
            block_index=index,
            role="user",
            kind="text",
            text=text,
            timestamp=timestamp,
            starts_run=position == 0,
            prompt=prompt,
        )
    builder.remember_prompt(source, prompt)


def _read_event(
    builder: SessionBuilder, record: jsonl.Record, payload: dict[str, Any], timestamp: str | None
) -> None:
    event_type = payload.get("type")
    if event_type == "user_message" and isinstance(payload.get("message"), str):
        _add_prompt(builder, "event_msg", [(None, payload["message"])], record.line, timestamp)
    elif event_type == "thread_name_updated":
        builder.set_explicit_title(payload.get("thread_name"))
    # Other events (agent_message, agent_reasoning, token_count, ...) repeat response items.


def _block_texts(content: Any) -> list[tuple[int | None, str]]:
    if isinstance(content, str):
        return [(None, content)]
    if not isinstance(content, list):
        return []
    return [
        (index, block["text"])
        for index, block in enumerate(content)
        if isinstance(block, dict) and isinstance(block.get("text"), str)
    ]


def _read_item(
    builder: SessionBuilder, record: jsonl.Record, payload: dict[str, Any], timestamp: str | None
) -> None:
    item_type = payload.get("type")
    line = record.line

    def add(
        role: Role, kind: Kind, text: str, block_index: int | None = None, tool: str | None = None
    ) -> None:
        if not is_placeholder_or_empty(text):
            builder.add_turn(
                uuid=None,
                line=line,
                block_index=block_index,
                role=role,
                kind=kind,
                text=text,
                timestamp=timestamp,
                tool_name=tool,
            )

    if item_type == "message":
        role = payload.get("role")
        texts = _block_texts(payload.get("content"))
        if role == "user":
            _add_prompt(builder, "response_item", texts, line, timestamp)
        elif role == "assistant":
            for index, text in texts:
                add("assistant", "text", text, index)
        elif role not in IGNORED_ROLES:
            builder.skip_unknown(f"response_item/message/{role}")
    elif item_type == "reasoning":
        summary = _block_texts(payload.get("summary")) or _block_texts(payload.get("content"))
        for index, text in summary:
            add("assistant", "thinking", text, index)
    elif item_type in TOOL_CALL_ITEMS:
        name, text = _tool_call_text(item_type, payload)
        add("assistant", "tool_call", text, tool=name)
    elif item_type in TOOL_OUTPUT_ITEMS:
        add("tool", "tool_result", tool_output_text(payload.get("output")))
    elif item_type not in IGNORED_ITEMS:
        builder.skip_unknown(f"response_item/{item_type}")


def _tool_call_text(item_type: str, payload: dict[str, Any]) -> tuple[str, str]:
    if item_type == "local_shell_call":
        name, arguments = "local_shell", (payload.get("action") or {}).get("command")
    elif item_type == "web_search_call":
        name, arguments = "web_search", (payload.get("action") or {}).get("query")
    else:
        name = payload.get("name") if isinstance(payload.get("name"), str) else item_type
        arguments = payload.get("arguments", payload.get("input"))
        if isinstance(arguments, str):
            # function_call arguments are a JSON string; shown decoded so commands read as typed.
            with contextlib.suppress(json.JSONDecodeError):
                arguments = json.loads(arguments)
    rendered = render_tool_input(arguments) if arguments is not None else ""
    return name, f"{name}\n{rendered}" if rendered else name


def tool_output_text(output: Any) -> str:
    """``output`` is a string (sometimes JSON ``{"output": ..., "metadata": ...}``) or an object
    with ``content`` (a string or a list of text blocks)."""
    if isinstance(output, str):
        if output.startswith("{"):
            try:
                decoded = json.loads(output)
            except json.JSONDecodeError:
                return output
            if isinstance(decoded, dict) and isinstance(decoded.get("output"), str):
                return decoded["output"]
        return output
    if isinstance(output, dict):
        content = output.get("content", output.get("output"))
        return "\n".join(text for _, text in _block_texts(content))
    return ""
