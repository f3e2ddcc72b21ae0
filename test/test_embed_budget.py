"""The embed budget: the full pass embeds each chunk's first N tokens (TANSAKU_EMBED_BUDGET, the
default chosen on the measurements of evals/RESULTS-embed.md), in windows of the model's size.
Real MiniLM (a 254-token window), real sqlite-vec and PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from tansaku.index.embed import EMBED_BUDGET, embed_budget

from .conftest import index_sql
from .models_fixture import requires_llama, requires_minilm

pytestmark = pytest.mark.both_backends

# One section of about 900 words: a single chunk that MiniLM's window cuts into several.
OPENING = "The harbour crane lifts shipping containers onto the night train to Rotterdam."
FILLER = "Routine maintenance notes follow about lubrication intervals and cable inspections."
CLOSING = "Finally the archive of violin recordings is stored in the cold basement vault."


def _long_document(root: Path) -> Path:
    root.mkdir()
    lines = [OPENING] + [f"{FILLER} Item {n}." for n in range(60)] + [CLOSING]
    (root / "port.md").write_text("# Port operations\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
    return root


def _chunk_windows(index_path: Path) -> dict[int, list[tuple[int, int, int]]]:
    """Per chunk (its seq): its vectors' (window, start_line, end_line)."""
    with index_sql(index_path) as conn:
        column = "window" if hasattr(conn, "enable_load_extension") else "window_no"
        rows = conn.execute(f"SELECT seq, {column}, start_line, end_line FROM chunk_vectors ORDER BY 1, 2")
        chunks: dict[int, list[tuple[int, int, int]]] = {}
        for seq, window, start, end in rows:
            chunks.setdefault(seq, []).append((window, start, end))
        return chunks


@pytest.fixture
def port(cli, model, tmp_path) -> Path:
    """The long document as collection ``port``, MiniLM as the embed model."""
    folder = _long_document(tmp_path / "port")
    assert cli("collection", "add", str(folder), "--name", "port").exit_code == 0
    return folder


def _embed(cli, *args: str) -> dict:
    result = cli("embed", "--no-quick", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("port")
def test_a_budget_embeds_the_start_of_each_chunk_and_all_embeds_every_token(cli, index_path, monkeypatch):

    monkeypatch.setenv("TANSAKU_EMBED_BUDGET", "all")
    _embed(cli)
    whole = _chunk_windows(index_path)
    assert all(len(windows) >= 2 for windows in whole.values())  # every token, in 254-token windows

    monkeypatch.setenv("TANSAKU_EMBED_BUDGET", "64")
    _embed(cli, "-f")
    budget = _chunk_windows(index_path)
    assert budget.keys() == whole.keys()
    for seq, windows in budget.items():
        assert len(windows) == 1  # 64 tokens fit one window
        window, start, end = windows[0]
        assert window == 0 and start == whole[seq][0][1] and end < whole[seq][-1][2]
    found = cli("vsearch", "containers loaded onto a train", "--json").json()
    assert found["results"][0]["path"] == "port.md"
    first = min(budget)
    assert found["results"][0]["snippet"]["start_line"] <= budget[first][0][2]  # a line embedded

    monkeypatch.setenv("TANSAKU_EMBED_BUDGET", "400")
    _embed(cli, "-f")
    # 400 tokens: a whole window and part of the next, where the chunk is that long
    assert [len(w) for w in _chunk_windows(index_path).values()] == [min(2, len(w)) for w in whole.values()]


@pytest.mark.parametrize("value", ["abc", "8", "-1"])
def test_a_bad_budget_is_a_usage_error(cli, value, monkeypatch) -> None:
    monkeypatch.setenv("TANSAKU_EMBED_BUDGET", value)
    result = cli("embed")
    assert result.exit_code == 2
    assert "TANSAKU_EMBED_BUDGET" in result.stderr and "16 or more" in result.stderr


def test_the_default_budget_is_the_measured_one_for_long_windows_only() -> None:
    assert EMBED_BUDGET == 512  # evals/RESULTS-embed.md: "How much of a chunk: the full pass"
    assert embed_budget(2046) == 512  # EmbeddingGemma's window
    assert embed_budget(254) is None  # MiniLM's: every window, as measured in issue 10


@requires_llama
@requires_minilm
@pytest.mark.usefixtures("port")
def test_by_default_minilm_embeds_every_window_and_the_report_says_what_a_budget_took(
    cli, index_path, monkeypatch
):
    report = _embed(cli)
    assert report["budget_tokens"] is None
    assert all(len(windows) >= 2 for windows in _chunk_windows(index_path).values())
    monkeypatch.setenv("TANSAKU_EMBED_BUDGET", "64")
    text = cli("embed", "-f", "--no-quick")
    assert "window 254 tokens; each chunk's first 64 tokens embedded" in text.stdout
    assert "each chunk's first 64 tokens" in cli("status").stdout


def _helpers_module(last: str) -> str:
    """Ten helpers, the first of which fill the budget, then ``last``, defined past it."""
    body = (
        "    total = 0\n    for value in row.values:\n        total += value * {n}\n"
        "    return row.scaled(total)\n"
    )
    helpers = "".join(f"def adjust_row_{n}(row):\n{body.format(n=n)}\n\n" for n in range(10))
    return f'"""Row helpers."""\n\n\n{helpers}def {last}(rows):\n    return [r for r in rows]\n'


@requires_llama
@requires_minilm
def test_a_budget_keeps_the_names_a_code_chunk_defines_past_it(cli, model, tmp_path, monkeypatch):
    folder = tmp_path / "src"
    folder.mkdir()
    # The same first 256 tokens in both files: only the outline tells their vectors apart.
    (folder / "one.py").write_text(_helpers_module("reconcile_ledger_entries"), encoding="utf-8")
    (folder / "two.py").write_text(_helpers_module("render_invoice_pdf"), encoding="utf-8")
    assert cli("collection", "add", str(folder), "--name", "src", "--mask", "**/*.py").exit_code == 0
    monkeypatch.setenv("TANSAKU_EMBED_BUDGET", "256")
    _embed(cli)
    # Each name appears only past the first 256 tokens of its file: the vector has it only
    # through the chunk's outline (chunking/outline.py), so each query finds its own file.
    for query, path in (("reconcile_ledger_entries", "one.py"), ("render_invoice_pdf", "two.py")):
        found = cli("vsearch", query, "--json", "--min-score", "0").json()
        assert found["results"][0]["path"] == path, (query, [r["path"] for r in found["results"]])
