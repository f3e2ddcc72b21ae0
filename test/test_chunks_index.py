"""Chunks in the index: stored by update, reused while the text is unchanged, shown by `chunks`."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlean

from tansaku.store.migrations import FTS_TOKENIZER, MIGRATIONS, SCHEMA_VERSION

CODE = '''"""A small module."""

import os


class Greeter:
    def hello(self, name: str) -> str:
        return f"hello {name}"


def main() -> None:
    print(Greeter().hello(os.getcwd()))
'''


def update(cli, *args: str) -> dict:
    result = cli("update", *args, "--json")
    assert result.exit_code == 0, result.stderr
    return result.json()["collections"][0]


def test_update_stores_chunks_and_reuses_them(cli, indexed: Path):
    shown = cli("chunks", "sample/guides/backups.md", "--json").json()
    assert shown["stored"] is True and shown["strategy_used"] == "regex"
    assert shown["chunks"][0]["start_line"] == 1
    assert "".join(c["text"] for c in shown["chunks"][:1]).startswith("# Nightly backups")
    info = cli("collection", "show", "sample", "--json").json()
    assert info["chunked"] == 13 and info["chunks"] >= 13

    assert update(cli)["chunked"] == 0  # nothing changed: no text is chunked again

    target = indexed / "guides" / "backups.md"
    target.write_text(target.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    (indexed / "notes" / "ideas.md").rename(indexed / "notes" / "ideas-moved.md")
    report = update(cli)
    assert report["updated"] == ["guides/backups.md"]
    assert report["moved"] == [["notes/ideas.md", "notes/ideas-moved.md"]]
    assert report["chunked"] == 1  # the edited text only; the moved one keeps its chunks


@pytest.mark.sqlite_only("reads the SQLite file's tables")
def test_chunk_rows_of_removed_texts_are_pruned(cli, indexed: Path, index_path: Path):
    (indexed / "guides" / "backups.md").unlink()
    update(cli)
    cli("collection", "remove", "sample")
    conn = sqlean.connect(str(index_path))
    assert conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM chunk_runs").fetchone()[0] == 0


@pytest.fixture
def code(cli, tmp_path: Path) -> Path:
    folder = tmp_path / "code"
    folder.mkdir()
    (folder / "greet.py").write_text(CODE, encoding="utf-8")
    (folder / "notes.kt").write_text("fun main() {}\n", encoding="utf-8")
    assert cli("collection", "add", folder, "--name", "code", "--mask", "**/*.{py,kt}").exit_code == 0
    return folder


def test_strategy_switch_rechunks_once_and_is_saved(cli, code: Path):
    assert cli("chunks", "code/greet.py", "--json").json()["strategy_used"] == "regex"
    report = update(cli, "--chunk-strategy", "auto")
    assert report["chunked"] == 2
    assert any("no tree-sitter grammar for .kt" in w for w in report["chunk_warnings"])
    assert cli("collection", "show", "code", "--json").json()["collection"]["chunk_strategy"] == "auto"
    assert cli("chunks", "code/greet.py", "--json").json()["strategy_used"] == "ast:python"
    assert update(cli)["chunked"] == 0  # the setting was saved: a plain update keeps the chunks
    status = cli("status", "--json").json()
    info = next(c for c in status["collections"] if c["collection"]["name"] == "code")
    assert info["chunk_fallbacks"] == 1
    assert ["python", True] in status["grammars"]


def test_chunks_not_stored_yet_are_computed_and_said_so(cli, code: Path):
    assert cli("collection", "set-chunk-strategy", "code", "auto").exit_code == 0
    shown = cli("chunks", "code/greet.py", "--json").json()
    assert shown["stored"] is False
    assert "CHUNKS_NOT_STORED" in [w["code"] for w in shown["warnings"]]
    assert shown["strategy_used"] == "ast:python"
    pending = cli("status", "--json").json()["pending"]
    assert any("not chunked yet" in line for line in pending)


def test_chunks_of_a_missing_document_is_not_found(cli, indexed: Path):
    result = cli("chunks", "sample/nope.md", "--json")
    assert result.exit_code == 1
    assert result.error()["code"] == "DOC_NOT_FOUND"


@pytest.mark.parametrize("fmt", ["cli", "json", "csv", "md", "xml", "files"])
def test_chunks_render_in_every_format(cli, fmt, snapshot, indexed: Path):
    result = cli("chunks", "sample/zh/压缩.md", "--format", fmt)
    assert result.exit_code == 0
    assert result.stdout.replace(str(indexed), "/SAMPLE") == snapshot


def test_xml_chunks_parse(cli, indexed: Path):
    import xml.etree.ElementTree as ET

    root = ET.fromstring(cli("chunks", "sample/guides/install.md", "--xml").stdout)
    assert root.tag == "chunks" and root.find("chunk").text.startswith("---\ntitle:")


@pytest.mark.sqlite_only("rebuilds an old SQLite schema")
def test_version_1_index_is_migrated_by_update(cli, sample: Path, index_path: Path, config_path: Path):
    # Build the index as the previous schema version left it, then let `update` upgrade it.
    assert cli("collection", "add", sample, "--name", "sample").exit_code == 0
    conn = sqlean.connect(str(index_path), isolation_level=None)
    conn.execute("DROP TABLE turns_fts")  # version 6's full-text table of transcript turns
    blank = sqlean.connect(":memory:")
    MIGRATIONS[0](blank)
    version_1 = {row[0] for row in blank.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    later = [
        row[0]
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE TABLE%'"
        )
        if row[0] not in version_1
    ]
    for table in later:
        conn.execute(f"DROP TABLE {table}")  # what the later versions added
    # Version 5 added two FTS columns (and their stored copies): put back version 1's table.
    conn.execute("ALTER TABLE documents DROP COLUMN fts_headings")
    conn.execute("ALTER TABLE documents DROP COLUMN fts_options")
    conn.execute("DROP TABLE documents_fts")
    conn.execute(
        f"CREATE VIRTUAL TABLE documents_fts USING fts5(path, title, body, tokenize = '{FTS_TOKENIZER}',"
        " content = '')"
    )
    conn.execute(
        "INSERT INTO documents_fts (rowid, path, title, body) SELECT d.id, d.fts_path, d.fts_title,"
        " coalesce(d.fts_body, c.body) FROM documents AS d JOIN content AS c ON c.hash = d.hash"
    )
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    assert cli("search", "restore", "--json").error()["code"] == "INDEX_SCHEMA_MISMATCH"
    report = update(cli)
    assert report["chunked"] == 13 and report["unchanged"] == 13
    conn = sqlean.connect(str(index_path))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == len(MIGRATIONS)
    assert cli("search", "restore", "--json").json()["results"]
