"""`session read` says what each turn is once: "tool result (Bash)", never "tool tool result"; a
result is named after its call only when the calls before it leave no doubt."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.both_backends

SESSION_ID = "6c0ffee0-1111-4222-8333-444455556666"
Cli = Callable[..., Any]


def _record(kind: str, uuid: str, line: int, content: list[dict[str, Any]] | str) -> str:
    return json.dumps(
        {
            "type": kind,
            "uuid": uuid,
            "parentUuid": None,
            "isSidechain": False,
            "cwd": "/home/ann/proj",
            "sessionId": SESSION_ID,
            "timestamp": f"2025-11-30T11:10:{line:02d}.000Z",
            "message": {"role": kind, "content": content},
        }
    )


def _call(tool_id: str, name: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": {"command": command}}


def _result(tool_id: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": tool_id, "content": text}


# Line by line: a prompt; one Bash call and its result; two Bash calls and their two results; a
# Bash and a Read call together and their results (whose is whose is not in the index).
LINES = [
    _record("user", "u1", 1, "Why is the build slow?"),
    _record("assistant", "a1", 2, [{"type": "text", "text": "Let me look."}, _call("t1", "Bash", "ls")]),
    _record("user", "u2", 3, [_result("t1", "Makefile src")]),
    _record("assistant", "a2", 4, [_call("t2", "Bash", "make -n"), _call("t3", "Bash", "nproc")]),
    _record("user", "u3", 5, [_result("t2", "cc -O2 main.c")]),
    _record("user", "u4", 6, [_result("t3", "2")]),
    _record("assistant", "a3", 7, [_call("t4", "Bash", "make"), _call("t5", "Read", "Makefile")]),
    _record("user", "u5", 8, [_result("t4", "done in 40 s")]),
    _record("user", "u6", 9, [_result("t5", "all: main")]),
]


@pytest.fixture
def session(cli: Cli, tmp_path: Path) -> Path:
    folder = tmp_path / "claude" / "-home-ann-proj"
    folder.mkdir(parents=True)
    (folder / f"{SESSION_ID}.jsonl").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    result = cli("collection", "add", "--type", "claude", tmp_path / "claude")
    assert result.exit_code == 0, result.stderr
    return folder


def _read(cli: Cli, *options: str) -> Any:
    result = cli("session", "read", SESSION_ID, *options)
    assert result.exit_code == 0, result.stderr
    return result


def test_tool_output_is_labelled_once_with_the_tool_it_answers(cli: Cli, session: Path):
    text = _read(cli).stdout
    assert "tool tool" not in text
    assert "[line 3] tool result (Bash) ·" in text
    assert "[line 2] assistant tool call (Bash) ·" in text
    assert "[line 1] user ·" in text
    markdown = _read(cli, "--md").stdout
    assert "**tool result (Bash)** · line 3" in markdown and "tool tool" not in markdown


def test_a_result_is_named_only_when_its_batch_of_calls_names_one_tool(cli: Cli, session: Path):
    messages = _read(cli, "--json").json()["messages"]
    results = {m["line"]: m["tool_name"] for m in messages if m["kind"] == "tool_result"}
    # Two Bash calls: both results are Bash's. Bash and Read together: neither is named.
    assert results == {3: "Bash", 5: "Bash", 6: "Bash", 8: None, 9: None}
    text = _read(cli).stdout
    assert "[line 8] tool result ·" in text and "[line 9] tool result ·" in text


def test_a_page_that_starts_among_results_looks_back_for_their_call(cli: Cli, session: Path):
    messages = _read(cli, "--from-line", "6", "--json").json()["messages"]
    assert [(m["line"], m["tool_name"]) for m in messages[:1]] == [(6, "Bash")]
    turn = cli("get", f"tansaku://claude/-home-ann-proj/{SESSION_ID}.jsonl:6", "-C", "0", "--json")
    assert turn.exit_code == 0, turn.stderr
    assert [(m["line"], m["tool_name"]) for m in turn.json()["messages"]] == [(6, "Bash")]


def test_a_search_hit_on_tool_output_is_labelled_once(cli: Cli, session: Path):
    found = cli("search", "cc -O2", "--level", "turn")
    assert found.exit_code == 0, found.stderr
    labels = [line.strip().split(" · ")[0] for line in found.stdout.splitlines() if " · line " in line]
    assert labels == ["tool result"], found.stdout
