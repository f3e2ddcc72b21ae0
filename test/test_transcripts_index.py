"""Transcript collections end to end through the CLI: add, update (append, rewrite, archive move,
truncated lines, unreadable records), redaction, remove, with a real index file."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import index_sql

pytestmark = pytest.mark.both_backends


def stored_entry(config_path: Path, name: str) -> dict[str, Any]:
    """A collection's settings as stored: its table in the config file, or for a PostgreSQL
    index its row of the database's list (each index keeps its own, issue 40)."""
    import tomllib

    data = tomllib.loads(config_path.read_text(encoding="utf-8"))
    if "url" not in data.get("index", {}):
        return data["collections"][name]
    with index_sql(Path()) as conn:
        [(entry,)] = conn.execute("SELECT entry FROM collections WHERE name = ?", (name,)).fetchall()
    return json.loads(entry) if isinstance(entry, str) else entry


FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
MAIN = "-home-ann-proj/5b1f0c2e-7d4a-4c1b-9e3f-2a6d8c0b1e47.jsonl"
ROLLOUT = "sessions/2025/12/08/rollout-2025-12-08T00-37-46-7c9e6679-7425-40de-944b-e07fc1f90ae7.jsonl"
Cli = Callable[..., Any]


def ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json() if result.stdout.lstrip().startswith("{") else result.stdout


@pytest.fixture
def claude_dir(tmp_path: Path) -> Path:
    target = tmp_path / "claude-projects"
    shutil.copytree(FIXTURES / "claude", target)
    return target


@pytest.fixture
def codex_dir(tmp_path: Path) -> Path:
    target = tmp_path / "codex-home"
    shutil.copytree(FIXTURES / "codex", target)
    return target


def collection_update(result: Any) -> dict[str, Any]:
    data = ok(result)
    (only,) = data["collections"]
    return only


def search(cli: Cli, query: str, *args: str) -> list[dict[str, Any]]:
    return ok(cli("search", query, "--all", "--json", *args))["results"]


def turn_rows(index_path: Path) -> list[tuple[int, str, str]]:
    with index_sql(index_path) as conn:
        return [
            tuple(row) for row in conn.execute("SELECT id, turn_id, role FROM transcript_turns ORDER BY id")
        ]


def claude_record(uuid: str, text: str, *, role: str = "user", ts: str = "2025-12-01T10:00:00.000Z") -> bytes:
    record = {
        "type": role,
        "uuid": uuid,
        "cwd": "/home/ann/proj",
        "sessionId": "5b1f0c2e-7d4a-4c1b-9e3f-2a6d8c0b1e47",
        "timestamp": ts,
        "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]},
    }
    return (json.dumps(record) + "\n").encode()


def test_add_claude_indexes_sessions_and_says_what_it_skipped(cli: Cli, claude_dir: Path, config_path: Path):
    update = collection_update(cli("collection", "add", "--type", "claude", claude_dir, "--json"))
    assert update["name"] == "claude"
    assert sorted(update["added"]) == [MAIN, "-home-ann-proj/agent-3f2a9c1d.jsonl"]
    assert update["skipped"] == [
        {"path": "-home-ann-proj/00000000-0000-4000-8000-000000000000.jsonl", "reason": "empty"}
    ]
    assert update["turns"] > 10
    codes = {w["code"]: w["message"] for w in update["warnings"]}
    assert codes["PARTIAL_SOURCE"] == f"{MAIN}: skipped unreadable records at line 9, 12"
    assert "queue-operation (1)" in codes["UNKNOWN_RECORDS"]
    assert update["redactions"] == {
        "aws_access_key": 1,
        "github_token": 1,
        "openai_key": 1,
        "url_password": 1,
    }
    entry = stored_entry(config_path, "claude")
    assert entry["type"] == "claude" and "redact" not in entry  # redaction on is the default
    show = ok(cli("collection", "show", "claude", "--json"))
    assert show["collection"]["type"] == "claude" and show["collection"]["redact"] is True
    assert show["documents"] == 2 and show["chunks"] == update["chunks"]
    shown = ok(cli("collection", "show", "claude"))
    assert "type:        claude (Claude Code session transcripts; secrets redacted)" in shown
    listed = ok(cli("collection", "list")).splitlines()
    assert listed[0].split() == ["NAME", "TYPE", "DOCS", "PATH", "INCLUDED", "MASKS"]
    assert listed[1].split()[:3] == ["claude", "claude", "2"]
    status = ok(cli("status", "--json"))
    assert [c["collection"]["type"] for c in status["collections"]] == ["claude"]
    assert "TYPE" in ok(cli("status"))


def test_a_second_update_of_unchanged_files_reads_nothing(cli: Cli, claude_dir: Path):
    ok(cli("collection", "add", "--type", "claude", claude_dir))
    update = collection_update(cli("update", "--json"))
    assert update["added"] == update["updated"] == update["appended"] == []
    assert update["unchanged"] == 2 and update["turns"] == 0


def test_codex_defaults_to_its_session_folders_and_ignores_history(cli: Cli, codex_dir: Path):
    (codex_dir / "history.jsonl").write_text('{"session_id": "x", "text": "zebrafish"}\n')
    update = collection_update(cli("collection", "add", "--type", "codex", codex_dir, "--json"))
    assert sorted(update["added"]) == sorted(
        [ROLLOUT, "archived_sessions/rollout-2025-11-02T09-15-00-0f8e2a4b-1c3d-4e5f-8a9b-0c1d2e3f4a5b.jsonl"]
    )
    shown = ok(cli("collection", "show", "codex", "--json"))["collection"]
    assert shown["masks"] == ["sessions/**/*.jsonl", "archived_sessions/**/*.jsonl"]
    assert search(cli, "zebrafish") == []


def test_default_folders_are_the_tools_own(cli: Cli, isolated: Path):
    home = isolated / "home"
    shutil.copytree(FIXTURES / "claude", home / ".claude" / "projects")
    update = collection_update(cli("collection", "add", "--type", "claude", "--json"))
    assert len(update["added"]) == 2
    missing = cli("collection", "add", "--type", "codex", "--json")
    assert missing.exit_code == 1 and missing.error()["code"] == "PATH_NOT_FOUND"


def test_files_collections_still_need_a_path(cli: Cli):
    result = cli("collection", "add", "--json")
    assert result.exit_code == 2 and result.error()["code"] == "USAGE"


def test_append_reads_only_the_new_lines(cli: Cli, claude_dir: Path, index_path: Path):
    """A grown file is read from the remembered offset: a change made inside the part already read
    (same size, outside the hashed head and tail) is not seen, the appended lines are."""
    path = claude_dir / "-home-ann-proj" / "grown.jsonl"
    lines = [claude_record(f"u{i}", f"question {i} about topic{i} " + "x" * 80) for i in range(200)]
    path.write_bytes(b"".join(lines))
    ok(cli("collection", "add", "--type", "claude", claude_dir))
    before = {row[1]: row[0] for row in turn_rows(index_path)}
    data = path.read_bytes()
    middle = data.index(b"topic100 ")
    path.write_bytes(
        data[:middle] + b"zzzzzzzz " + data[middle + 9 :]
    )  # same size: read again, it would show
    with path.open("ab") as handle:
        handle.write(claude_record("new1", "appended answer about kumquats", role="assistant"))
    update = collection_update(cli("update", "--json"))
    assert update["appended"] == ["-home-ann-proj/grown.jsonl"]
    assert update["added"] == update["updated"] == []
    assert update["turns"] == 1
    assert search(cli, "zzzzzzzz") == []  # the middle was not read again
    assert [h["transcript"]["turn_id"] for h in search(cli, "topic100")] == ["u100"]
    (hit,) = search(cli, "kumquats")
    assert hit["virtual_path"] == "tansaku://claude/-home-ann-proj/grown.jsonl:201"
    assert hit["transcript"]["role"] == "assistant" and hit["transcript"]["run_index"] == 200
    after = {row[1]: row[0] for row in turn_rows(index_path)}
    assert {k: after[k] for k in before} == before  # old turns kept their rows
    # The session's document grew in place: one document, its chunks cover every turn.
    show = ok(cli("collection", "show", "claude", "--json"))
    assert show["documents"] == 3
    chunks = ok(cli("chunks", "claude/-home-ann-proj/grown.jsonl", "--json"))
    assert len(chunks["chunks"]) == 201 and chunks["stored"] is True
    assert chunks["chunks"][-1]["text"].startswith("appended answer about kumquats")


def test_a_truncated_last_line_waits_for_the_next_update(cli: Cli, claude_dir: Path):
    main = claude_dir / MAIN
    ok(cli("collection", "add", "--type", "claude", claude_dir))
    assert search(cli, "persimmon") == []
    # The fixture ends in the middle of a record (the agent is still writing it): finish it.
    with main.open("ab") as handle:
        handle.write(b'ant","content":[{"type":"text","text":"persimmon"}]}}\n')
        handle.write(claude_record("u10", "half a", ts="2025-12-01T10:00:00.000Z")[:40])
    update = collection_update(cli("update", "--json"))
    assert update["appended"] == [MAIN] and update["turns"] == 1
    assert not [w for w in update["warnings"] if w["code"] == "PARTIAL_SOURCE"]
    (hit,) = search(cli, "persimmon")
    assert hit["transcript"]["line"] == 21
    with main.open("ab") as handle:
        handle.write(claude_record("u10", "half a lemon")[40:])
    update = collection_update(cli("update", "--json"))
    assert update["appended"] == [MAIN] and update["turns"] == 1
    (hit,) = search(cli, "lemon")
    assert hit["transcript"]["line"] == 22 and hit["transcript"]["turn_id"] == "u10"


def test_a_bad_record_in_appended_lines_is_a_partial_source_warning(cli: Cli, claude_dir: Path):
    main = claude_dir / MAIN
    ok(cli("collection", "add", "--type", "claude", claude_dir))
    with main.open("ab") as handle:
        handle.write(b'ant","content":[]}}\n{not json\n')
        handle.write(claude_record("u11", "after the damage: quince"))
    update = collection_update(cli("update", "--json"))
    (warning,) = [w for w in update["warnings"] if w["code"] == "PARTIAL_SOURCE"]
    assert warning["message"] == f"{MAIN}: skipped unreadable records at line 22"
    assert len(search(cli, "quince")) == 1


def test_a_rewritten_shorter_file_is_indexed_whole(cli: Cli, claude_dir: Path):
    main = claude_dir / MAIN
    ok(cli("collection", "add", "--type", "claude", claude_dir))
    assert search(cli, "rename", "--role", "user")
    main.write_bytes(claude_record("r1", "a brand new conversation about loquats"))
    update = collection_update(cli("update", "--json"))
    assert update["updated"] == [MAIN] and update["appended"] == []
    assert search(cli, "rename", "--role", "user") == []
    (hit,) = search(cli, "loquats")
    assert hit["transcript"]["line"] == 1 and hit["transcript"]["turn_id"] == "r1"


def test_a_session_moved_into_the_archive_keeps_its_ids(cli: Cli, codex_dir: Path, index_path: Path):
    ok(cli("collection", "add", "--type", "codex", codex_dir))
    before = turn_rows(index_path)
    (hit,) = search(cli, "watcher", "--level", "session")
    session_id = hit["transcript"]["session_id"]
    archived = codex_dir / "archived_sessions" / Path(ROLLOUT).name
    (codex_dir / ROLLOUT).rename(archived)
    update = collection_update(cli("update", "--json"))
    assert update["moved"] == [[ROLLOUT, f"archived_sessions/{archived.name}"]]
    assert update["added"] == update["removed"] == [] and update["turns"] == 0
    assert turn_rows(index_path) == before  # same rows, same turn ids
    (hit,) = search(cli, "watcher", "--level", "session")
    assert hit["transcript"]["session_id"] == session_id
    assert hit["path"] == f"archived_sessions/{archived.name}"


def test_deleted_sessions_leave_the_index(cli: Cli, claude_dir: Path, index_path: Path):
    ok(cli("collection", "add", "--type", "claude", claude_dir))
    (claude_dir / MAIN).unlink()
    update = collection_update(cli("update", "--json"))
    assert update["removed"] == [MAIN]
    assert search(cli, "rename") == []
    remaining = {row[1] for row in turn_rows(index_path)}
    assert remaining and "u1" not in remaining  # the sub-agent's turns stay
    ok(cli("collection", "remove", "claude"))
    assert turn_rows(index_path) == []


def test_secrets_are_not_findable_but_the_text_around_them_is(cli: Cli, codex_dir: Path):
    ok(cli("collection", "add", "--type", "codex", codex_dir))
    for secret in ("sk-test-000000000000000000000000", "ghp_FAKE00000000000000000000000000000000"):
        for level in ("turn", "session"):
            assert search(cli, f'"{secret}"', "--level", level) == []
        assert ok(cli("search", f'"{secret}"', "--json", "-c", "codex"))["results"] == []
    assert search(cli, "OPENAI_API_KEY")  # the name stays, the value is gone
    read = ok(cli("session", "read", "7c9e6679", "--json", "--limit", "50"))
    text = "\n".join(m["text"] for m in read["messages"])
    assert "sk-test-0000" not in text and "[REDACTED:openai_key]" in text
    raw = ok(cli("session", "read", "7c9e6679", "--json", "--raw"))
    assert raw["raw"] is True and "sk-test-0000" in "\n".join(m["text"] for m in raw["messages"])


def test_no_redact_indexes_secrets_as_they_are(cli: Cli, codex_dir: Path, config_path: Path):
    update = collection_update(
        cli("collection", "add", "--type", "codex", codex_dir, "--no-redact", "--json")
    )
    assert update["redactions"] == {}
    assert stored_entry(config_path, "codex")["redact"] is False
    assert search(cli, "sk-test-000000000000000000000000")
    assert "secrets NOT redacted" in ok(cli("collection", "show", "codex"))


def test_dry_run_of_an_append_changes_nothing(cli: Cli, claude_dir: Path, index_path: Path):
    ok(cli("collection", "add", "--type", "claude", claude_dir))
    with (claude_dir / MAIN).open("ab") as handle:
        handle.write(b'ant","content":[{"type":"text","text":"fig"}]}}\n')
    before = turn_rows(index_path)
    update = collection_update(cli("update", "--dry-run", "--json"))
    assert update["appended"] == [MAIN]
    assert turn_rows(index_path) == before
    assert "would read on: " + MAIN in ok(cli("update", "--dry-run"))
