"""Incremental updates through the CLI: what changes, what is skipped, hooks, failures, locking."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlean

from .conftest import index_sql

pytestmark = pytest.mark.both_backends

# The `cli` fixture's results (conftest.CliResult); not imported so the tests run whether or not
# test/ is a package.
CliResult = Any
Cli = Callable[..., CliResult]
SAMPLE = Path(__file__).resolve().parent.parent / "fixtures" / "sample"

SAMPLE_COUNT = len(list(SAMPLE.rglob("*.md")))
SENTINEL = "2000-01-01T00:00:00Z"


def ok_json(result: CliResult, exit_code: int = 0) -> dict:
    assert result.exit_code == exit_code, (result.stdout, result.stderr)
    data = result.json()
    assert isinstance(data, dict)
    return data


def update(cli: Cli, *args: str, exit_code: int = 0, cwd: Path | None = None) -> dict:
    """Run `update --json` and return the single collection's report."""
    data = ok_json(cli("update", "--json", *args, cwd=cwd), exit_code)
    [collection] = data["collections"]
    return collection


def by_name(data: dict) -> dict[str, dict]:
    return {c["name"]: c for c in data["collections"]}


def rows(index_path: Path, collection: str = "sample") -> dict[str, tuple]:
    """path -> (id, hash, size, mtime_ns, indexed_at), straight from the index."""
    with index_sql(index_path) as conn:
        return {
            r[0]: tuple(r[1:])
            for r in conn.execute(
                "SELECT path, id, hash, size, mtime_ns, indexed_at FROM documents WHERE collection = ?",
                (collection,),
            ).fetchall()
        }


def stamp(index_path: Path) -> None:
    """Mark every row as indexed long ago, so any re-indexing shows as a changed indexed_at."""
    with index_sql(index_path) as conn:
        conn.execute("UPDATE documents SET indexed_at = ?", (SENTINEL,))


def paths_for(cli: Cli, query: str, *args: str) -> list[str]:
    data = ok_json(cli("search", query, "--all", "--json", *args))
    return [h["path"] for h in data["results"]]


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data, encoding="utf-8")
    return path


def set_config_setting(config_path: Path, line: str) -> None:
    # By hand, as a person would: the CLI has no command for settings.
    text = config_path.read_text(encoding="utf-8")
    config_path.write_text(f"[settings]\n{line}\n\n{text}", encoding="utf-8")


EMPTY = {"added": [], "updated": [], "moved": [], "removed": [], "repaired": [], "skipped": []}


def changes(report: dict) -> dict:
    return {key: report[key] for key in EMPTY}


# --- what changed -----------------------------------------------------------------------------------


def test_no_change_update_touches_nothing(cli: Cli, indexed: Path, index_path: Path) -> None:
    stamp(index_path)
    before = rows(index_path)
    report = update(cli)
    assert report["unchanged"] == SAMPLE_COUNT
    assert changes(report) == EMPTY
    assert report["failed"] is None
    assert rows(index_path) == before  # same ids, hashes, stats and the old indexed_at


def test_unchanged_stat_means_the_file_is_not_read(cli: Cli, indexed: Path, index_path: Path) -> None:
    # Same size and mtime but different bytes: an update that read the file would see it.
    path = indexed / "guides" / "compression.md"
    old = path.read_bytes()
    st = path.stat()
    new = old.replace(b"zstd", b"lz4x")
    assert len(new) == len(old) and new != old
    path.write_bytes(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    report = update(cli)
    assert report["unchanged"] == SAMPLE_COUNT
    assert changes(report) == EMPTY
    assert "guides/compression.md" in paths_for(cli, "zstd")
    assert paths_for(cli, "lz4x") == []


def test_edit_updates_one_document(cli: Cli, indexed: Path, index_path: Path) -> None:
    path = indexed / "guides" / "backups.md"
    assert "guides/backups.md" in paths_for(cli, "ninety")
    old_hash = rows(index_path)["guides/backups.md"][1]
    write(path, "# Nightly backups\n\nBackups now keep snapshots for a quokka's lifetime.\n")

    report = update(cli)
    assert report["updated"] == ["guides/backups.md"]
    assert report["unchanged"] == SAMPLE_COUNT - 1
    assert {k: v for k, v in changes(report).items() if k != "updated"} == {
        k: v for k, v in EMPTY.items() if k != "updated"
    }
    assert paths_for(cli, "quokka") == ["guides/backups.md"]
    assert "guides/backups.md" not in paths_for(cli, "ninety")
    assert rows(index_path)["guides/backups.md"][1] != old_hash


def test_delete_removes_the_document(cli: Cli, indexed: Path) -> None:
    (indexed / "notes" / "ideas.md").unlink()
    report = update(cli)
    assert report["removed"] == ["notes/ideas.md"]
    assert report["unchanged"] == SAMPLE_COUNT - 1
    listed = [e["virtual_path"] for e in ok_json_list(cli("ls", "sample/notes", "--json"))]
    assert listed == [
        "tansaku://sample/notes/2024-03-meeting.md",
        "tansaku://sample/notes/2024-04-meeting.md",
    ]
    result = cli("get", "sample/notes/ideas.md", "--json")
    assert result.exit_code == 1
    assert result.error()["code"] == "DOC_NOT_FOUND"


def ok_json_list(result: CliResult) -> list:
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert isinstance(data, list)
    return data


def test_touch_without_content_change_is_unchanged(cli: Cli, indexed: Path, index_path: Path) -> None:
    stamp(index_path)
    path = indexed / "reference" / "config.md"
    before = rows(index_path)["reference/config.md"]
    newer = path.stat().st_mtime_ns + 5_000_000_000
    os.utime(path, ns=(newer, newer))

    report = update(cli)
    assert report["updated"] == []
    assert report["unchanged"] == SAMPLE_COUNT
    assert changes(report) == EMPTY
    after = rows(index_path)["reference/config.md"]
    # The same row and content, but the new mtime is remembered so the next update skips it unread.
    assert after[:3] == before[:3]
    assert after[3] == newer
    assert after[4] == SENTINEL


def test_move_keeps_the_docid(cli: Cli, indexed: Path, index_path: Path) -> None:
    docid = "#" + rows(index_path)["guides/backups.md"][1][:6]
    target = indexed / "archive" / "old-backups.md"
    target.parent.mkdir()
    (indexed / "guides" / "backups.md").rename(target)

    report = update(cli)
    assert report["moved"] == [["guides/backups.md", "archive/old-backups.md"]]
    assert report["added"] == []
    assert report["removed"] == []
    assert report["unchanged"] == SAMPLE_COUNT - 1

    hits = ok_json(cli("search", "ninety", "--all", "--json"))["results"]
    assert [(h["path"], h["docid"]) for h in hits] == [("archive/old-backups.md", docid)]
    assert hits[0]["disk_path"] == str(target)
    got = ok_json(cli("get", docid, "--json"))
    assert got["path"] == "archive/old-backups.md"
    assert "guides/backups.md" not in rows(index_path)


def test_move_is_found_by_its_new_path_words(cli: Cli, indexed: Path) -> None:
    (indexed / "guides" / "backups.md").rename(indexed / "guides" / "zeppelin.md")
    update(cli)
    # The path is indexed too: the new name must be searchable, the old one gone.
    assert paths_for(cli, "zeppelin") == ["guides/zeppelin.md"]


def test_new_file_is_added(cli: Cli, indexed: Path) -> None:
    write(indexed / "notes" / "new.md", "# Fresh\n\nA note about a capybara.\n")
    report = update(cli)
    assert report["added"] == ["notes/new.md"]
    assert report["unchanged"] == SAMPLE_COUNT
    assert paths_for(cli, "capybara") == ["notes/new.md"]


def test_update_of_one_collection_leaves_the_others(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    other = shutil.copytree(SAMPLE, tmp_path / "other")
    assert ok_json(cli("collection", "add", other, "--json"))["ok"]
    write(indexed / "a.md", "# a\nwombat\n")
    write(other / "b.md", "# b\nwombat\n")
    data = ok_json(cli("update", "-c", "sample", "--json"))
    assert list(by_name(data)) == ["sample"]
    assert paths_for(cli, "wombat") == ["a.md"]


# --- awkward files ------------------------------------------------------------------------------------


def skipped(report: dict) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in report["skipped"]}


def test_binary_file_is_skipped(cli: Cli, indexed: Path) -> None:
    write(indexed / "x.md", b"# looks like markdown\x00\x01\x02 platypus\n")
    report = update(cli)
    assert skipped(report) == {"x.md": "binary"}
    assert report["added"] == []
    assert paths_for(cli, "platypus") == []


def test_one_bad_byte_is_repaired_and_indexed(cli: Cli, indexed: Path) -> None:
    write(indexed / "latin.md", b"# Caf\xe9 notes\n\nThe narwhal menu is on the wall.\n")
    report = update(cli)
    assert report["added"] == ["latin.md"]
    assert report["repaired"] == ["latin.md"]
    assert report["skipped"] == []
    assert paths_for(cli, "narwhal") == ["latin.md"]
    got = ok_json(cli("get", "sample/latin.md", "--json"))
    assert got["title"] == "Caf\ufffd notes"


def test_mostly_invalid_utf8_is_skipped(cli: Cli, indexed: Path) -> None:
    write(indexed / "garbled.md", b"# t\n" + b"\xff\xfe\x80" * 200 + b"\n")
    report = update(cli)
    assert skipped(report) == {"garbled.md": "invalid-utf8"}
    assert report["added"] == []
    assert report["repaired"] == []


def test_file_over_the_size_limit_is_skipped(cli: Cli, indexed: Path, config_path: Path) -> None:
    set_config_setting(config_path, "max_file_bytes = 1000")
    write(indexed / "big.md", "# Big\n" + "aardvark " * 200)
    write(indexed / "small.md", "# Small\naardvark\n")
    report = update(cli)
    reasons = skipped(report)
    assert list(reasons) == ["big.md"]
    assert reasons["big.md"].startswith("too-large")
    assert report["added"] == ["small.md"]
    assert paths_for(cli, "aardvark") == ["small.md"]
    # A later config write by the CLI keeps the hand-set limit.
    ok_json(cli("collection", "exclude", "sample", "--json"))
    assert "max_file_bytes = 1000" in config_path.read_text(encoding="utf-8")


def test_file_that_grows_past_the_limit_leaves_the_index(cli: Cli, indexed: Path, config_path: Path) -> None:
    write(indexed / "grow.md", "# Grow\nmeerkat\n")
    assert update(cli)["added"] == ["grow.md"]
    set_config_setting(config_path, "max_file_bytes = 1000")
    write(indexed / "grow.md", "# Grow\nmeerkat\n" + "x " * 1000)
    report = update(cli)
    assert skipped(report)["grow.md"].startswith("too-large")
    assert report["removed"] == ["grow.md"]
    assert paths_for(cli, "meerkat") == []


def test_symlink_loop_and_outside_link_are_skipped(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / "secret.md", "# Secret\nmongoose\n")
    (indexed / "loop.md").symlink_to("loop.md")
    (indexed / "guides" / "up").symlink_to("..")
    (indexed / "ext").symlink_to(outside)
    (indexed / "handbook").symlink_to("guides")  # a sibling, walked already: not a loop
    write(indexed / "fine.md", "# Fine\nokapi\n")

    data = ok_json(cli("update", "--json"))
    assert data["ok"] is True
    [report] = data["collections"]
    assert skipped(report) == {
        "ext/": "symlink-outside-root",
        "guides/up/": "symlink-loop",
        "handbook/": "symlink-duplicate",
        "loop.md": "symlink-loop",
    }
    assert report["added"] == ["fine.md"]
    assert report["unchanged"] == SAMPLE_COUNT
    assert paths_for(cli, "mongoose") == []
    assert paths_for(cli, "okapi") == ["fine.md"]


def test_a_folder_link_sorting_before_its_target_indexes_each_file_once(cli: Cli, tmp_path: Path) -> None:
    # Issue 38: "a -> zoo" is walked first, but zoo/ is walked under its own name too; the link
    # is an alias, so the documents are the distinct files, at their real paths.
    folder = tmp_path / "linked"
    write(folder / "zoo" / "one.md", "# One\nquokka\n")
    write(folder / "zoo" / "deep" / "two.md", "# Two\ntapir\n")
    write(folder / "top.md", "# Top\nnumbat\n")
    (folder / "a").symlink_to("zoo")
    (folder / "archive").symlink_to(".attic")  # a hidden folder: the first link is the way in
    (folder / "backup").symlink_to(".attic")
    write(folder / ".attic" / "old.md", "# Old\nbilby\n")
    distinct = ["archive/old.md", "top.md", "zoo/deep/two.md", "zoo/one.md"]

    data = ok_json(cli("collection", "add", folder, "--name", "linked", "--json"))
    [report] = data["collections"]
    assert report["added"] == distinct
    assert skipped(report) == {"a/": "symlink-duplicate", "backup/": "symlink-duplicate"}
    info = ok_json(cli("collection", "show", "linked", "--json"))
    assert info["documents"] == len(distinct)
    assert paths_for(cli, "quokka") == ["zoo/one.md"]
    assert paths_for(cli, "bilby") == ["archive/old.md"]

    again = update(cli)
    assert again["added"] == [] and again["removed"] == []
    assert again["unchanged"] == len(distinct)
    assert skipped(again) == skipped(report)
    assert ok_json(cli("status", "--json"))["pending"] == []


def test_cli_update_output_names_skipped_and_repaired(cli: Cli, indexed: Path) -> None:
    write(indexed / "x.md", b"\x00")
    write(indexed / "latin.md", b"caf\xe9\n")
    result = cli("update")
    assert result.exit_code == 0, result.stderr
    assert "  skipped x.md: binary" in result.stdout
    assert "  repaired (invalid UTF-8 replaced with U+FFFD): latin.md" in result.stdout
    assert "added 1, updated 0, moved 0, unchanged 13, removed 0, skipped 1" in result.stdout


# --- dry run -----------------------------------------------------------------------------------------


@pytest.mark.sqlite_only("compares the SQLite file byte for byte")
def test_dry_run_reports_exactly_what_update_does(cli: Cli, indexed: Path, index_path: Path) -> None:
    write(indexed / "guides" / "backups.md", "# Nightly backups\n\nNow with a pangolin.\n")
    (indexed / "notes" / "ideas.md").unlink()
    (indexed / "reference" / "errors.md").rename(indexed / "errors-moved.md")
    write(indexed / "added.md", "# Added\nnew words\n")
    write(indexed / "bin.md", b"\x00\x01")
    write(indexed / "latin.md", b"caf\xe9 tapir\n")
    stat_before = index_path.stat()
    bytes_before = index_path.read_bytes()

    dry = ok_json(cli("update", "--dry-run", "--json"))
    assert dry["dry_run"] is True
    assert index_path.read_bytes() == bytes_before
    assert index_path.stat().st_mtime_ns == stat_before.st_mtime_ns
    assert paths_for(cli, "pangolin") == []
    assert "guides/backups.md" in paths_for(cli, "ninety")
    assert "notes/ideas.md" in [e["virtual_path"][len("tansaku://sample/") :] for e in ls(cli)]

    real = ok_json(cli("update", "--json"))
    assert real["dry_run"] is False
    [planned], [done] = dry["collections"], real["collections"]
    for key in ("added", "updated", "moved", "removed", "unchanged", "repaired", "skipped", "failed"):
        assert planned[key] == done[key], key
    # And the plan was not empty, so the comparison means something.
    assert done["added"] == ["added.md", "latin.md"]
    assert done["updated"] == ["guides/backups.md"]
    assert done["moved"] == [["reference/errors.md", "errors-moved.md"]]
    assert done["removed"] == ["notes/ideas.md"]
    assert done["repaired"] == ["latin.md"]
    assert skipped(done) == {"bin.md": "binary"}
    assert paths_for(cli, "pangolin") == ["guides/backups.md"]


def ls(cli: Cli, target: str = "sample") -> list[dict]:
    return ok_json_list(cli("ls", target, "--json"))


def test_dry_run_cli_text_says_nothing_changed(cli: Cli, indexed: Path) -> None:
    write(indexed / "added.md", "# Added\n")
    result = cli("update", "--dry-run")
    assert result.exit_code == 0
    assert result.stdout.startswith("dry run: nothing was changed\n")
    assert "  would add: added.md" in result.stdout


# --- hooks ---------------------------------------------------------------------------------------------


def test_hook_runs_in_the_collection_root(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    ok_json(cli("collection", "set-update", "sample", "echo hello > hook-ran.txt; echo out; pwd", "--json"))
    assert not (indexed / "hook-ran.txt").exists()
    report = update(cli, cwd=tmp_path)
    assert (indexed / "hook-ran.txt").read_text() == "hello\n"
    assert report["hook"] == {
        "command": "echo hello > hook-ran.txt; echo out; pwd",
        "exit_code": 0,
        "stdout": f"out\n{indexed.resolve()}\n",
        "stderr": "",
    }
    assert report["failed"] is None
    assert report["unchanged"] == SAMPLE_COUNT


def test_hook_output_in_cli_text(cli: Cli, indexed: Path) -> None:
    ok_json(cli("collection", "set-update", "sample", "echo pulled; echo note >&2", "--json"))
    result = cli("update")
    assert result.exit_code == 0
    assert "  hook: echo pulled; echo note >&2 (exit 0)" in result.stdout
    assert "    | pulled" in result.stdout
    assert "    ! note" in result.stdout


def test_hook_changes_are_indexed_by_the_same_update(cli: Cli, indexed: Path) -> None:
    # The hook is the "git pull": what it brings in must be picked up right away.
    command = "printf '# Pulled\\nbasilisk\\n' > pulled.md"
    ok_json(cli("collection", "set-update", "sample", command, "--json"))
    report = update(cli)
    assert report["added"] == ["pulled.md"]
    assert paths_for(cli, "basilisk") == ["pulled.md"]


def test_failing_hook_skips_only_its_collection(
    cli: Cli, indexed: Path, tmp_path: Path, index_path: Path
) -> None:
    other = shutil.copytree(SAMPLE, tmp_path / "other")
    assert ok_json(cli("collection", "add", other, "--json"))["ok"]
    ok_json(cli("collection", "set-update", "sample", "echo boom >&2; exit 3", "--json"))
    write(indexed / "guides" / "backups.md", "# changed\nhedgehog\n")
    write(other / "guides" / "backups.md", "# changed\nhedgehog\n")
    before = rows(index_path, "sample")

    result = cli("update", "--json")
    assert result.exit_code == 4
    assert result.stderr == ""
    data = result.json()
    assert isinstance(data, dict)
    assert data["ok"] is False
    reports = by_name(data)
    assert reports["sample"]["failed"]
    assert "3" in reports["sample"]["failed"]
    assert reports["sample"]["hook"]["exit_code"] == 3
    assert reports["sample"]["hook"]["stderr"] == "boom\n"
    assert changes(reports["sample"]) == EMPTY
    assert rows(index_path, "sample") == before
    assert reports["other"]["failed"] is None
    assert reports["other"]["updated"] == ["guides/backups.md"]
    assert paths_for(cli, "hedgehog", "-c", "other") == ["guides/backups.md"]
    assert paths_for(cli, "hedgehog", "-c", "sample") == []
    assert "guides/backups.md" in paths_for(cli, "ninety", "-c", "sample")


def test_failing_hook_in_cli_text(cli: Cli, indexed: Path) -> None:
    ok_json(cli("collection", "set-update", "sample", "echo boom >&2; exit 3", "--json"))
    result = cli("update")
    assert result.exit_code == 4
    assert result.stdout.startswith("sample: FAILED: ")
    assert "    ! boom" in result.stdout


def test_hook_gets_a_closed_stdin(cli: Cli, indexed: Path) -> None:
    # Give this process a stdin that never ends (a pipe nobody writes to): a hook that inherited
    # it would wait (here up to 2 s, then exit >128); with stdin closed, read sees EOF (exit 1).
    command = "read -r -t 2 line; code=$?; echo got=$line; exit $code"
    ok_json(cli("collection", "set-update", "sample", command, "--json"))
    read_end, write_end = os.pipe()
    saved = os.dup(0)
    os.dup2(read_end, 0)
    try:
        report = update(cli, exit_code=4)
    finally:
        os.dup2(saved, 0)
        for fd in (saved, read_end, write_end):
            os.close(fd)
    assert report["hook"]["stdout"] == "got=\n"
    assert report["hook"]["exit_code"] == 1


def test_hooks_run_only_on_a_real_update(cli: Cli, indexed: Path, tmp_path: Path) -> None:
    marker = indexed / "hook-ran.txt"
    command = "echo ran >> hook-ran.txt"
    ok_json(cli("collection", "set-update", "sample", command, "--json"))
    other = shutil.copytree(SAMPLE, tmp_path / "other")

    assert ok_json(cli("collection", "add", other, "--json"))["ok"]
    assert cli("search", "backups", "--json").exit_code == 0
    assert cli("status", "--json").exit_code == 0
    assert cli("collection", "show", "sample", "--json").exit_code == 0
    assert cli("ls", "sample", "--json").exit_code == 0
    dry = by_name(ok_json(cli("update", "--dry-run", "--json")))
    assert dry["sample"]["hook_pending"] == command
    assert dry["sample"]["hook"] is None
    assert dry["other"]["hook_pending"] is None
    assert not marker.exists()

    real = by_name(ok_json(cli("update", "--json")))
    assert real["sample"]["hook"]["exit_code"] == 0
    assert real["sample"]["hook_pending"] is None
    assert marker.read_text() == "ran\n"


@pytest.mark.sqlite_only("writes its own config file")
def test_add_does_not_run_other_collections_hooks(cli: Cli, sample: Path, config_path: Path) -> None:
    # A config written by hand may carry a hook before the collection was ever indexed.
    config_path.parent.mkdir(parents=True)
    config_path.write_text(
        f'[collections.pre]\npath = "{sample}"\nupdate = "touch ran.txt"\n', encoding="utf-8"
    )
    elsewhere = shutil.copytree(SAMPLE, sample.parent / "second")
    assert ok_json(cli("collection", "add", elsewhere, "--json"))["ok"]
    assert not (sample / "ran.txt").exists()
    assert not (elsewhere / "ran.txt").exists()


def test_set_update_without_command_clears_the_hook(cli: Cli, indexed: Path) -> None:
    ok_json(cli("collection", "set-update", "sample", "touch ran.txt", "--json"))
    cleared = ok_json(cli("collection", "set-update", "sample", "--json"))
    assert cleared["update"] is None
    assert ok_json(cli("collection", "show", "sample", "--json"))["collection"]["update"] is None
    report = update(cli)
    assert report["hook"] is None
    assert not (indexed / "ran.txt").exists()


# --- failures ---------------------------------------------------------------------------------------------


def test_missing_folder_fails_that_collection_and_keeps_its_documents(
    cli: Cli, indexed: Path, tmp_path: Path, index_path: Path
) -> None:
    other = shutil.copytree(SAMPLE, tmp_path / "other")
    assert ok_json(cli("collection", "add", other, "--json"))["ok"]
    write(other / "new.md", "# New\nlemur\n")
    before = rows(index_path, "sample")
    shutil.rmtree(indexed)

    result = cli("update", "--json")
    assert result.exit_code == 4
    data = result.json()
    assert isinstance(data, dict)
    reports = by_name(data)
    reason = reports["sample"]["failed"]
    assert str(indexed) in reason
    assert "missing" in reason
    assert changes(reports["sample"]) == EMPTY
    assert reports["other"]["added"] == ["new.md"]
    assert rows(index_path, "sample") == before
    assert len(ls(cli)) == SAMPLE_COUNT
    assert paths_for(cli, "ninety", "-c", "sample") == ["guides/backups.md"]

    status = ok_json(cli("status", "--json"))
    assert any("sample" in p and "missing" in p for p in status["pending"])


# --- the second writer ---------------------------------------------------------------------------------


@pytest.fixture
def held_lock(indexed: Path, index_path: Path) -> Iterator[sqlean.Connection]:
    conn = sqlean.connect(index_path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()


@pytest.mark.sqlite_only("the SQLite writer lock (PostgreSQL's: test_postgres_backend.py)")
def test_second_writer_gives_up_clearly(
    cli: Cli, indexed: Path, index_path: Path, held_lock: sqlean.Connection
) -> None:
    write(indexed / "new.md", "# New\nibex\n")
    result = cli("update", "--json")
    assert result.exit_code == 3
    assert result.stdout == ""
    error = result.error()
    assert error["code"] == "INDEX_LOCKED"
    assert "0.5 s" in error["message"]  # how long it waited (TANSAKU_LOCK_TIMEOUT)
    assert "TANSAKU_LOCK_TIMEOUT" in error["hint"]
    # Readers are not blocked while another process writes.
    assert paths_for(cli, "ninety") == ["guides/backups.md"]
    assert ok_json(cli("status", "--json"))["warnings"] == []

    held_lock.execute("ROLLBACK")
    assert update(cli)["added"] == ["new.md"]
    assert paths_for(cli, "ibex") == ["new.md"]


@pytest.mark.sqlite_only("the SQLite writer's lock file")
def test_locked_index_leaves_no_lock_file(
    cli: Cli, indexed: Path, index_path: Path, held_lock: sqlean.Connection
) -> None:
    assert cli("update", "--json").exit_code == 3
    assert not index_path.with_name(index_path.name + ".writer").exists()


@pytest.mark.sqlite_only("the SQLite writer lock")
@pytest.mark.parametrize(
    "args",
    [
        ("collection", "rename", "sample", "renamed"),
        ("collection", "remove", "sample"),
    ],
    ids=" ".join,
)
def test_locked_index_refuses_config_changes_that_need_it(
    cli: Cli, config_path: Path, held_lock: sqlean.Connection, args: tuple[str, ...]
) -> None:
    before = config_path.read_bytes()
    result = cli(*args, "--json")
    assert result.exit_code == 3
    assert result.error()["code"] == "INDEX_LOCKED"
    assert config_path.read_bytes() == before


@pytest.mark.sqlite_only("the SQLite writer lock")
def test_add_on_a_locked_index_does_not_register_the_collection(
    cli: Cli, config_path: Path, tmp_path: Path, held_lock: sqlean.Connection
) -> None:
    other = shutil.copytree(SAMPLE, tmp_path / "other")
    before = config_path.read_bytes()
    result = cli("collection", "add", other, "--json")
    assert result.exit_code == 3
    assert result.error()["code"] == "INDEX_LOCKED"
    # Otherwise the retry the error message asks for would fail with COLLECTION_EXISTS.
    assert config_path.read_bytes() == before
    held_lock.execute("ROLLBACK")
    assert ok_json(cli("collection", "add", other, "--json"))["collections"][0]["added"]
