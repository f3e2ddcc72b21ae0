"""`vsearch` on transcripts: turns by their best chunk, grouped to the level by the rule keyword
search uses, with the same filters; the real MiniLM model embeds the fixture sessions."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .models_fixture import requires_llama, requires_minilm

pytestmark = [requires_llama, requires_minilm, pytest.mark.both_backends]

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
MAIN_ID = "5b1f0c2e-7d4a-4c1b-9e3f-2a6d8c0b1e47"
QUERY = "renaming a directory leaves the index out of date"
Cli = Callable[..., Any]


def ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json() if result.stdout.lstrip().startswith("{") else result.stdout


@pytest.fixture
def embedded(cli: Cli, model: Path, tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "stale.md").write_text(
        "# Stale index\n\nWhen a renamed folder leaves the index stale, run update.\n"
    )
    ok(cli("collection", "add", "--type", "claude", tmp_path / "claude"))
    ok(cli("collection", "add", "--type", "codex", tmp_path / "codex"))
    ok(cli("collection", "add", notes, "--name", "notes"))
    ok(cli("embed", "--json"))
    return tmp_path


def hits(cli: Cli, *args: str) -> list[dict[str, Any]]:
    return ok(cli("vsearch", QUERY, *args, "--all", "--min-score", "0.2", "--json"))["results"]


SCOPE = ("-c", "claude", "-c", "codex")


def test_turn_level_is_the_default_and_points_at_the_source_line(cli: Cli, embedded: Path):
    best = hits(cli, *SCOPE)[0]
    assert best["virtual_path"] == f"tansaku://claude/-home-ann-proj/{MAIN_ID}.jsonl:5"
    t = best["transcript"]
    assert (t["level"], t["role"], t["turn_id"], t["line"]) == ("turn", "user", "u1", 5)
    assert t["run_prompt"].startswith("Why does the index go stale after I rename a folder?")


def test_levels_group_the_turns_by_the_keyword_rule(cli: Cli, embedded: Path):
    turns = hits(cli, *SCOPE)
    sessions = hits(cli, "--level", "session", *SCOPE)
    runs = hits(cli, "--level", "run", *SCOPE)
    projects = hits(cli, "--level", "project", *SCOPE)
    assert len(turns) >= len(runs) >= len(sessions) >= len(projects) >= 1
    # Every matching turn is counted once, in its session.
    assert sum(s["transcript"]["matches"] for s in sessions) == len(turns)
    for session in sessions:
        mine = [h for h in turns if h["path"] == session["path"]]
        # A session is represented by its best turn, with that turn's score and line.
        assert session["score"] == mine[0]["score"]
        assert session["transcript"]["line"] == mine[0]["transcript"]["line"]
        assert session["virtual_path"] == mine[0]["virtual_path"].rsplit(":", 1)[0]
        assert session["transcript"]["first_timestamp"] <= session["transcript"]["last_timestamp"]
    assert {p["transcript"]["project"] for p in projects} <= {"/home/ann/proj", "/home/ann/site"}
    assert all(p["transcript"]["session_id"] is None for p in projects)


def test_filters(cli: Cli, embedded: Path):
    users = hits(cli, "--role", "user", *SCOPE)
    assert users and {h["transcript"]["role"] for h in users} == {"user"}
    december = hits(cli, "--since", "2025-12-01", *SCOPE)
    assert december and all(h["transcript"]["timestamp"] >= "2025-12" for h in december)
    assert hits(cli, "--since", "7d", *SCOPE) == []
    site = hits(cli, "--project", "site", *SCOPE)
    assert {h["transcript"]["project"] for h in site} <= {"/home/ann/site"}
    bad = cli("vsearch", QUERY, "--level", "session", "--until", "someday", "--json")
    assert bad.exit_code == 2 and bad.error()["code"] == "USAGE"


def test_files_and_transcripts_are_merged_by_score(cli: Cli, embedded: Path):
    found = hits(cli, "--level", "session")
    assert {h["collection"] for h in found} == {"claude", "codex", "notes"}
    assert [h["score"] for h in found] == sorted((h["score"] for h in found), reverse=True)
    assert "transcript" not in next(h for h in found if h["collection"] == "notes")
    # A limit keeps the best: the first results of the unlimited list.
    top = ok(cli("vsearch", QUERY, "--level", "session", "-n", "2", "--min-score", "0.2", "--json"))
    assert [h["virtual_path"] for h in top["results"]] == [h["virtual_path"] for h in found[:2]]


def test_a_files_only_vsearch_is_unchanged(cli: Cli, embedded: Path):
    plain = ok(cli("vsearch", QUERY, "-c", "notes", "--json"))
    levelled = ok(cli("vsearch", QUERY, "-c", "notes", "--level", "session", "--json"))
    assert plain["results"] == levelled["results"] and plain["mode"] == "vsearch"
