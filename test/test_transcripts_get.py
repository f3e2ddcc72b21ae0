"""`get` on a turn's path (SESSION.jsonl:LINE, as search prints it): that turn with context around
it, bounded, redacted unless --raw, in every format."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.both_backends

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "transcripts"
MAIN_ID = "5b1f0c2e-7d4a-4c1b-9e3f-2a6d8c0b1e47"
MAIN = f"tansaku://claude/-home-ann-proj/{MAIN_ID}.jsonl"
CODEX = "tansaku://codex/sessions/2025/12/08/rollout-2025-12-08T00-37-46-7c9e6679-7425-40de-944b-e07fc1f90ae7.jsonl"
FORMATS = ("cli", "json", "csv", "md", "xml", "files")
Cli = Callable[..., Any]


def ok(result: Any) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json() if result.stdout.lstrip().startswith("{") else result.stdout


@pytest.fixture
def agents(cli: Cli, tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "claude", tmp_path / "claude")
    shutil.copytree(FIXTURES / "codex", tmp_path / "codex")
    ok(cli("collection", "add", "--type", "claude", tmp_path / "claude"))
    ok(cli("collection", "add", "--type", "codex", tmp_path / "codex"))
    return tmp_path


def lines(data: dict[str, Any]) -> list[int]:
    return [m["line"] for m in data["messages"]]


def test_a_search_hit_path_gets_its_turn_with_context(cli: Cli, agents: Path):
    hit = ok(cli("search", "AWS_ACCESS_KEY_ID", "-c", "claude", "--json"))["results"][0]
    assert hit["virtual_path"] == f"{MAIN}:11"
    data = ok(cli("get", hit["virtual_path"], "--json"))
    assert data["focus_line"] == 11 and data["session_id"] == MAIN_ID
    whole = ok(cli("session", "read", MAIN_ID, "--json"))
    at = lines(whole).index(11)
    # Three turns each side of it, in file order, as session read has them.
    assert data["messages"] == whole["messages"][at - 3 : at + 4]
    focused = [m for m in data["messages"] if m["line"] == 11]
    assert focused and "[REDACTED:aws_access_key]" in focused[0]["text"]
    # The window reaches the session's last turn: nothing more to read after it.
    assert at + 4 == len(whole["messages"]) and data["truncated"] is False and data["next_line"] is None
    before = ok(cli("get", f"{MAIN}:6", "-C", "1", "--json"))
    assert lines(before) == [5, 6, 6, 6, 7] and before["next_line"] == 10


def test_context_size_and_bounds(cli: Cli, agents: Path):
    assert lines(ok(cli("get", f"{MAIN}:11", "-C", "0", "--json"))) == [11]
    one = ok(cli("get", f"{MAIN}:11", "-C", "1", "--json"))
    assert lines(one) == [10, 11, 14]
    assert lines(ok(cli("get", f"{MAIN}:11", "-l", "2", "--json"))) == [10, 11]  # the nearest first
    assert lines(ok(cli("get", MAIN, "--from", "11", "-C", "1", "--json"))) == [10, 11, 14]
    # The focused turn always shows: cut to --max-bytes when it alone is larger.
    small = ok(cli("get", f"{MAIN}:11", "--max-bytes", "40", "--json"))
    assert lines(small) == [11] and len(small["messages"][0]["text"].encode()) <= 40
    assert [w["code"] for w in small["warnings"]] == ["MESSAGE_CUT"]
    # Every block of a source line is the turn asked for (an assistant record holds several).
    blocks = ok(cli("get", f"{MAIN}:6", "-C", "0", "--json"))
    assert lines(blocks) == [6, 6, 6] and {m["turn_id"] for m in blocks["messages"]} == {
        "a1#0",
        "a1#1",
        "a1#2",
    }


def test_a_line_without_a_turn_shows_the_nearest(cli: Cli, agents: Path):
    data = ok(cli("get", f"{MAIN}:9", "-C", "0", "--json"))  # line 9 is invalid JSON
    assert data["focus_line"] == 10 and lines(data) == [10]
    assert data["warnings"][0]["code"] == "NO_TURN_AT_LINE"


def test_raw_shows_the_source_text(cli: Cli, agents: Path):
    raw = ok(cli("get", f"{MAIN}:11", "-C", "0", "--raw", "--json"))
    assert raw["raw"] is True and "AKIAFAKE000000000000" in raw["messages"][0]["text"]


def test_without_a_line_get_is_the_session_text(cli: Cli, agents: Path):
    data = ok(cli("get", MAIN, "-l", "2", "--json"))
    assert data["lines"] == ["Why does the index go stale after I rename a folder?", ""]


def stable(text: str, root: Path) -> str:
    return text.replace(str(root), "/TMP")


@pytest.mark.parametrize("fmt", FORMATS)
def test_get_turn_formats(cli: Cli, agents: Path, fmt: str, snapshot: Any):
    result = cli("get", f"{CODEX}:17", "-C", "1", "--format", fmt)
    assert result.exit_code == 0, result.stderr
    assert stable(result.stdout, agents) == snapshot


def test_session_read_pages_never_repeat_the_blocks_of_a_line(cli: Cli, agents: Path):
    whole = [m["turn_id"] for m in ok(cli("session", "read", MAIN_ID, "--json"))["messages"]]
    for limit in ("3", "4", "5"):  # line 6 holds three blocks: a page of 2 would split it
        seen: list[str] = []
        start = 1
        while True:
            page = ok(cli("session", "read", MAIN_ID, "--from-line", str(start), "--limit", limit, "--json"))
            seen += [m["turn_id"] for m in page["messages"]]
            if not page["truncated"]:
                break
            start = page["next_line"]
        assert seen == whole, limit
    # Blocks of one line that overflow a page alone: shown in part, said so, the next page moves on.
    page = ok(cli("session", "read", MAIN_ID, "--from-line", "6", "--limit", "2", "--json"))
    assert [m["turn_id"] for m in page["messages"]] == ["a1#0", "a1#1"]
    assert page["warnings"][0]["code"] == "LINE_SPLIT" and page["next_line"] == 7
