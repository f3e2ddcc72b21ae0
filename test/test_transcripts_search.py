"""Searching transcripts by level with filters, and reading sessions back, in every format."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.both_backends

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
MAIN_ID = "5b1f0c2e-7d4a-4c1b-9e3f-2a6d8c0b1e47"
CODEX_ID = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
FORMATS = ("cli", "json", "csv", "md", "xml", "files")
Cli = Callable[..., Any]


def ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json() if result.stdout.lstrip().startswith("{") else result.stdout


@pytest.fixture
def agents(cli: Cli, tmp_path: Path) -> Path:
    """Both fixture trees as collections `claude` and `codex`, plus a files collection."""
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "stale.md").write_text("# Stale index\n\nWhen the index goes stale, run update.\n")
    ok(cli("collection", "add", "--type", "claude", tmp_path / "claude"))
    ok(cli("collection", "add", "--type", "codex", tmp_path / "codex"))
    ok(cli("collection", "add", notes, "--name", "notes"))
    return tmp_path


def results(cli: Cli, *args: str) -> list[dict[str, Any]]:
    return ok(cli("search", *args, "--all", "--json"))["results"]


def stable(text: str, root: Path) -> str:
    """Output without what changes from run to run: the temporary folder, timings."""
    text = text.replace(str(root), "/TMP")
    return re.sub(r'"took_ms": [0-9.]+', '"took_ms": 0', text)


def test_turn_level_is_the_default_and_points_at_the_source_line(cli: Cli, agents: Path):
    hits = results(cli, "rename", "folder", "-c", "claude")
    assert hits, "the Claude prompt about renaming a folder"
    best = hits[0]
    assert best["virtual_path"] == f"tansaku://claude/-home-ann-proj/{MAIN_ID}.jsonl:5"
    t = best["transcript"]
    assert (t["level"], t["role"], t["kind"], t["turn_id"], t["line"]) == ("turn", "user", "text", "u1", 5)
    assert t["project"] == "/home/ann/proj" and t["session_id"] == MAIN_ID
    assert t["session_title"] == "Stale index hunt" and t["run_index"] == 1
    assert t["run_prompt"].startswith("Why does the index go stale after I rename a folder?")
    assert t["timestamp"] == "2025-11-30T11:09:33.123Z"


def test_levels_aggregate_matches(cli: Cli, agents: Path):
    turns = results(cli, "index", "--level", "turn", "-c", "claude", "-c", "codex")
    sessions = results(cli, "index", "--level", "session", "-c", "claude", "-c", "codex")
    projects = results(cli, "index", "--level", "project", "-c", "claude", "-c", "codex")
    runs = results(cli, "index", "--level", "run", "-c", "claude", "-c", "codex")
    assert len(turns) >= len(runs) >= len(sessions) >= len(projects) >= 1
    assert sum(s["transcript"]["matches"] for s in sessions) == len(turns)
    assert len({s["transcript"]["session_id"] for s in sessions}) == len(sessions)
    by_project = {p["transcript"]["project"]: p["transcript"] for p in projects}
    assert set(by_project) == {"/home/ann/proj", "/home/ann/site"}
    # Claude and Codex sessions of the same working directory are one project.
    assert by_project["/home/ann/proj"]["sessions"] >= 2
    assert all(p["transcript"]["session_id"] is None for p in projects)
    session = sessions[0]["transcript"]
    assert session["first_timestamp"] <= session["last_timestamp"]
    assert session["role"] is None and session["run_index"] is None


def test_role_time_and_project_filters(cli: Cli, agents: Path):
    scope = ("-c", "claude", "-c", "codex")
    everyone = results(cli, "index", *scope)
    users = results(cli, "index", "--role", "user", *scope)
    assert users and {h["transcript"]["role"] for h in users} == {"user"}
    assert len(users) < len(everyone)
    both = results(cli, "index", "--role", "user", "--role", "tool", *scope)
    assert {h["transcript"]["role"] for h in both} <= {"user", "tool"} and len(both) >= len(users)
    december = results(cli, "index", "--since", "2025-12-01", *scope)
    assert december and all(h["transcript"]["timestamp"] >= "2025-12" for h in december)
    november = results(cli, "index", "--until", "2025-11-30", *scope)
    assert november and all(h["transcript"]["timestamp"] < "2025-12" for h in november)
    assert results(cli, "index", "--since", "7d", *scope) == []  # the fixtures are older than a week
    site = results(cli, "index", "--project", "site", *scope)
    assert site and {h["transcript"]["project"] for h in site} == {"/home/ann/site"}
    bad = cli("search", "index", "--since", "last tuesday", "--json")
    assert bad.exit_code == 2 and bad.error()["code"] == "USAGE"


def test_files_and_transcripts_are_searched_together(cli: Cli, agents: Path):
    hits = results(cli, "stale")
    collections = {h["collection"] for h in hits}
    assert collections == {"claude", "codex", "notes"}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    note = next(h for h in hits if h["collection"] == "notes")
    assert "transcript" not in note


def test_chinese_prompts_are_found_by_two_character_words(cli: Cli, agents: Path):
    (hit,) = results(cli, "索引", "-c", "claude")
    assert hit["transcript"]["turn_id"] == "u6#0" and hit["transcript"]["line"] == 14
    assert [h["transcript"]["line"] for h in results(cli, "密钥", "--role", "user")] == [14]


@pytest.mark.sqlite_only("removes the index file (test_postgres_backend.py checks a missing database)")
def test_a_missing_index_is_an_error_never_zero_hits(cli: Cli, tmp_path: Path, index_path: Path):
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    ok(cli("collection", "add", "--type", "claude", tmp_path / "claude"))
    index_path.unlink()
    result = cli("search", "index", "--json")
    assert result.exit_code == 3 and result.error()["code"] == "INDEX_MISSING"


@pytest.mark.parametrize("fmt", FORMATS)
def test_search_formats(cli: Cli, agents: Path, fmt: str, snapshot: Any):
    result = cli("search", "watcher", "-c", "claude", "-c", "codex", "-n", "3", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    assert stable(result.stdout, agents) == snapshot


@pytest.mark.parametrize("fmt", ("cli", "json", "csv"))
def test_search_formats_at_session_level(cli: Cli, agents: Path, fmt: str, snapshot: Any):
    result = cli("search", "index", "--level", "session", "-c", "codex", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    assert stable(result.stdout, agents) == snapshot


# --- session read ------------------------------------------------------------------------------


def test_session_read_returns_messages_in_file_order(cli: Cli, agents: Path):
    data = ok(cli("session", "read", MAIN_ID, "--json"))
    assert data["session_id"] == MAIN_ID and data["title"] == "Stale index hunt"
    assert data["project"] == "/home/ann/proj" and data["source_format"] == "claude"
    lines = [m["line"] for m in data["messages"]]
    assert lines == sorted(lines) and len(lines) == data["total_turns"]
    assert data["messages"][0] == {
        "turn_id": "u1",
        "line": 5,
        "role": "user",
        "kind": "text",
        "timestamp": "2025-11-30T11:09:33.123Z",
        "run_index": 1,
        "tool_name": None,
        "text": "Why does the index go stale after I rename a folder?",
    }
    assert data["truncated"] is False and data["next_line"] is None
    assert data["runs"][0]["index"] == 1


def test_session_read_bounds(cli: Cli, agents: Path):
    first = ok(cli("session", "read", MAIN_ID, "--limit", "3", "--json"))
    # At most 3, ending before a source line whose blocks would not all fit (line 6 holds three).
    assert [m["line"] for m in first["messages"]] == [5] and first["truncated"] is True
    rest = ok(cli("session", "read", MAIN_ID, "--from-line", str(first["next_line"]), "--json"))
    assert rest["messages"][0]["line"] == first["next_line"]
    assert (
        rest["messages"][-1]["line"] == ok(cli("session", "read", MAIN_ID, "--json"))["messages"][-1]["line"]
    )
    run2 = ok(cli("session", "read", MAIN_ID, "--run", "2", "--json"))
    assert run2["messages"] and {m["run_index"] for m in run2["messages"]} == {2}
    small = ok(cli("session", "read", MAIN_ID, "--max-bytes", "60", "--json"))
    used = sum(len(m["text"].encode()) for m in small["messages"])
    assert 0 < used <= 60 and small["truncated"] is True  # whole messages only, never cut
    none = ok(cli("session", "read", MAIN_ID, "--max-bytes", "5", "--json"))
    assert none["messages"] == [] and none["warnings"][0]["code"] == "MESSAGE_TOO_LARGE"


def test_session_read_by_path_and_prefix_and_misses(cli: Cli, agents: Path):
    by_path = ok(cli("session", "read", f"tansaku://claude/-home-ann-proj/{MAIN_ID}.jsonl:5", "--json"))
    assert by_path["session_id"] == MAIN_ID
    assert ok(cli("session", "read", "5b1f", "--json"))["session_id"] == MAIN_ID  # not its sub-agent
    agent = ok(cli("session", "read", f"{MAIN_ID}/agent-3f2a9c1d", "--json"))
    assert agent["parent_session_id"] == MAIN_ID
    missing = cli("session", "read", "nope", "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "DOC_NOT_FOUND"


@pytest.mark.parametrize("fmt", FORMATS)
def test_session_read_formats(cli: Cli, agents: Path, fmt: str, snapshot: Any):
    result = cli("session", "read", CODEX_ID, "--limit", "4", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    assert stable(result.stdout, agents) == snapshot
