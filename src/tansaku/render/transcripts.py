"""What every format shows of a transcript hit (``Hit.transcript``): shared by the renderers."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tansaku.types import TranscriptHit

PROMPT_CHARS = 80
# Extra CSV columns (and XML attributes) of a search whose results include transcript hits.
COLUMNS = (
    "level",
    "project",
    "session_id",
    "session_title",
    "run_index",
    "run_prompt",
    "role",
    "kind",
    "timestamp",
    "source_line",
    "matches",
    "first_timestamp",
    "last_timestamp",
)


def when(iso: str | None) -> str:
    """``2025-11-30T11:09:33.123Z`` -> ``2025-11-30 11:09:33`` (the time as the tool wrote it)."""
    if not iso:
        return "?"
    return iso[:19].replace("T", " ") if len(iso) >= 19 and iso[10] == "T" else iso


def turn_label(role: str, kind: str | None, tool_name: str | None = None) -> str:
    """What a turn is, said once: ``user``, ``assistant thinking``, ``assistant tool call (Bash)``,
    ``tool result (Bash)``; a tool's result is not "tool tool result"."""
    if kind in (None, "text"):
        return role
    words = kind.replace("_", " ")
    label = words if words.split()[0] == role else f"{role} {words}"
    return f"{label} ({tool_name})" if tool_name else label


def short_prompt(prompt: str | None) -> str:
    first = (prompt or "").strip().splitlines()
    text = first[0] if first else ""
    return text if len(text) <= PROMPT_CHARS else text[: PROMPT_CHARS - 1] + "…"


def span(t: TranscriptHit) -> str:
    count = "1 matching turn" if t.matches == 1 else f"{t.matches} matching turns"
    if t.level == "project":
        count += f" in {t.sessions} session" + ("" if t.sessions == 1 else "s")
    if t.first_timestamp and t.last_timestamp and t.first_timestamp != t.last_timestamp:
        count += f", {when(t.first_timestamp)} – {when(t.last_timestamp)}"
    return count


def summary_lines(t: TranscriptHit) -> list[str]:
    """Up to three lines: what the best hit is (role, time, line, matches), its run, where it is."""
    first: list[str] = []
    if t.role:
        first.append(turn_label(t.role, t.kind))
    first.append(when(t.timestamp))
    if t.line is not None:
        first.append(f"line {t.line}")
    if t.level != "turn" or t.matches > 1:
        first.append(span(t))
    lines = [" · ".join(first)]
    if t.run_index is not None:
        prompt = short_prompt(t.run_prompt)
        lines.append(f"run {t.run_index}: {prompt}" if prompt else f"run {t.run_index}")
    where = [f"project {t.project or '?'}"]
    if t.session_id:
        where.append(f"session {t.session_id}")
    lines.append(" · ".join(where))
    return lines


def fields(t: TranscriptHit) -> dict[str, object]:
    """The values of COLUMNS, in order (None for what the level leaves out)."""
    return {
        "level": t.level,
        "project": t.project,
        "session_id": t.session_id,
        "session_title": t.session_title,
        "run_index": t.run_index,
        "run_prompt": t.run_prompt,
        "role": t.role,
        "kind": t.kind,
        "timestamp": t.timestamp,
        "source_line": t.line,
        "matches": t.matches,
        "first_timestamp": t.first_timestamp,
        "last_timestamp": t.last_timestamp,
    }
