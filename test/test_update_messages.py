"""What `collection add`, `update`, `status` and `collection show` say about a real folder (issue
38): one line for the blocks split at line boundaries, one chunk count, "would" in a dry run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .models_fixture import requires_llama, requires_minilm

pytestmark = pytest.mark.both_backends

CODE = "\n".join(f"value_{i} = compute({i}, 'a line of code long enough to count')" for i in range(200))


def page(n: int, code: bool = True) -> str:
    fence = f"```python\n{CODE}\n```\n\n" if code else ""
    return f"# Page {n}\n\nAbout otters, page {n}.\n\n{fence}The end of page {n}.\n"


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    """Three pages with a fenced block far over max_tokens, and two copies of one short page."""
    folder = tmp_path / "docs"
    for n in range(3):
        (folder / "guide").mkdir(parents=True, exist_ok=True)
        (folder / "guide" / f"p{n}.md").write_text(page(n), encoding="utf-8")
    (folder / "v1").mkdir()
    (folder / "v2").mkdir()
    (folder / "v1" / "same.md").write_text(page(9, code=False), encoding="utf-8")
    (folder / "v2" / "same.md").write_text(page(9, code=False), encoding="utf-8")
    return folder


def ok(result):
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result


def info_of(cli, name: str) -> dict:
    status = ok(cli("status", "--json")).json()
    return next(c for c in status["collections"] if c["collection"]["name"] == name)


def test_long_blocks_are_one_line_in_cli_and_one_entry_in_json(cli, docs: Path):
    out = ok(cli("collection", "add", docs, "--name", "docs")).stdout
    lines = [line for line in out.splitlines() if "max_tokens" in line]
    assert lines == [
        "  chunking: 3 fenced code blocks longer than max_tokens were split at line boundaries,"
        " in 3 files (`tansaku chunks docs/PATH` shows where)"
    ]
    # The pointer works: the file's own notes say which block, under their own code.
    shown = ok(cli("chunks", "docs/guide/p0.md", "--json")).json()
    assert [w["code"] for w in shown["warnings"]] == ["BLOCK_SPLIT"]
    assert shown["warnings"][0]["message"].startswith("fenced code block (lines 5-206)")
    # A split block is not a fallback to regex.
    assert info_of(cli, "docs")["chunk_fallbacks"] == 0
    assert "fell back" not in ok(cli("collection", "show", "docs")).stdout

    (docs / "guide" / "p1.md").write_text(page(1) + "One more line.\n", encoding="utf-8")
    report = ok(cli("update", "--json")).json()["collections"][0]
    assert report["split_blocks"] == 1
    assert report["chunk_warnings"] == [
        "1 fenced code block longer than max_tokens was split at line boundaries, in guide/p1.md"
        " (`tansaku chunks docs/guide/p1.md` shows where)"
    ]


def test_add_status_and_show_count_the_same_chunks(cli, docs: Path):
    added = ok(cli("collection", "add", docs, "--name", "docs", "--json")).json()["collections"][0]
    # Four distinct texts (the two copies share theirs): all chunked now, all of them new.
    assert added["chunked"] == 4 and added["new_chunks"] == added["chunks"] > 4
    total = added["chunks"]
    info = info_of(cli, "docs")
    assert info["documents"] == 5 and info["chunked"] == 5
    assert info["chunks"] == total  # not counted once per copy
    shown = ok(cli("collection", "show", "docs", "--json")).json()
    assert shown["chunks"] == total

    out = ok(cli("collection", "add", docs, "--name", "again")).stdout
    # Another collection of the same texts chunks nothing anew, and still has every chunk.
    assert f"  chunks: {total} (none new)" in out.splitlines()
    assert f"chunks: {total} ({total} new, from the 4 texts chunked in this run)" not in out
    row = next(line for line in ok(cli("status")).stdout.splitlines() if line.strip().startswith("docs "))
    assert re.split(r"\s+", row.strip())[2:5] == ["5", "5", str(total)]  # DOCS CHUNKED CHUNKS
    assert f"chunked:     5 documents, {total} chunks" in ok(cli("collection", "show", "docs")).stdout

    (docs / "v2" / "same.md").unlink()  # one copy gone: its text and chunks stay
    report = ok(cli("update", "-c", "docs", "--json")).json()["collections"][0]
    assert report["chunks"] == total == info_of(cli, "docs")["chunks"]
    assert f"  chunks: {total} (none new)" not in ok(cli("update", "-c", "docs")).stdout  # no change


def test_dry_run_says_would_in_every_format(cli, docs: Path):
    (docs / "guide" / "loop").symlink_to("..")
    (docs / "handbook").symlink_to("guide")
    out = ok(cli("collection", "add", docs, "--name", "docs", "--dry-run")).stdout
    lines = out.splitlines()
    assert "  would add 5, update 0, move 0, leave 0 unchanged, remove 0, skip 2" in lines
    assert "  would skip guide/loop/: symlink-loop" in lines
    assert "  would skip handbook/: symlink-duplicate" in lines
    assert not [line for line in lines if re.match(r"\s*(added|skipped) ", line)]
    data = ok(cli("collection", "add", docs, "--name", "docs", "--dry-run", "--json")).json()
    assert data["dry_run"] is True
    assert data["collections"][0]["summary"].startswith("would add 5, update 0,")

    report = ok(cli("collection", "add", docs, "--name", "docs", "--json")).json()["collections"][0]
    assert report["summary"] == "added 5, updated 0, moved 0, unchanged 0, removed 0, skipped 2"
    (docs / "guide" / "p0.md").unlink()
    out = ok(cli("update", "--dry-run")).stdout
    assert "  would add 0, update 0, move 0, leave 4 unchanged, remove 1, skip 2" in out.splitlines()
    summary = ok(cli("update", "--dry-run", "--json")).json()["collections"][0]["summary"]
    assert summary == "would add 0, update 0, move 0, leave 4 unchanged, remove 1, skip 2"


@requires_llama
@requires_minilm
def test_copies_are_embedded_once_and_status_calls_them_all_embedded(cli, docs: Path, model):
    # Counted once per copy, the chunks outnumbered the vectors for good: "partial" forever.
    ok(cli("collection", "add", docs, "--name", "docs"))
    embedded = ok(cli("embed", "--json")).json()["collections"][0]
    info = info_of(cli, "docs")
    assert embedded["pending"] == info["chunks"] == info["vectors"]
    assert info["unembedded"] == 0 and info["vector_state"] == "full"
