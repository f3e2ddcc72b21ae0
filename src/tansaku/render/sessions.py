"""Every output format for `tansaku session read`: a session's messages in file order."""

from __future__ import annotations

import csv
import io

from tansaku.render.jsonfmt import dumps, to_data
from tansaku.render.markdown import code_span, escape, fence
from tansaku.render.shared import RenderOptions, shown_path
from tansaku.render.terminal import INDENT, clean, paint, warning_lines
from tansaku.render.transcripts import short_prompt, turn_label, when
from tansaku.render.xmlfmt import attrs, element
from tansaku.types import SessionMessage, SessionRead

CSV_COLUMNS = ("session_id", "turn_id", "line", "role", "kind", "tool_name", "timestamp", "run_index", "text")


def render(result: SessionRead, fmt: str, opts: RenderOptions) -> str:
    return {"cli": _cli, "json": _json, "csv": _csv, "md": _md, "xml": _xml, "files": _files}[fmt](
        result, opts
    )


def _label(message: SessionMessage) -> str:
    return turn_label(message.role, message.kind, message.tool_name)


def _header(result: SessionRead) -> list[str]:
    lines = [f"project {result.project or '?'} · session {result.session_id} · {result.source_format}"]
    if result.parent_session_id:
        lines.append(f"sub-agent of session {result.parent_session_id}")
    span = f"{when(result.first_timestamp)} – {when(result.last_timestamp)}"
    shown = f"{len(result.messages)} of {result.total_turns} messages" + (" (raw)" if result.raw else "")
    if result.focus_line is not None:
        shown += f" around line {result.focus_line}"
    lines.append(f"{shown} · {span}")
    return lines


def _footer(result: SessionRead) -> str | None:
    if not result.truncated:
        return None
    if result.focus_line is not None:
        return f"[more: tansaku session read {result.session_id} --from-line {result.next_line}]"
    return (
        f"[more: continue with --from-line {result.next_line} (--limit and --max-bytes {result.max_bytes})]"
    )


def _focused(result: SessionRead, message: SessionMessage) -> bool:
    return message.line == result.focus_line


def _prompts(result: SessionRead) -> dict[int, str]:
    return dict(result.runs)


def _cli(result: SessionRead, opts: RenderOptions) -> str:
    lines = [paint(clean(shown_path(result, opts)), "path", opts)]
    if result.title:
        lines.append(INDENT + paint(clean(result.title), "title", opts))
    lines += [INDENT + clean(line) for line in _header(result)]
    prompts, run = _prompts(result), None
    for message in result.messages:
        if message.run_index != run:
            run = message.run_index
            prompt = short_prompt(prompts.get(run, ""))
            lines += ["", f"── run {run}" + (f": {clean(prompt)}" if prompt else "")]
        mark = "▶ " if _focused(result, message) else ""
        lines.append(
            f"{mark}[line {message.line}] {_label(message)} · {when(message.timestamp)}"
            f" · {clean(message.turn_id)}"
        )
        lines += [(INDENT + clean(text)).rstrip() for text in message.text.split("\n")]
    footer = _footer(result)
    tail = [*([footer] if footer else []), *warning_lines(result.warnings)]
    if tail:
        lines += ["", *tail]
    return "\n".join(lines) + "\n"


def _json(result: SessionRead, opts: RenderOptions) -> str:
    data = to_data(result)
    data["runs"] = [{"index": index, "prompt": prompt} for index, prompt in result.runs]
    return dumps(data)


def _csv(result: SessionRead, opts: RenderOptions) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    # `get` on a turn adds a column: whether the row is the turn asked for or its context.
    focus = result.focus_line is not None
    writer.writerow([*CSV_COLUMNS, *(["focus"] if focus else [])])
    writer.writerows(
        [
            result.session_id,
            m.turn_id,
            m.line,
            m.role,
            m.kind,
            m.tool_name or "",
            m.timestamp or "",
            m.run_index,
            m.text,
            *([str(_focused(result, m)).lower()] if focus else []),
        ]
        for m in result.messages
    )
    return buffer.getvalue()


def _md(result: SessionRead, opts: RenderOptions) -> str:
    blocks = [f"# {escape(result.title) if result.title else code_span(result.session_id)}"]
    blocks.append(
        "  \n".join([code_span(shown_path(result, opts)), *(escape(line) for line in _header(result))])
    )
    prompts, run = _prompts(result), None
    for message in result.messages:
        if message.run_index != run:
            run = message.run_index
            prompt = short_prompt(prompts.get(run, ""))
            blocks.append(f"## Run {run}" + (f": {escape(prompt)}" if prompt else ""))
        mark = "▶ " if _focused(result, message) else ""
        blocks.append(
            f"{mark}**{escape(_label(message))}** · line {message.line} · {escape(when(message.timestamp))}"
            f" · {code_span(message.turn_id)}"
        )
        blocks.append(fence(message.text.split("\n")))
    footer = _footer(result)
    if footer:
        blocks.append(escape(footer))
    blocks += [f"- warning \\[{w.code}\\]: {escape(w.message)}" for w in result.warnings]
    return "\n\n".join(blocks) + "\n"


def _xml(result: SessionRead, opts: RenderOptions) -> str:
    head = attrs(
        collection=result.collection,
        session_id=result.session_id,
        path=result.path,
        virtual_path=result.virtual_path,
        disk_path=result.disk_path,
        project=result.project,
        source_format=result.source_format,
        parent_session_id=result.parent_session_id,
        total_turns=result.total_turns,
        truncated=result.truncated,
        next_line=result.next_line,
        raw=result.raw,
        focus_line=result.focus_line,
    )
    body = [element("title", result.title or "")]
    body += [element("run", prompt, index=index) for index, prompt in result.runs]
    body += [
        element(
            "message",
            m.text,
            turn_id=m.turn_id,
            line=m.line,
            role=m.role,
            kind=m.kind,
            tool_name=m.tool_name,
            timestamp=m.timestamp,
            run_index=m.run_index,
            focus=True if _focused(result, m) else None,
        )
        for m in result.messages
    ]
    body += [element("warning", w.message, code=w.code) for w in result.warnings]
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<session{head}>",
        *("  " + b for b in body),
        "</session>",
    ]
    return "\n".join(lines) + "\n"


def _files(result: SessionRead, opts: RenderOptions) -> str:
    # One message per line, PATH:LINE (where an editor opens it), as search's files format does.
    return "".join(f"{clean(shown_path(result, opts))}:{m.line}\n" for m in result.messages)
