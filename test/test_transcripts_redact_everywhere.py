"""Every transcript text that reaches the index is redacted, not only turns and prompts: session
titles (Claude ``summary`` and ``custom-title``, Codex thread names), the title taken from a first
prompt, the project (working directory), tool names and tool inputs, and the parser state kept for
append mode. Checked through every reading command and in the raw bytes of the index file.

The fixtures (fixtures/transcripts/redact-everywhere/) hold fake secrets: zeros and FAKE.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

import pytest

from tansaku.sources.transcripts import claude, codex
from tansaku.sources.transcripts.model import ParseReport, ParseState, Run, Session, Turn

from .conftest import index_sql

pytestmark = pytest.mark.both_backends

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts" / "redact-everywhere"
SUMMARY = "1d2e3f40-0000-4000-8000-00000000a001"  # summary record, tool name and tool input
CUSTOM = "1d2e3f40-0000-4000-8000-00000000a002"  # custom-title record
PROSE = "1d2e3f40-0000-4000-8000-00000000a003"  # no title: the first prompt holds a password
ROLLOUT = "9a8b7c6d-0000-4000-8000-00000000c001"  # thread name, cwd, tool input
# A distinctive piece of each secret, looked for case-insensitively (FTS keeps tokens lower-cased).
SECRETS = {
    "summary": "FAKESUMMARY",
    "custom-title": "FAKECUSTOMTITLE",
    "tool name": "FAKETOOLNAME",
    "tool input": "FakeToolInput9",
    "prose password": "CorrectHorseBattery9",
    "thread name": "FAKETHREAD",
    "codex cwd": "FAKECWD",
    "codex tool input": "FakeCodexPw77",
}
Cli = Callable[..., Any]


def ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json() if result.stdout.lstrip().startswith("{") else result.stdout


def leaked(text: str) -> list[str]:
    lowered = text.lower()
    return [name for name, piece in SECRETS.items() if piece.lower() in lowered]


@pytest.fixture
def indexed(cli: Cli, tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES, tmp_path / "agents")
    ok(cli("collection", "add", "--type", "claude", tmp_path / "agents" / "claude"))
    ok(cli("collection", "add", "--type", "codex", tmp_path / "agents" / "codex"))
    return tmp_path / "agents"


def test_search_shows_redacted_titles(cli: Cli, indexed: Path):
    for level in ("session", "turn"):
        out = ok(cli("search", "login", "--all", "--json", "--level", level))
        assert out["results"], level
        assert leaked(json.dumps(out)) == [], level
    titles = {
        hit["virtual_path"].rsplit("/", 1)[-1]: hit["title"]
        for hit in ok(cli("search", "login", "--all", "--json", "--level", "session"))["results"]
    }
    assert titles[f"{SUMMARY}.jsonl"] == "Fix login, token [REDACTED:github_token]"
    assert titles[f"{CUSTOM}.jsonl"] == "Login deploy with [REDACTED:github_token]"
    assert "[REDACTED:prose_password]" in titles[f"{PROSE}.jsonl"]
    rollout = next(title for path, title in titles.items() if ROLLOUT in path)
    assert rollout == "Login rotation [REDACTED:openai_key]"
    for piece in SECRETS.values():
        assert ok(cli("search", piece, "--all", "--json"))["results"] == []


def test_get_multi_get_and_session_read_show_no_secret(cli: Cli, indexed: Path):
    for session in (SUMMARY, CUSTOM, PROSE):
        got = ok(cli("get", f"tansaku://claude/-home-ann-vault/{session}.jsonl", "--json"))
        assert leaked(json.dumps(got)) == [], session
    many = ok(cli("multi-get", "tansaku://claude/-home-ann-vault/*.jsonl", "--json"))
    assert "login" in json.dumps(many).lower()
    assert leaked(json.dumps(many)) == []
    for session in (SUMMARY, CUSTOM, PROSE, ROLLOUT):
        read = ok(cli("session", "read", session, "--json"))
        assert read["messages"]
        assert leaked(json.dumps(read)) == [], session
    tools = ok(cli("session", "read", SUMMARY, "--json"))["messages"]
    text = "\n".join(m["text"] for m in tools)
    assert "--password=[REDACTED:cli_password]" in text
    codex_read = ok(cli("session", "read", ROLLOUT, "--json"))
    assert "-p[REDACTED:cli_password]" in "\n".join(m["text"] for m in codex_read["messages"])
    raw = ok(cli("session", "read", SUMMARY, "--json", "--raw"))  # --raw reads the source itself
    assert "FakeToolInput9" in "\n".join(m["text"] for m in raw["messages"])


def test_no_secret_is_anywhere_in_the_index_file(
    cli: Cli, indexed: Path, index_path: Path, index_backend: str
):
    if index_backend == "postgresql":
        rows = _every_row(index_path)
        assert "[REDACTED:github_token]" in rows["transcript_sessions"]  # the rows were read
        assert {table: leaked(text) for table, text in rows.items() if leaked(text)} == {}
        return
    files = [path for path in (index_path, Path(f"{index_path}-wal")) if path.exists()]
    assert files and index_path in files
    for path in files:
        assert leaked(path.read_bytes().decode("latin-1")) == [], path.name


def _every_row(index_path: Path) -> dict[str, str]:
    """Each table of a PostgreSQL index, every row as text (what the server stores)."""
    with index_sql(index_path) as conn:
        tables = [
            row[0]
            for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        ]
        return {
            table: "\n".join(row[0] for row in conn.execute(f'SELECT t::text FROM "{table}" AS t'))
            for table in tables
        }


def test_an_index_made_by_the_older_indexer_is_read_again(cli: Cli, indexed: Path, index_path: Path):
    """Indexes written before titles were redacted hold them in clear: the next update re-reads
    every session of the collection, whatever its size and time."""
    with index_sql(index_path) as conn:
        conn.execute("UPDATE transcript_sessions SET title = 'stale title'")
        conn.execute("UPDATE collection_state SET indexer_version = 1 WHERE name = 'claude'")
    update = ok(cli("update", "--json"))
    by_name = {c["name"]: c for c in update["collections"]}
    assert sorted(by_name["claude"]["updated"]) == sorted(
        f"-home-ann-vault/{session}.jsonl" for session in (SUMMARY, CUSTOM, PROSE)
    )
    assert by_name["codex"]["updated"] == [] and by_name["codex"]["unchanged"] == 1
    with index_sql(index_path) as conn:
        titles = dict(conn.execute("SELECT session_id, title FROM transcript_sessions").fetchall())
    assert titles[SUMMARY] == "Fix login, token [REDACTED:github_token]"


def test_a_prompt_twin_after_an_append_boundary_is_still_one_turn(cli: Cli, tmp_path: Path):
    """Codex writes a prompt twice; when an update falls between the two copies, the stored state
    holds the first one redacted, and the second must still be known as its twin."""
    source = next((FIXTURES / "codex").rglob("*.jsonl"))
    lines = source.read_bytes().splitlines(keepends=True)
    prompt = "deploy with --password=FakeTwin771 now"
    for number in (1, 2):
        record = json.loads(lines[number])
        if record["type"] == "event_msg":
            record["payload"]["message"] = prompt
        else:
            record["payload"]["content"][0]["text"] = prompt
        lines[number] = (json.dumps(record) + "\n").encode()
    target = tmp_path / "codex" / "sessions" / "2025" / "12" / "09" / source.name
    target.parent.mkdir(parents=True)
    target.write_bytes(b"".join(lines[:2]))
    ok(cli("collection", "add", "--type", "codex", tmp_path / "codex"))
    with target.open("ab") as handle:
        handle.write(b"".join(lines[2:]))
    ok(cli("update", "--json"))
    messages = ok(cli("session", "read", ROLLOUT, "--json"))["messages"]
    prompts = [m for m in messages if m["role"] == "user"]
    assert [m["text"] for m in prompts] == ["deploy with --password=[REDACTED:cli_password] now"]


def _every_string(value: Any) -> Any:
    """``value`` with every string field (at any depth) set to a text holding a secret."""
    secret = "note ghp_" + "FAKE" + "0" * 32
    changes = {}
    for spec in fields(value):
        item = getattr(value, spec.name)
        if isinstance(item, str) or spec.type in ("str", "str | None"):
            changes[spec.name] = secret
        elif isinstance(item, Session | ParseState):
            changes[spec.name] = _every_string(item)
        elif isinstance(item, tuple) and item and isinstance(item[0], Turn | Run):
            changes[spec.name] = tuple(_every_string(unit) for unit in item)
    return replace(value, **changes)


def test_every_text_field_of_a_report_is_redacted_unless_it_is_a_key():
    """A field a builder adds to the model later is redacted without anyone naming it."""
    from tansaku.sources.transcripts.redact_units import KEPT_FIELDS, redact_report

    path = FIXTURES / "claude" / "-home-ann-vault" / f"{SUMMARY}.jsonl"
    parsed = claude.parse(path.read_bytes(), str(path))
    rollout = next((FIXTURES / "codex").rglob("*.jsonl"))
    parsed_codex = codex.parse(rollout.read_bytes(), str(rollout))
    for report in (parsed, parsed_codex):
        dirty: ParseReport = _every_string(report)
        clean = redact_report(dirty).report
        units = [clean.session, clean.state, *clean.runs, *clean.turns]
        for unit in units:
            for spec in fields(unit):
                value = getattr(unit, spec.name)
                if not isinstance(value, str):
                    continue
                if spec.name in KEPT_FIELDS:
                    assert "ghp_" in value, spec.name  # keys are kept as they are
                else:
                    assert "ghp_" not in value and "[REDACTED:github_token]" in value, spec.name
