"""The index as a file: how it is created, and what each command does with a missing, newer or
damaged one. Read-only commands must never create or change it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import sqlean

from tansaku.store.migrations import MIGRATIONS, SCHEMA_VERSION

# The `cli` fixture's results (conftest.CliResult); not imported so the tests run whether or not
# test/ is a package.
CliResult = Any
Cli = Callable[..., CliResult]

GARBAGE = b"this is not an SQLite database, just some bytes\n" * 200


def ok_json(result: CliResult) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json()


def failed(result: CliResult, code: str, exit_code: int = 3) -> dict:
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    assert result.stdout == ""
    error = result.error()
    assert error["code"] == code, error
    return error


def snapshot(path: Path) -> tuple[bytes, int]:
    return path.read_bytes(), path.stat().st_mtime_ns


def set_user_version(index_path: Path, version: int) -> None:
    conn = sqlean.connect(index_path, isolation_level=None)
    try:
        conn.execute(f"PRAGMA user_version = {version}")
    finally:
        conn.close()


def warning_codes(data: dict) -> list[str]:
    return [w["code"] for w in data["warnings"]]


def write_config(config_path: Path, sample: Path) -> None:
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(f'[collections.sample]\npath = "{sample}"\n', encoding="utf-8")


# --- a fresh index ---------------------------------------------------------------------------------


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_fresh_index_has_the_schema_version_and_wal(cli: Cli, indexed: Path, index_path: Path) -> None:
    conn = sqlean.connect(index_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 13
    finally:
        conn.close()


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_status_of_a_fresh_index(cli: Cli, indexed: Path, index_path: Path) -> None:
    data = ok_json(cli("status", "--json"))
    assert data["index_exists"] is True
    assert data["index_path"] == str(index_path)
    assert data["index_bytes"] == index_path.stat().st_size > 0
    assert data["schema_version"] == data["code_schema_version"] == SCHEMA_VERSION
    assert data["warnings"] == []
    assert data["pending"] == []
    [info] = data["collections"]
    assert (info["collection"]["name"], info["documents"]) == ("sample", 13)


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_no_stray_files_beside_a_new_index(cli: Cli, indexed: Path, index_path: Path) -> None:
    names = {p.name for p in index_path.parent.iterdir()}
    # SQLite's own WAL companions may stay; temporary build files and the writer note may not.
    assert names <= {index_path.name, index_path.name + "-wal", index_path.name + "-shm"}, names
    assert index_path.name in names


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_no_stray_files_after_updates(cli: Cli, indexed: Path, index_path: Path) -> None:
    (indexed / "new.md").write_text("# new\n", encoding="utf-8")
    assert cli("update", "--json").exit_code == 0
    assert cli("collection", "rename", "sample", "other", "--json").exit_code == 0
    names = {p.name for p in index_path.parent.iterdir()}
    assert names <= {index_path.name, index_path.name + "-wal", index_path.name + "-shm"}, names


def test_update_with_collections_but_no_index_creates_it(
    cli: Cli, sample: Path, config_path: Path, index_path: Path
) -> None:
    write_config(config_path, sample)
    data = ok_json(cli("update", "--json"))
    assert len(data["collections"][0]["added"]) == 13
    assert index_path.exists()


# --- status is read-only -----------------------------------------------------------------------------


def test_status_never_creates_a_missing_index(cli: Cli, index_path: Path) -> None:
    data = ok_json(cli("status", "--json"))
    assert data["index_exists"] is False
    assert data["index_bytes"] == 0
    assert data["schema_version"] is None
    assert warning_codes(data) == ["INDEX_MISSING"]
    assert "collection add" in data["warnings"][0]["message"]
    assert not index_path.exists()
    assert not index_path.parent.exists()


def test_status_with_a_configured_but_unindexed_collection(
    cli: Cli, sample: Path, config_path: Path, index_path: Path
) -> None:
    write_config(config_path, sample)
    data = ok_json(cli("status", "--json"))
    assert warning_codes(data) == ["INDEX_MISSING"]
    assert [i["collection"]["name"] for i in data["collections"]] == ["sample"]
    assert not index_path.exists()
    text = cli("status").stdout
    assert "(not created yet)" in text


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_status_never_changes_an_existing_index(cli: Cli, indexed: Path, index_path: Path) -> None:
    (indexed / "notes" / "ideas.md").unlink()
    (indexed / "new.md").write_text("# new\n", encoding="utf-8")
    before = snapshot(index_path)
    data = ok_json(cli("status", "--json"))
    assert snapshot(index_path) == before
    # It did look: the pending work is reported, not done.
    assert data["pending"] == ["sample: 1 new, 0 changed, 1 deleted on disk; run `tansaku update -c sample`"]
    assert ok_json(cli("status", "--json"))["pending"] == data["pending"]


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_search_never_changes_the_index(cli: Cli, indexed: Path, index_path: Path) -> None:
    before = snapshot(index_path)
    assert ok_json(cli("search", "backups", "--json"))["results"]
    assert ok_json(cli("ls", "sample", "--json"))
    assert snapshot(index_path) == before


# --- missing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [("search", "backups"), ("get", "sample/README.md"), ("ls", "sample")],
    ids=" ".join,
)
def test_read_commands_without_an_index(
    cli: Cli, sample: Path, config_path: Path, index_path: Path, args: tuple[str, ...]
) -> None:
    write_config(config_path, sample)
    error = failed(cli(*args, "--json"), "INDEX_MISSING")
    assert str(index_path) in error["message"]
    assert "collection add" in error["hint"]
    assert not index_path.exists()


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_search_without_index_or_config(cli: Cli, index_path: Path, config_path: Path) -> None:
    error = failed(cli("search", "anything", "--json"), "INDEX_MISSING")
    assert "collection add" in error["hint"]
    assert not index_path.exists()
    assert not config_path.exists()


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_search_without_index_in_plain_text(cli: Cli) -> None:
    result = cli("search", "anything")
    assert result.exit_code == 3
    assert result.stdout == ""
    assert result.stderr.startswith("error: no index at ")
    assert "hint: " in result.stderr and "collection add" in result.stderr


# --- newer schema -------------------------------------------------------------------------------------


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_newer_schema_is_refused_by_search(cli: Cli, indexed: Path, index_path: Path) -> None:
    set_user_version(index_path, 99)
    before = snapshot(index_path)
    error = failed(cli("search", "backups", "--json"), "INDEX_SCHEMA_MISMATCH")
    assert "99" in error["message"]
    assert str(SCHEMA_VERSION) in error["message"]
    assert snapshot(index_path) == before


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_newer_schema_is_not_touched_by_update(cli: Cli, indexed: Path, index_path: Path) -> None:
    set_user_version(index_path, 99)
    (indexed / "new.md").write_text("# new\n", encoding="utf-8")
    before = snapshot(index_path)
    failed(cli("update", "--json"), "INDEX_SCHEMA_MISMATCH")
    failed(cli("collection", "remove", "sample", "--json"), "INDEX_SCHEMA_MISMATCH")
    assert snapshot(index_path) == before


@pytest.mark.sqlite_only("opens the SQLite file through store.db")
def test_newer_schema_is_a_status_warning(cli: Cli, indexed: Path, index_path: Path) -> None:
    set_user_version(index_path, 99)
    data = ok_json(cli("status", "--json"))
    assert warning_codes(data) == ["INDEX_SCHEMA_MISMATCH"]
    assert data["index_exists"] is True
    assert data["code_schema_version"] == SCHEMA_VERSION


def build_old_index(index_path: Path, version: int) -> None:
    """An index as an older tansaku left it: only the first `version` migrations applied."""
    index_path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlean.connect(index_path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        for number, step in enumerate(MIGRATIONS[:version], start=1):
            step(conn)
            conn.execute(f"PRAGMA user_version = {number}")
    finally:
        conn.close()


@pytest.mark.skipif(SCHEMA_VERSION < 2, reason="needs a schema with an older version to upgrade from")
def test_older_schema_is_upgraded_by_update_only(
    cli: Cli, sample: Path, config_path: Path, index_path: Path
) -> None:
    write_config(config_path, sample)
    build_old_index(index_path, SCHEMA_VERSION - 1)
    before = snapshot(index_path)
    error = failed(cli("search", "backups", "--json"), "INDEX_SCHEMA_MISMATCH")
    assert "tansaku update" in error["hint"]
    assert warning_codes(ok_json(cli("status", "--json"))) == ["INDEX_SCHEMA_MISMATCH"]
    assert snapshot(index_path) == before

    assert len(ok_json(cli("update", "--json"))["collections"][0]["added"]) == 13
    conn = sqlean.connect(index_path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        conn.close()
    assert ok_json(cli("search", "ninety", "--json"))["results"]


def test_empty_index_file_is_initialised_by_update(
    cli: Cli, sample: Path, config_path: Path, index_path: Path
) -> None:
    # SQLite reads a 0-byte file as an empty database at version 0: old, not damaged.
    write_config(config_path, sample)
    index_path.parent.mkdir(parents=True)
    index_path.write_bytes(b"")
    failed(cli("search", "backups", "--json"), "INDEX_SCHEMA_MISMATCH")
    assert index_path.read_bytes() == b""
    assert len(ok_json(cli("update", "--json"))["collections"][0]["added"]) == 13


# --- damaged ------------------------------------------------------------------------------------------


@pytest.fixture
def garbage_index(index_path: Path) -> Path:
    index_path.parent.mkdir(parents=True, exist_ok=True)
    index_path.write_bytes(GARBAGE)
    return index_path


@pytest.mark.parametrize(
    "args",
    [("search", "backups"), ("get", "#abcdef"), ("ls", "sample"), ("update",)],
    ids=" ".join,
)
def test_garbage_index_is_corrupt(
    cli: Cli, sample: Path, config_path: Path, garbage_index: Path, args: tuple[str, ...]
) -> None:
    write_config(config_path, sample)
    error = failed(cli(*args, "--json"), "INDEX_CORRUPT")
    assert str(garbage_index) in error["message"]
    assert "rebuild" in error["hint"]
    assert garbage_index.read_bytes() == GARBAGE


def test_garbage_index_is_a_status_error(
    cli: Cli, sample: Path, config_path: Path, garbage_index: Path
) -> None:
    # Issue 22: "0 docs, never indexed" with exit 0 hid the damage; status says it as doctor does.
    write_config(config_path, sample)
    error = failed(cli("status", "--json"), "INDEX_CORRUPT")
    assert str(garbage_index) in error["message"]
    assert garbage_index.read_bytes() == GARBAGE
    text = cli("status")
    assert text.exit_code == 3
    assert "damaged" in text.stderr and "never indexed" not in text.stdout


def test_corrupt_index_can_be_moved_aside_and_rebuilt(
    cli: Cli, sample: Path, config_path: Path, garbage_index: Path
) -> None:
    # What the hint says to do.
    write_config(config_path, sample)
    garbage_index.rename(garbage_index.with_name("broken.sqlite"))
    data = ok_json(cli("update", "--json"))
    assert len(data["collections"][0]["added"]) == 13
    assert ok_json(cli("search", "ninety", "--json"))["results"]


def test_errors_are_one_json_object_on_stderr(cli: Cli, garbage_index: Path) -> None:
    result = cli("search", "backups", "--json")
    assert result.stdout == ""
    payload = json.loads(result.stderr)
    assert list(payload) == ["error"]
    assert {"code", "message", "hint"} <= set(payload["error"])
    assert result.stderr.endswith("}\n")
