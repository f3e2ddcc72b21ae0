"""A sound index that cannot be written, or a disk that is full, is never called damaged (issue 22).

Real failures, not mocks: a tmpfs remounted read-only, a tmpfs filled to the last byte, and the
immutable attribute (``chattr +i``) on the test's own file system; as root, chmod would not stop a
write. Where mounting is not permitted the tests skip and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlean

CliResult = Any  # conftest.CliResult; not imported so the tests run whether or not test/ is a package
Cli = Callable[..., CliResult]
WORDS = [f"{a}{b}{c}word" for a in "bcdfghjklm" for b in "aeiou" for c in "nprst"]


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)


class Mount:
    """A private tmpfs at ``folder``, unmounted when the test ends."""

    def __init__(self, folder: Path, size: str) -> None:
        self.folder = folder
        folder.mkdir(parents=True)
        if os.geteuid() != 0:
            pytest.skip("mounting a tmpfs needs root (CI runs these as root)")
        done = _run("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(folder))
        if done.returncode != 0:
            pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")

    def read_only(self) -> None:
        done = _run("mount", "-o", "remount,ro", str(self.folder))
        assert done.returncode == 0, done.stderr

    def unmount(self) -> None:
        if _run("umount", str(self.folder)).returncode != 0:
            _run("umount", "-l", str(self.folder))  # a process still holding a file: detach it


@pytest.fixture
def mount(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Mount]]:
    """Makes a tmpfs (of the given size) and puts the index on it."""
    made: list[Mount] = []

    def make(size: str) -> Mount:
        mounted = Mount(tmp_path / f"mnt{len(made)}", size)
        made.append(mounted)
        monkeypatch.setenv("TANSAKU_INDEX_PATH", str(mounted.folder / "index.sqlite"))
        return mounted

    yield make
    for mounted in made:
        mounted.unmount()


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[Callable[[Path], None]]:
    """Sets ``chattr +i`` on files, and clears it afterwards (or pytest could not remove them)."""
    marked: list[Path] = []

    def mark(path: Path) -> None:
        if shutil.which("chattr") is None:
            pytest.skip("chattr is not installed")
        done = _run("chattr", "+i", str(path))
        if done.returncode != 0:
            pytest.skip(f"this file system has no immutable attribute: {done.stderr.strip()}")
        marked.append(path)

    yield mark
    for path in marked:
        _run("chattr", "-i", str(path))


def ok(result: CliResult) -> Any:
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return result.json()


def failed(result: CliResult, code: str) -> dict:
    assert result.exit_code == 3, (result.stdout, result.stderr)
    error = result.error()
    assert error["code"] == code, error
    return error


def no_rebuild_advice(error: dict) -> None:
    """The hint of a sound index never tells the user to throw it away."""
    text = (error["message"] + " " + error.get("hint", "")).lower()
    for words in ("damaged", "rebuild", "move it aside", "corrupt"):
        assert words not in text, error


def quick_check(index: Path) -> str:
    conn = sqlean.connect(f"file:{index}?mode=ro&immutable=1", uri=True)
    try:
        return str(conn.execute("PRAGMA quick_check").fetchone()[0])
    finally:
        conn.close()


def many_words(folder: Path, files: int, words: int) -> Path:
    """Text that indexes to about as many bytes again as it has (no repeats to compress)."""
    folder.mkdir()
    for n in range(files):
        picked = [WORDS[(n * 7919 + i * 104729) % len(WORDS)] + str(i % 997) for i in range(words)]
        (folder / f"notes{n}.md").write_text(f"# Notes {n}\n\n" + " ".join(picked) + "\n", encoding="utf-8")
    return folder


def fill(folder: Path) -> None:
    """Writes zeros until the disk has no byte left."""
    with (folder / "filler").open("wb", buffering=0) as f:
        for block in (65536, 1):
            try:
                while True:
                    f.write(b"\0" * block)
            except OSError:
                pass


# --- a read-only mount -------------------------------------------------------------------------


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
def test_a_read_only_mount_still_searches_gets_and_reports_status(
    cli: Cli, indexed_on: Callable[[str], Path]
) -> None:
    index = indexed_on("read-only")
    found = ok(cli("search", "backups", "--json"))["results"]
    assert found and found[0]["path"] == "guides/backups.md"
    got = cli("get", found[0]["docid"])
    assert got.exit_code == 0 and "Nightly backups" in got.stdout, got.stderr
    status = ok(cli("status", "--json"))
    assert status["collections"][0]["documents"] == 13 and not status["warnings"]
    assert sorted(p.name for p in index.parent.iterdir()) == ["index.sqlite"]  # no -wal/-shm was made


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
def test_writers_on_a_read_only_mount_say_they_cannot_write_and_keep_the_index(
    cli: Cli, indexed_on: Callable[[str], Path], tmp_path: Path
) -> None:
    index = indexed_on("read-only")
    before = index.read_bytes()
    other = tmp_path / "other"
    shutil.copytree(tmp_path / "sample", other)
    for args in (("update",), ("collection", "add", str(other), "--name", "other")):
        error = failed(cli(*args, "--json"), "INDEX_READ_ONLY")
        assert "mounted read-only" in error["message"] and str(index) in error["message"]
        assert "remount" in error["hint"] and "searching still works" in error["hint"]
        no_rebuild_advice(error)
    assert index.read_bytes() == before
    assert "other" not in cli("collection", "list").stdout  # the config did not gain it either
    assert quick_check(index) == "ok"


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
def test_doctor_says_a_read_only_index_is_sound_but_not_writable(
    cli: Cli, indexed_on: Callable[[str], Path]
) -> None:
    indexed_on("read-only")
    checks = {c["check"]: c for c in json.loads(cli("doctor", "--json").stdout)}
    assert checks["index.integrity"]["status"] == "ok"
    writable = checks["index.writable"]
    assert writable["status"] == "warn" and "read-only" in writable["detail"], writable
    assert "remount" in writable["fix"]


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
def test_a_read_only_mount_with_pending_log_says_why_it_cannot_read(
    cli: Cli, sample: Path, mount: Callable[[str], Mount], tmp_path: Path
) -> None:
    # A writer that never closed leaves its last commits in the -wal only; without a -shm (which
    # nobody can create on this mount) an immutable reader would silently miss them.
    source = tmp_path / "live.sqlite"
    ok(cli("collection", "add", sample, "--name", "sample", "--json"))  # at the default index path
    built = Path(os.environ["TANSAKU_INDEX_PATH"])
    shutil.copy(built, source)
    writer = sqlean.connect(source, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    version = writer.execute("PRAGMA user_version").fetchone()[0]
    writer.execute(f"PRAGMA user_version = {version}")  # a commit: page 1 goes to the -wal
    mounted = mount("4m")
    index = mounted.folder / "index.sqlite"
    shutil.copy(source, index)
    shutil.copy(f"{source}-wal", f"{index}-wal")
    writer.close()
    assert Path(f"{index}-wal").stat().st_size > 0
    mounted.read_only()
    error = failed(cli("search", "backups", "--json"), "INDEX_READ_ONLY")
    assert "-wal" in error["message"] and "read-only" in error["message"]
    no_rebuild_advice(error)


# --- an immutable file -------------------------------------------------------------------------


def test_an_immutable_index_searches_but_writers_say_it_is_immutable(
    cli: Cli, indexed: Path, index_path: Path, immutable: Callable[[Path], None]
) -> None:
    immutable(index_path)
    assert ok(cli("search", "backups", "--json"))["results"]
    other = shutil.copytree(indexed, indexed.parent / "other")
    for args in (("update",), ("collection", "add", str(other), "--name", "other")):
        error = failed(cli(*args, "--json"), "INDEX_READ_ONLY")
        assert "immutable" in error["message"] and f"chattr -i {index_path}" in error["hint"]
        no_rebuild_advice(error)


# --- a full disk -------------------------------------------------------------------------------


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
def test_a_full_disk_says_how_much_is_free_and_needed_and_loses_nothing(
    cli: Cli, sample: Path, mount: Callable[[str], Mount], tmp_path: Path
) -> None:
    mounted = mount("3m")
    ok(cli("collection", "add", sample, "--name", "sample", "--json"))
    index = mounted.folder / "index.sqlite"
    notes = many_words(tmp_path / "notes", files=40, words=6000)  # about 2.5 MB of text
    shutil.copy(notes / "notes0.md", sample / "notes0.md")  # gives `update` something to write
    fill(mounted.folder)
    for args in (("collection", "add", str(notes), "--name", "notes"), ("update",)):
        error = failed(cli(*args, "--json"), "INDEX_DISK_FULL")
        assert "is full" in error["message"] and "free in" in error["message"], error
        free, needed = error["details"]["free_bytes"], error["details"]["needed_bytes"]
        assert free < 65536 and needed >= 1024 * 1024
        assert "rolled back" in error["hint"] and "free at least" in error["hint"]
        no_rebuild_advice(error)
    assert quick_check(index) == "ok"
    assert ok(cli("search", "backups", "--json"))["results"]
    (mounted.folder / "filler").unlink()
    added = ok(cli("collection", "add", notes, "--name", "small", "--json", "--mask", "notes1.md"))
    assert added["collections"][0]["added"]


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
def test_a_full_disk_mid_write_estimates_from_what_was_written(
    cli: Cli, sample: Path, mount: Callable[[str], Mount], tmp_path: Path
) -> None:
    mounted = mount("2m")
    ok(cli("collection", "add", sample, "--name", "sample", "--json"))
    notes = many_words(tmp_path / "notes", files=40, words=6000)
    error = failed(cli("collection", "add", notes, "--name", "notes", "--json"), "INDEX_DISK_FULL")
    assert "it had written" in error["message"], error
    # It ran out after writing most of the 2 MB to the log, and was not done: twice that.
    assert error["details"]["needed_bytes"] > 2 * 1024 * 1024, error
    assert quick_check(mounted.folder / "index.sqlite") == "ok"


# --- damaged -----------------------------------------------------------------------------------


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
def test_status_on_a_zeroed_header_says_damaged_and_the_hint_keeps_the_file(
    cli: Cli, indexed: Path, index_path: Path
) -> None:
    with index_path.open("r+b") as f:
        f.write(b"\0" * 100)
    damaged = index_path.read_bytes()
    for args in (("status",), ("update",)):
        error = failed(cli(*args, "--json"), "INDEX_CORRUPT")
        assert "damaged" in error["message"]
        assert f"mv {index_path} {index_path}.bak" in error["hint"] and "rm " not in error["hint"]
    text = cli("status")
    assert text.exit_code == 3 and "never indexed" not in text.stdout and "damaged" in text.stderr
    assert index_path.read_bytes() == damaged


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
def test_a_failing_query_on_a_sound_index_is_not_called_damaged(indexed: Path, index_path: Path) -> None:
    from tansaku.store import db

    with db.reading(index_path) as conn:
        try:
            conn.execute("SELECT no_such_column FROM documents")
        except db.DatabaseError as exc:
            error = db.translate(exc, index_path)
    assert error.code == "INDEX_ERROR", error  # type: ignore[attr-defined]
    assert "quick_check ok" in str(error) and "damaged" not in str(error)


# --- the real entry point ----------------------------------------------------------------------


@pytest.mark.sqlite_only("the SQLite file damaged, locked or on a read-only mount")
@pytest.mark.subprocess
def test_the_command_exits_3_on_a_read_only_mount_and_0_for_search(indexed_on: Callable[[str], Path]) -> None:
    indexed_on("read-only")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "tansaku", *args],
            capture_output=True,
            text=True,
            env={k: v for k, v in os.environ.items() if k != "TANSAKU_DEBUG"},
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    update = run("update")
    assert update.returncode == 3, update.stderr
    assert update.stderr.startswith("error: cannot write the index") and "Traceback" not in update.stderr
    search = run("search", "backups")
    assert search.returncode == 0 and "guides/backups.md" in search.stdout, search.stderr


@pytest.fixture
def indexed_on(cli: Cli, sample: Path, mount: Callable[[str], Mount]) -> Callable[[str], Path]:
    """An index of the sample on its own tmpfs; "read-only" then remounts that read-only."""

    def make(state: str) -> Path:
        mounted = mount("8m")
        ok(cli("collection", "add", sample, "--name", "sample", "--json"))
        if state == "read-only":
            mounted.read_only()
        return mounted.folder / "index.sqlite"

    return make


@pytest.mark.subprocess
def test_the_machine_checks_of_doctor_do_not_import_doctor() -> None:
    # doctor.py and doctor_machine.py imported each other; the shared pieces now live below both.
    probe = "import sys, tansaku.inspect.doctor_machine; print('tansaku.inspect.doctor' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
