"""The quick pass of `embed`: every pending chunk gets a vector of its first tokens before the
full ones, so vsearch and query work minutes after `update` on a large collection. Real MiniLM,
real sqlite-vec."""

from __future__ import annotations

from pathlib import Path

import pytest

from tansaku.index.embed import QUICK_TOKENS, QuickPass, first_window

from .conftest import index_sql
from .models_fixture import requires_llama, requires_minilm

pytestmark = pytest.mark.both_backends

QUICK_WINDOW = -1


def _window(conn) -> str:
    """chunk_vectors' window column: ``window`` is a reserved word in PostgreSQL (``window_no``)."""
    return "window" if hasattr(conn, "enable_load_extension") else "window_no"


def embed(cli, *args: str) -> dict:
    result = cli("embed", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


def windows(index_path: Path) -> list[int]:
    with index_sql(index_path) as conn:
        column = _window(conn)
        return [row[0] for row in conn.execute(f"SELECT {column} FROM chunk_vectors ORDER BY {column}")]


def unlinked(index_path: Path) -> int:
    with index_sql(index_path) as conn:
        return conn.execute(
            "SELECT count(*) FROM embeddings AS e WHERE NOT EXISTS"
            " (SELECT 1 FROM chunk_vectors AS v WHERE v.embedding_id = e.id)"
        ).fetchone()[0]


def paths_with(index_path: Path, window: int) -> set[str]:
    """Documents with a chunk whose vector is window ``window`` (-1: quick)."""
    with index_sql(index_path) as conn:
        rows = conn.execute(
            "SELECT DISTINCT d.path FROM documents AS d JOIN chunk_vectors AS v ON v.hash = d.hash"
            f" WHERE v.{_window(conn)} = ?",
            (window,),
        )
        return {row[0] for row in rows}


def status(cli) -> dict:
    data = cli("status", "--json").json()
    return {c["collection"]["name"]: c for c in data["collections"]}


# -- the first window -----------------------------------------------------------------------------


def _words(text: str) -> int:
    return len(text.split()) + sum(1 for ch in text if "\u4e00" <= ch <= "\u9fff")


def test_the_first_window_keeps_whole_lines_then_words_within_the_limit():
    lines = ["one two three", "four five six seven", "eight nine"]
    render = "title: t | text: {}".format
    window = first_window(lines, 10, render, _words, 10)
    assert window.text == "one two three\nfour five six"  # 10 words with the prompt
    assert _words(render(window.text)) <= 10
    assert (window.start_line, window.end_line) == (10, 11)
    whole = first_window(lines, 1, render, _words, 100)
    assert whole.text == "\n".join(lines) and whole.end_line == 3


def test_the_first_window_cuts_a_run_without_spaces_by_characters_and_is_never_empty():
    window = first_window(["权限文件系统组权限默认掩码"], 1, str, len, 4)
    assert window.text == "权限文件"
    tiny = first_window(["anything at all"], 1, lambda t: "a long title that is over " + t, _words, 2)
    assert tiny.text == "a"  # the limit is below the prompt alone: one character, not nothing


def test_the_quick_pass_runs_when_enough_chunks_are_pending(monkeypatch):
    assert not QuickPass().wanted(QuickPass().min_chunks - 1)
    assert QuickPass().wanted(QuickPass().min_chunks)
    assert not QuickPass("off").wanted(10**6)
    assert QuickPass("only").wanted(1)
    monkeypatch.setenv("TANSAKU_QUICK_MIN_CHUNKS", "3")
    assert QuickPass.from_setting("auto").wanted(3)
    monkeypatch.setenv("TANSAKU_QUICK_MIN_CHUNKS", "many")
    with pytest.raises(Exception, match="TANSAKU_QUICK_MIN_CHUNKS"):
        QuickPass.from_setting("auto")


# -- with the model -------------------------------------------------------------------------------


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("indexed")
def test_quick_only_makes_every_chunk_searchable_and_says_the_full_vectors_are_pending(
    cli, model, index_path
):
    report = embed(cli, "--quick-only")
    sample = report["collections"][0]
    assert sample["quick"] == sample["pending"] == 13
    assert sample["embedded"] == 0
    assert sample["state"] == "quick" and "all 13 chunks have a quick vector" in sample["state_note"]
    assert set(windows(index_path)) == {QUICK_WINDOW}
    text = cli("embed", "--quick-only")
    assert "13 quick vectors first" not in text.stdout  # nothing left for a quick pass
    info = status(cli)["sample"]
    assert (info["vectors"], info["quick_vectors"], info["unembedded"]) == (0, 13, 13)
    assert info["vector_state"] == "quick"
    shown = cli("status").stdout
    assert "sample: quick: all 13 chunks have a quick vector" in shown
    assert "`tansaku embed -c sample` computes the full ones" in shown
    # A quick vector holds a chunk's title, headings and first lines: enough for this one.
    found = cli("vsearch", "when do the backups run each night", "--json").json()
    assert found["results"][0]["path"] == "guides/backups.md"
    codes = [w["code"] for w in found["warnings"]]
    assert codes == ["QUICK_VECTORS"], found["warnings"]
    assert "13 chunks" in found["warnings"][0]["message"]
    plain = cli("embed", "--quick-only")  # nothing to do; the cli says what is left
    assert plain.exit_code == 0


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("indexed")
def test_the_full_pass_replaces_quick_vectors_and_leaves_nothing_behind(cli, model, index_path):
    embed(cli, "--quick-only")
    report = embed(cli)
    sample = report["collections"][0]
    assert sample["pending"] == 13 and sample["quick"] == 0
    # A chunk short enough to be its own quick window keeps that vector: reused, not recomputed.
    assert sample["reused"] > 0 and sample["embedded"] + sample["reused"] >= 13
    assert QUICK_WINDOW not in windows(index_path)
    assert unlinked(index_path) == 0
    info = status(cli)["sample"]
    assert (info["vectors"], info["quick_vectors"], info["unembedded"]) == (13, 0, 0)
    assert info["vector_state"] == sample["state"] == "full"
    assert "now full: all 13 chunks have their full vectors" in cli("embed").stdout
    found = cli("vsearch", "restore a single file from a snapshot", "--json").json()
    assert found["warnings"] == [] and found["results"][0]["path"] == "guides/backups.md"


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("indexed")
def test_embed_gives_quick_vectors_first_above_the_threshold_only(cli, model, index_path, monkeypatch):
    assert embed(cli, "--no-quick")["collections"][0]["quick"] == 0
    cli("embed", "-f", "--json")
    monkeypatch.setenv("TANSAKU_QUICK_MIN_CHUNKS", "5")
    forced = embed(cli, "-f")["collections"][0]
    assert forced["quick"] == 13 and forced["embedded"] + forced["reused"] >= 13
    assert QUICK_WINDOW not in windows(index_path) and unlinked(index_path) == 0
    monkeypatch.setenv("TANSAKU_QUICK_MIN_CHUNKS", "500")
    assert embed(cli, "-f")["collections"][0]["quick"] == 0


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("indexed")
def test_an_interrupted_full_pass_searches_full_and_quick_vectors_side_by_side(cli, model, index_path):
    from tansaku.api import Tansaku
    from tansaku.index import embed as embedding

    embed(cli, "--quick-only")

    class Stop:
        def __call__(self, done: int, total: int, label: str) -> None:
            raise KeyboardInterrupt

    api = Tansaku()
    original = embedding.BATCH_CHUNKS
    embedding.BATCH_CHUNKS = 4
    try:
        report = api.embed(progress=lambda name: Stop())
    finally:
        embedding.BATCH_CHUNKS = original
    assert report.interrupted
    info = status(cli)["sample"]
    assert info["vectors"] == 4 and info["quick_vectors"] == 9 and info["unembedded"] == 9
    assert report.collections[0].state == info["vector_state"] == "partial"
    assert info["vector_state_note"].startswith("partial: 4 of 13 chunks have full vectors, 9 a quick one;")
    found = cli("vsearch", "compression level", "--all", "--min-score", "0", "--json").json()
    # Documents are found by their full vectors and by their quick ones, in one list.
    shown = {hit["path"] for hit in found["results"]}
    assert shown & paths_with(index_path, 0) and shown & paths_with(index_path, QUICK_WINDOW)
    assert [w["code"] for w in found["warnings"]] == ["QUICK_VECTORS"]
    assert "9 chunks" in found["warnings"][0]["message"]


def test_the_quick_budget_is_the_measured_one():
    assert QUICK_TOKENS == 56  # evals/RESULTS-embed.md: "The quick pass"
