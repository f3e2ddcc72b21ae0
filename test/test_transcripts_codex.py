"""Codex rollouts: units, prompt de-duplication, context injection, ids across archive moves, append."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tansaku.sources.transcripts import codex
from tansaku.sources.transcripts.model import ParseReport, ParseState

ROOT = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts" / "codex"
MAIN_ID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
MAIN = ROOT / "sessions" / "2025" / "12" / "08" / f"rollout-2025-12-08T00-37-46-{MAIN_ID}.jsonl"
ARCHIVED_ID = "0f8e2a4b-1c3d-4e5f-8a9b-0c1d2e3f4a5b"
ARCHIVED = ROOT / "archived_sessions" / f"rollout-2025-11-02T09-15-00-{ARCHIVED_ID}.jsonl"
EMPTY_ID = "1b2c3d4e-0000-4000-8000-000000000001"
EMPTY = ROOT / "sessions" / "2025" / "12" / "08" / f"rollout-2025-12-08T09-00-00-{EMPTY_ID}.jsonl"


def record(record_type: str, payload: dict) -> bytes:
    return (
        json.dumps({"timestamp": "2025-12-08T01:00:00Z", "type": record_type, "payload": payload}).encode()
        + b"\n"
    )


def user(text: str) -> bytes:
    return record(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
    )


def event(text: str) -> bytes:
    return record("event_msg", {"type": "user_message", "message": text})


def test_main_session_units():
    report = codex.parse(MAIN.read_bytes(), str(MAIN))
    assert [(t.id.removeprefix(MAIN_ID), t.role, t.kind) for t in report.turns] == [
        (":6#0", "user", "text"),
        (":8#0", "assistant", "thinking"),
        (":9", "assistant", "tool_call"),
        (":10", "tool", "tool_result"),
        (":12#0", "assistant", "text"),
        (":14", "user", "text"),
        (":16", "assistant", "tool_call"),
        (":17", "tool", "tool_result"),
        (":23#0", "user", "text"),
        (":25#0", "assistant", "text"),
    ]
    by_line = {t.line: t for t in report.turns}
    assert by_line[9].tool_name == "shell"
    assert by_line[9].text == "shell\ncommand: ls -la\nworkdir: /home/ann/proj"  # arguments decoded
    assert by_line[17].text.startswith("OPENAI_API_KEY=")  # output given as {"content": ...}


def test_injected_context_developer_messages_and_placeholders_are_not_turns():
    texts = " ".join(t.text for t in codex.parse(MAIN.read_bytes(), str(MAIN)).turns)
    for absent in ("AGENTS.md", "environment_context", "permissions instructions", "No response requested."):
        assert absent not in texts


def test_each_prompt_is_kept_once_in_either_order_but_a_repeated_question_is_a_new_run():
    report = codex.parse(MAIN.read_bytes(), str(MAIN))
    assert [(r.index, r.line, r.prompt) for r in report.runs] == [
        (1, 6, "Why does the index go stale?"),  # response_item first, event_msg twin dropped
        (2, 14, "请检查配置文件里的密钥"),  # event_msg first, response_item twin dropped
        (3, 23, "Why does the index go stale?"),  # asked again after answers: a real prompt
    ]
    assert sum(t.role == "user" for t in report.turns) == 3


def test_twin_with_different_text_is_a_second_prompt():
    data = user("first question") + event("a different question")
    assert [r.prompt for r in codex.parse(data, "/s/rollout-x.jsonl").runs] == [
        "first question",
        "a different question",
    ]


def test_twin_arriving_in_the_next_append_is_still_dropped():
    first = user("same prompt")
    report = codex.parse(first, "/s/rollout-x.jsonl")
    rest = codex.parse(
        event("same prompt"), "/s/rollout-x.jsonl", start_offset=len(first), start_line=1, state=report.state
    )
    assert rest.turns == () and rest.runs == ()


def test_session_facts():
    session = codex.parse(MAIN.read_bytes(), str(MAIN)).session
    assert session.id == MAIN_ID
    assert session.title == "Stale index"
    assert session.project == "/home/ann/proj"
    assert (session.first_timestamp, session.last_timestamp) == (
        "2025-12-08T00:37:46.102Z",
        "2025-12-08T00:45:03.000Z",
    )
    assert (session.run_count, session.turn_count) == (3, 10)


def test_bad_records_unknown_types_and_truncated_tail():
    data = MAIN.read_bytes()
    report = codex.parse(data, str(MAIN))
    assert [bad.line for bad in report.bad_records] == [18, 22]
    assert report.skipped_types == {"mystery_record": 1, "response_item/other_thing": 1}
    assert report.truncated_tail
    assert (report.end_offset, report.line_count) == (data.rindex(b"\n") + 1, 25)


def test_line_numbers_point_at_the_source_record():
    data = MAIN.read_bytes()
    lines = data.split(b"\n")
    for turn in codex.parse(data, str(MAIN)).turns:
        source = json.loads(lines[turn.line - 1])
        assert source["type"] in ("response_item", "event_msg")
        assert turn.text.split("\n")[0].split(" ")[0] in json.dumps(source, ensure_ascii=False), turn.id


def test_ids_survive_a_move_into_the_archive():
    data = ARCHIVED.read_bytes()
    archived = codex.parse(data, str(ARCHIVED))
    live_path = f"/home/ann/.codex/sessions/2025/11/02/{ARCHIVED.name}"
    live = codex.parse(data, live_path)
    assert [t.id for t in archived.turns] == [t.id for t in live.turns]
    assert archived.session.id == live.session.id == ARCHIVED_ID


def test_archived_session_tool_items_and_unterminated_complete_last_line():
    data = ARCHIVED.read_bytes()
    assert not data.endswith(b"\n")
    report = codex.parse(data, str(ARCHIVED))
    assert [(t.line, t.role, t.kind) for t in report.turns] == [
        (3, "user", "text"),
        (5, "assistant", "tool_call"),
        (6, "tool", "tool_result"),
        (7, "assistant", "text"),
    ]
    assert report.turns[1].tool_name == "apply_patch"
    assert report.turns[2].text == "Success. Updated the following files:\nM docs/index.md"
    assert (report.end_offset, report.line_count, report.truncated_tail) == (len(data), 7, False)
    assert report.state is not None and report.state.open_line
    # The newline arriving later closes line 7; the next record is line 8.
    rest = codex.parse(
        b"\n" + user("and the footer link?"),
        str(ARCHIVED),
        start_offset=report.end_offset,
        start_line=report.line_count,
        state=report.state,
    )
    assert [(t.line, t.run_index) for t in rest.turns] == [(8, 2)]


def test_session_id_from_the_file_name_without_session_meta():
    report = codex.parse(user("hello"), f"/s/rollout-2025-01-01T00-00-00-{ARCHIVED_ID.upper()}.jsonl")
    assert report.session.id == ARCHIVED_ID
    assert report.turns[0].id == f"{ARCHIVED_ID}:1#0"


def test_empty_file():
    report = codex.parse(EMPTY.read_bytes(), str(EMPTY))
    assert report.turns == () and report.bad_records == () and report.end_offset == 0
    assert report.session.id == EMPTY_ID


def parse_in_pieces(data: bytes, path: str, cuts: list[int]) -> list[ParseReport]:
    reports: list[ParseReport] = []
    offset, line, state = 0, 0, None
    for cut in [*sorted(cuts), len(data)]:
        cut = max(cut, offset)
        report = codex.parse(data[offset:cut], path, start_offset=offset, start_line=line, state=state)
        reports.append(report)
        assert report.state is not None
        offset, line = report.end_offset, report.line_count
        state = ParseState.from_dict(json.loads(json.dumps(report.state.as_dict())))
    return reports


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([MAIN, ARCHIVED]),
    st.lists(st.integers(min_value=0, max_value=MAIN.stat().st_size), max_size=3),
)
def test_append_split_anywhere_gives_the_same_units_as_a_whole_parse(path: Path, cuts: list[int]):
    data = path.read_bytes()
    whole = codex.parse(data, str(path))
    pieces = parse_in_pieces(data, str(path), cuts)
    assert [t for p in pieces for t in p.turns] == list(whole.turns)
    assert [r for p in pieces for r in p.runs] == list(whole.runs)
    assert [b for p in pieces for b in p.bad_records] == list(whole.bad_records)
    assert pieces[-1].session == whole.session
    assert (pieces[-1].end_offset, pieces[-1].line_count) == (whole.end_offset, whole.line_count)
