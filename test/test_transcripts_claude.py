"""Claude Code transcripts: units, ids, line numbers, bad records and append-mode reading."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tansaku.sources.transcripts import claude, codex
from tansaku.sources.transcripts.model import ParseReport, ParseState

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts" / "claude" / "-home-ann-proj"
MAIN_ID = "5b1f0c2e-7d4a-4c1b-9e3f-2a6d8c0b1e47"
MAIN = FIXTURES / f"{MAIN_ID}.jsonl"
AGENT = FIXTURES / "agent-3f2a9c1d.jsonl"
EMPTY = FIXTURES / "00000000-0000-4000-8000-000000000000.jsonl"


def parse_in_pieces(data: bytes, path: str, cuts: list[int]) -> list[ParseReport]:
    """Parse as append mode would: each piece is what was on disk at a cut, read from the offset
    the previous read stopped at, with the state stored as JSON in between."""
    reports: list[ParseReport] = []
    offset, line, state = 0, 0, None
    for cut in [*sorted(cuts), len(data)]:
        cut = max(cut, offset)
        report = claude.parse(data[offset:cut], path, start_offset=offset, start_line=line, state=state)
        reports.append(report)
        assert report.state is not None
        offset, line = report.end_offset, report.line_count
        state = ParseState.from_dict(json.loads(json.dumps(report.state.as_dict())))
    return reports


def test_main_session_units_roles_and_kinds():
    report = claude.parse(MAIN.read_bytes(), str(MAIN))
    assert [(t.id, t.role, t.kind) for t in report.turns] == [
        ("u1", "user", "text"),
        ("a1#0", "assistant", "thinking"),
        ("a1#1", "assistant", "text"),
        ("a1#2", "assistant", "tool_call"),
        ("u2#0", "tool", "tool_result"),
        ("a3#0", "assistant", "tool_call"),
        ("u4#0", "tool", "tool_result"),
        ("u6#0", "user", "text"),
        ("a6#0", "assistant", "text"),
        ("u9", "user", "text"),
    ]
    tool_call = report.turns[3]
    assert tool_call.tool_name == "Bash"
    assert tool_call.text == "Bash\ncommand: ls -la\ndescription: List files"
    assert all(t.session_id == MAIN_ID and t.source_path == str(MAIN) for t in report.turns)


def test_not_turns_meta_injected_placeholder_compact_summary_interrupt():
    texts = " ".join(t.text for t in claude.parse(MAIN.read_bytes(), str(MAIN)).turns)
    for absent in (
        "local-command-caveat",
        "/clear",
        "No response requested.",
        "system-reminder",
        "being continued from a previous conversation",
        "Request interrupted",
    ):
        assert absent not in texts


def test_runs_start_at_real_prompts_and_turns_carry_them():
    report = claude.parse(MAIN.read_bytes(), str(MAIN))
    assert [(r.index, r.line, r.prompt) for r in report.runs] == [
        (1, 5, "Why does the index go stale after I rename a folder?"),
        (2, 14, "为什么重命名文件夹以后索引会过期？请用中文回答。"),
        (3, 20, "Thanks, that fixed it."),
    ]
    assert report.runs[1].id == f"{MAIN_ID}/run/2"
    by_id = {t.id: t for t in report.turns}
    assert (by_id["u4#0"].run_index, by_id["u4#0"].run_prompt) == (1, report.runs[0].prompt)
    assert by_id["a6#0"].run_index == 2
    assert by_id["a6#0"].text == "因为文件夹被移动后，监视器漏掉了重命名事件。"


def test_line_numbers_point_at_the_record_that_holds_the_turn():
    data = MAIN.read_bytes()
    lines = data.split(b"\n")
    for turn in claude.parse(data, str(MAIN)).turns:
        uuid = turn.id.split("#")[0]
        assert f'"uuid":"{uuid}"'.encode() in lines[turn.line - 1], turn.id


def test_session_title_project_timestamps():
    session = claude.parse(MAIN.read_bytes(), str(MAIN)).session
    assert session.id == MAIN_ID
    assert session.title == "Stale index hunt"  # custom-title beats the summary
    assert session.project == "/home/ann/proj"
    assert session.parent_session_id is None
    # Earliest and latest, although the compaction summary (line 17) goes back in time.
    assert (session.first_timestamp, session.last_timestamp) == (
        "2025-11-30T11:09:30.000Z",
        "2025-11-30T12:01:00.000Z",
    )
    assert (session.run_count, session.turn_count) == (3, 10)


def test_summary_is_the_title_without_custom_title():
    data = b"".join(line + b"\n" for line in MAIN.read_bytes().split(b"\n") if b"custom-title" not in line)
    assert claude.parse(data, str(MAIN)).session.title == "Debugging a stale index"


def test_bad_records_and_unknown_types_are_counted_and_the_rest_parsed():
    report = claude.parse(MAIN.read_bytes(), str(MAIN))
    assert [bad.line for bad in report.bad_records] == [9, 12]
    assert "invalid JSON" in report.bad_records[0].reason
    assert "invalid UTF-8" in report.bad_records[1].reason
    assert report.skipped_types == {"queue-operation": 1}
    assert report.partial_source
    message = report.partial_source_message()
    assert message is not None and str(MAIN) in message and "9, 12" in message


def test_truncated_last_line_is_left_for_next_time_and_read_once_complete():
    data = MAIN.read_bytes()
    report = claude.parse(data, str(MAIN))
    last_line_start = data.rindex(b"\n") + 1
    assert report.truncated_tail
    assert (report.end_offset, report.line_count) == (last_line_start, 20)
    assert not any(t.id.startswith("a9") for t in report.turns)
    grown = (
        data
        + b'ant","content":[{"type":"text","text":"Glad it works."}]},"timestamp":"2025-11-30T12:02:00Z"}\n'
    )
    rest = claude.parse(
        grown[report.end_offset :],
        str(MAIN),
        start_offset=report.end_offset,
        start_line=report.line_count,
        state=report.state,
    )
    assert [(t.id, t.line, t.run_index, t.run_prompt) for t in rest.turns] == [
        ("a9#0", 21, 3, "Thanks, that fixed it.")
    ]
    assert rest.runs == ()
    assert not rest.truncated_tail and rest.end_offset == len(grown)
    assert rest.session.last_timestamp == "2025-11-30T12:02:00Z"
    assert rest.session.turn_count == 11


def test_reparse_gives_identical_units():
    data = MAIN.read_bytes()
    assert claude.parse(data, str(MAIN)) == claude.parse(data, str(MAIN))


def whole_vs_pieces(data: bytes, path: str, cuts: list[int]) -> None:
    whole = claude.parse(data, path)
    pieces = parse_in_pieces(data, path, cuts)
    assert [t for p in pieces for t in p.turns] == list(whole.turns)
    assert [r for p in pieces for r in p.runs] == list(whole.runs)
    assert [b for p in pieces for b in p.bad_records] == list(whole.bad_records)
    skipped: dict[str, int] = {}
    for piece in pieces:
        for kind, count in piece.skipped_types.items():
            skipped[kind] = skipped.get(kind, 0) + count
    assert skipped == whole.skipped_types
    last = pieces[-1]
    assert last.session == whole.session
    assert (last.end_offset, last.line_count, last.truncated_tail) == (
        whole.end_offset,
        whole.line_count,
        whole.truncated_tail,
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=MAIN.stat().st_size), max_size=3))
def test_append_split_anywhere_gives_the_same_units_as_a_whole_parse(cuts: list[int]):
    whole_vs_pieces(MAIN.read_bytes(), str(MAIN), cuts)


def test_append_split_at_every_line_end_and_just_before_each_newline():
    data = MAIN.read_bytes()
    newlines = [i for i, byte in enumerate(data) if byte == ord("\n")]
    for cut in {*newlines, *(i + 1 for i in newlines)}:
        whole_vs_pieces(data, str(MAIN), [cut])


def test_a_line_that_grows_after_it_was_read_is_a_bad_record_not_a_new_line():
    first = b'{"type":"user","uuid":"x1","sessionId":"S","message":{"role":"user","content":"hi there"}}'
    report = claude.parse(first, "/p/S.jsonl")
    assert [t.id for t in report.turns] == ["x1"] and report.state and report.state.open_line
    more = b'{"junk":1}\n{"type":"user","uuid":"x2","message":{"role":"user","content":"next"}}\n'
    rest = claude.parse(more, "/p/S.jsonl", start_offset=len(first), start_line=1, state=report.state)
    assert [bad.line for bad in rest.bad_records] == [1]
    assert [(t.id, t.line) for t in rest.turns] == [("x2", 2)]


def test_sub_agent_file_is_its_own_session_linked_to_the_parent():
    report = claude.parse(AGENT.read_bytes(), str(AGENT))
    session = report.session
    assert session.id == f"{MAIN_ID}/agent-3f2a9c1d"
    assert session.parent_session_id == MAIN_ID
    assert [(t.id, t.role, t.kind) for t in report.turns] == [
        ("s-u1", "user", "text"),
        ("s-a1#0", "assistant", "tool_call"),
        ("s-u2#0", "tool", "tool_result"),
        ("s-a2#0", "assistant", "text"),
    ]
    assert report.runs[0].prompt == "Search the repository for the file watcher code."
    assert all(t.session_id == session.id for t in report.turns)


def test_sub_agent_in_subagents_folder_takes_the_parent_from_the_folder():
    path = f"/home/ann/.claude/projects/-home-ann-proj/{MAIN_ID}/subagents/agent-77.jsonl"
    line = b'{"type":"user","uuid":"z1","isSidechain":true,"message":{"role":"user","content":"Go."}}\n'
    session = claude.parse(line, path).session
    assert (session.id, session.parent_session_id) == (f"{MAIN_ID}/agent-77", MAIN_ID)


def test_empty_file():
    report = claude.parse(EMPTY.read_bytes(), str(EMPTY))
    assert report.turns == () and report.runs == () and report.bad_records == ()
    assert (report.end_offset, report.line_count, report.truncated_tail) == (0, 0, False)
    assert report.session.id == EMPTY.stem and report.session.title is None


def test_turns_without_uuid_use_session_and_line():
    line = b'\n{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"ok"}]}}\n'
    report = claude.parse(line, "/p/S1.jsonl")
    assert [(t.id, t.line) for t in report.turns] == [("S1:2#0", 2)]
    assert report.turns[0].run_index == 0 and report.turns[0].run_prompt == ""


def test_state_of_another_format_is_refused():
    state = codex.parse(b"", "/x/rollout-a.jsonl").state
    with pytest.raises(ValueError, match="codex"):
        claude.parse(b"", "/p/S.jsonl", state=state)
