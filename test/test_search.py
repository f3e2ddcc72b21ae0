"""Keyword search end to end: a real index file, real FTS5, the CLI in-process."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from .conftest import index_sql

pytestmark = [pytest.mark.usefixtures("indexed"), pytest.mark.both_backends]


def paths(result) -> list[str]:
    return [hit["path"] for hit in result.json()["results"]]


def test_finds_a_word_and_ranks_the_title_match_first(cli):
    result = cli("search", "compression", "--json")
    assert result.exit_code == 0
    data = result.json()
    assert data["mode"] == "search"
    assert data["results"][0]["path"] == "guides/compression.md"
    assert data["results"][0]["title"] == "Compression settings"
    assert 0 < data["results"][0]["score"] < 1
    assert data["warnings"] == []


def test_porter_stemming_matches_other_word_forms(cli):
    assert "guides/backups.md" in paths(cli("search", "restoring", "--json"))
    assert "guides/backups.md" in paths(cli("search", "restored", "--json"))


def test_all_terms_are_required_when_some_document_has_them(cli):
    data = cli("search", "restore", "VPN", "--json").json()
    assert {hit["path"] for hit in data["results"]} == {
        "notes/2024-03-meeting.md",
        "notes/2024-04-meeting.md",
    }
    assert all(hit["matched_terms"] == 2 for hit in data["results"])


def test_phrase_requires_adjacent_words(cli):
    assert paths(cli("search", '"metered connections"', "--json"))
    assert paths(cli("search", '"connections metered"', "--json")) == []


def test_negation_excludes_documents(cli):
    with_neg = paths(cli("search", "restore -VPN", "--json"))
    assert "guides/backups.md" in with_neg
    assert not any(p.startswith("notes/2024") for p in with_neg)


def test_prefix_search(cli):
    assert "guides/compression.md" in paths(cli("search", "compress*", "--json"))


def test_partial_match_ranks_what_matches_and_warns(cli):
    data = cli("search", "restore", "snapshots", "zebrafish", "--json").json()
    assert data["results"], "some documents contain two of the three terms"
    assert [w["code"] for w in data["warnings"]] == ["PARTIAL_MATCH"]
    assert "zebrafish found nowhere" in data["warnings"][0]["message"]
    assert data["results"][0]["matched_terms"] == 2
    assert all(hit["total_terms"] == 3 for hit in data["results"])
    # A term that is nowhere adds nothing: the ranking is that of the terms that exist.
    full = cli("search", "restore", "snapshots", "--json").json()["results"]
    assert [hit["path"] for hit in data["results"][: len(full)]] == [hit["path"] for hit in full]


def test_two_terms_found_apart_are_a_partial_match(cli):
    # No sample document has both words: a short query needs both, so this is a partial match.
    data = cli("search", "zstd", "VPN", "--json").json()
    assert {hit["path"] for hit in data["results"]} == {
        "guides/compression.md",
        "zh/压缩.md",
        "notes/2024-03-meeting.md",
        "notes/2024-04-meeting.md",
    }
    assert [w["code"] for w in data["warnings"]] == ["PARTIAL_MATCH"]
    assert all(hit["matched_terms"] == 1 for hit in data["results"])


def test_no_match_at_all_is_an_honest_empty_result(cli):
    result = cli("search", "zebrafish", "--json")
    assert result.exit_code == 0
    assert result.json()["results"] == []
    assert result.json()["total"] == 0
    assert "No results." in cli("search", "zebrafish").stdout


@pytest.mark.parametrize(
    "query",
    [
        'restore"',
        '"unbalanced phrase',
        "AND OR NOT",
        "restore AND",
        "(restore",
        "restore)",
        "col:umn",
        "NEAR(a b)",
        "^restore",
        "+restore",
        "restore *",
        "💾 restore",
        "\\ restore",
        "{restore}",
        "'restore'",
        "restore --",
    ],
)
def test_fts_syntax_in_a_query_is_just_text(cli, query):
    result = cli("search", query, "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    if "restore" in query.lower():
        assert data["results"], f"{query!r} should still find restore"


def test_a_query_with_nothing_to_search_is_a_usage_error(cli):
    for query in ("-restore", "***", "💾", "()"):
        result = cli("search", "--json", "--", query)
        assert result.exit_code == 2, query
        assert result.error()["code"] == "QUERY_EMPTY"
        assert result.stdout == ""


def test_chinese_two_character_word_finds_its_document(cli):
    data = cli("search", "压缩", "--json").json()
    assert paths_of(data)[0] == "zh/压缩.md"
    data = cli("search", "权限", "--json").json()
    assert paths_of(data)[0] == "zh/权限.md"
    assert data["results"][0]["snippet"]["lines"]


def test_chinese_word_inside_a_sentence_and_mixed_query(cli):
    # 读取 appears only inside a longer sentence of zh/权限.md.
    assert paths(cli("search", "读取", "--json")) == ["zh/权限.md"]
    assert "zh/压缩.md" in paths(cli("search", "zstd", "压缩", "--json"))


def paths_of(data: dict) -> list[str]:
    return [hit["path"] for hit in data["results"]]


def test_snippet_has_the_right_source_line_number(cli, indexed: Path):
    hit = cli("search", "integrity", "--json").json()["results"][0]
    source = (indexed / hit["path"]).read_text(encoding="utf-8").split("\n")
    start = hit["snippet"]["start_line"]
    for offset, line in enumerate(hit["snippet"]["lines"]):
        assert source[start - 1 + offset] == line
    assert any("integrity" in line for line in hit["snippet"]["lines"])


def test_line_numbers_flag_prefixes_snippet_lines(cli):
    out = cli("search", "integrity", "--line-numbers").stdout
    hit = cli("search", "integrity", "--json").json()["results"][0]
    start = hit["snippet"]["start_line"]
    numbered = [f"{start + i}: {line}" for i, line in enumerate(hit["snippet"]["lines"]) if line]
    assert numbered and all(line in out for line in numbered)
    assert "## Checking integrity" in cli("search", "integrity").stdout
    assert ": ## Checking integrity" not in cli("search", "integrity").stdout


def test_limits_default_and_are_stated(cli):
    terminal = cli("search", "backup")
    data = cli("search", "backup", "--json").json()
    assert data["limit"] == 20
    assert data["total"] >= 6
    assert terminal.stdout.count("tansaku://") == 5
    assert f"5 of {data['total']} results" in terminal.stdout
    assert len(cli("search", "backup", "-n", "2", "--json").json()["results"]) == 2
    everything = cli("search", "backup", "--all", "--json").json()
    assert everything["limit"] is None
    assert len(everything["results"]) == everything["total"]


def test_min_score_filters(cli):
    data = cli("search", "backup", "--all", "--json").json()
    scores = [hit["score"] for hit in data["results"]]
    cut = sorted(scores)[len(scores) // 2]
    kept = cli("search", "backup", "--all", "--min-score", str(cut), "--json").json()["results"]
    assert kept and all(hit["score"] >= cut for hit in kept)
    assert len(kept) < len(scores)


def test_full_returns_the_whole_body(cli, indexed: Path):
    hit = cli("search", "compression", "--full", "--json").json()["results"][0]
    assert hit["body"] == (indexed / "guides/compression.md").read_text(encoding="utf-8")
    assert "body" not in cli("search", "compression", "--json").json()["results"][0]


def test_full_path_shows_disk_paths(cli, indexed: Path):
    out = cli("search", "compression", "--files", "--full-path").stdout
    assert str(indexed / "guides" / "compression.md") in out


def test_stale_result_is_flagged_when_the_file_changed(cli, indexed: Path):
    target = indexed / "guides" / "compression.md"
    assert cli("search", "compression", "--json").json()["results"][0]["stale"] is False
    target.write_text(target.read_text(encoding="utf-8") + "\nmore\n", encoding="utf-8")
    assert cli("search", "compression", "--json").json()["results"][0]["stale"] is True
    assert "[stale]" in cli("search", "compression").stdout
    cli("update")
    assert cli("search", "compression", "--json").json()["results"][0]["stale"] is False


def test_deleted_file_is_stale_until_update(cli, indexed: Path):
    os.remove(indexed / "guides" / "compression.md")
    hit = cli("search", "compression", "--json").json()["results"][0]
    assert hit["path"] == "guides/compression.md" and hit["stale"] is True


def test_collection_filter_keeps_a_small_collection_from_being_starved(cli, tmp_path: Path):
    big = tmp_path / "big"
    big.mkdir()
    for i in range(40):
        (big / f"doc{i}.md").write_text(f"# Backup {i}\n\nbackup backup backup note {i}\n", encoding="utf-8")
    assert cli("collection", "add", big, "--name", "big").exit_code == 0
    unscoped = cli("search", "backup", "-n", "5", "--json").json()
    assert {hit["collection"] for hit in unscoped["results"]} == {"big"}
    scoped = cli("search", "backup", "-c", "sample", "-n", "5", "--json").json()
    assert scoped["results"] and {hit["collection"] for hit in scoped["results"]} == {"sample"}
    assert scoped["collections"] == ["sample"]
    both = cli("search", "backup", "-c", "sample", "-c", "big", "--all", "--json").json()
    assert {hit["collection"] for hit in both["results"]} == {"sample", "big"}


def test_unknown_collection_is_an_error_not_an_empty_result(cli):
    result = cli("search", "backup", "-c", "nope", "--json")
    assert result.exit_code == 1  # not found, as README's exit codes say
    assert result.error()["code"] == "COLLECTION_NOT_FOUND"


def test_results_carry_docid_matching_content_hash(cli, indexed: Path):
    import hashlib

    hit = cli("search", "compression", "--json").json()["results"][0]
    digest = hashlib.sha256((indexed / hit["path"]).read_bytes()).hexdigest()
    assert hit["docid"] == "#" + digest[:6]


@pytest.mark.parametrize("fmt", ["cli", "json", "csv", "md", "xml", "files"])
def test_every_format_renders_a_real_search(cli, fmt, snapshot, indexed: Path):
    cli("context", "add", "/", "Sample notes about backups")
    result = cli("search", "restore", "--format", fmt)
    assert result.exit_code == 0
    # took_ms and the temporary folder vary between runs; everything else is pinned.
    text = re.sub(r'("took_ms": )[0-9.]+', r"\g<1>0", result.stdout)
    text = re.sub(r'took_ms="[0-9.]+"', 'took_ms="0"', text)
    assert text.replace(str(indexed), "/SAMPLE") == snapshot


def test_scores_after_updates_equal_a_fresh_index(cli, indexed: Path, tmp_path: Path, monkeypatch):
    """Deleting and re-inserting FTS rows must keep BM25's statistics exact (regression: stale
    row counts after updates inflated scores in untouched collections)."""
    other = tmp_path / "other"
    other.mkdir()
    for i in range(30):
        (other / f"n{i}.md").write_text(f"# Note {i}\n\nrestore backup item {i}\n", encoding="utf-8")
    assert cli("collection", "add", other, "--name", "other").exit_code == 0
    for i in range(30):
        (other / f"n{i}.md").write_text(f"# Note {i}\n\nsomething else entirely {i} {i}\n", encoding="utf-8")
    for i in range(10):
        (other / f"n{i}.md").rename(other / f"moved{i}.md")
    for i in range(10, 15):
        (other / f"n{i}.md").unlink()
    chinese = indexed / "zh" / "恢复.md"
    chinese.write_text(chinese.read_text(encoding="utf-8") + "\n快照恢复完成。\n", encoding="utf-8")
    assert cli("update").exit_code == 0
    updated = cli("search", "restore snapshots", "-c", "sample", "--all", "--json").json()["results"]
    updated_zh = cli("search", "快照", "--all", "--json").json()["results"]

    monkeypatch.setenv("TANSAKU_INDEX_PATH", str(tmp_path / "fresh.sqlite"))
    monkeypatch.setenv("TANSAKU_CONFIG_DIR", str(tmp_path / "fresh-config"))
    cli("collection", "add", indexed, "--name", "sample")
    cli("collection", "add", other, "--name", "other")
    fresh = cli("search", "restore snapshots", "-c", "sample", "--all", "--json").json()["results"]
    fresh_zh = cli("search", "快照", "--all", "--json").json()["results"]
    assert [(h["path"], h["score"]) for h in updated] == [(h["path"], h["score"]) for h in fresh]
    assert [(h["path"], h["score"]) for h in updated_zh] == [(h["path"], h["score"]) for h in fresh_zh]
    assert updated and updated_zh


def test_an_older_indexer_version_re_reads_unchanged_files(cli, indexed: Path, index_path: Path):
    with index_sql(index_path) as conn:
        conn.execute("UPDATE documents SET title = 'stale title'")
        conn.execute("UPDATE collection_state SET indexer_version = 1")
    report = cli("update", "--json").json()["collections"][0]
    assert len(report["updated"]) == 13 and report["unchanged"] == 0
    assert cli("search", "compression", "--json").json()["results"][0]["title"] == "Compression settings"
    again = cli("update", "--json").json()["collections"][0]
    assert again["unchanged"] == 13 and again["updated"] == []
