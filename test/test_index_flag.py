"""Issue 36, item 10: `--index NAME` outranks TANSAKU_INDEX_PATH.

Both name a file; when the variable won, a named index silently wrote into the default one. A
flag outranks the environment (precedence.py), so the named index keeps its own file in the
cache folder and the variable moves only the default index.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tansaku.paths import locations

from .conftest import REPO

WRAPPER = REPO / "bin" / "tansaku"


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    folder = tmp_path / "notes"
    folder.mkdir()
    text = "# Backup\n\nRestore the laptop from the nightly backup.\n"
    (folder / "backup.md").write_text(text, encoding="utf-8")
    return folder


def test_a_named_index_has_its_own_file_whatever_the_variable_says(tmp_path: Path):
    # conftest sets TANSAKU_INDEX_PATH for every test; HOME is the test's own folder.
    default = Path(os.environ["TANSAKU_INDEX_PATH"])
    assert locations(None).index_file == default
    work = locations("work").index_file
    assert work == tmp_path / "home" / ".cache" / "tansaku" / "work.sqlite"
    # The default index's name given as a flag is a flag too.
    assert locations("index").index_file == tmp_path / "home" / ".cache" / "tansaku" / "index.sqlite"


def test_a_named_index_does_not_write_into_the_index_path_file(cli, notes: Path, tmp_path: Path):
    default = Path(os.environ["TANSAKU_INDEX_PATH"])
    added = cli("--index", "work", "collection", "add", notes, "--name", "notes")
    assert added.exit_code == 0, added.stderr
    assert not default.exists(), "the named index wrote into TANSAKU_INDEX_PATH's file"
    assert (tmp_path / "home" / ".cache" / "tansaku" / "work.sqlite").exists()
    found = cli("--index", "work", "search", "restore", "--json")
    assert found.exit_code == 0, found.stderr
    assert [hit["path"] for hit in found.json()["results"]] == ["backup.md"]
    # The default index, at TANSAKU_INDEX_PATH, knows nothing of it.
    assert cli("collection", "list", "--json").json() == []


@pytest.mark.sqlite_only("names SQLite files beside the default index")
@pytest.mark.subprocess
def test_a_real_process_keeps_the_named_index_apart(notes: Path, tmp_path: Path):
    env = {
        **os.environ,
        "TANSAKU_PYTHON": sys.executable,
        "TANSAKU_INDEX_PATH": str(tmp_path / "elsewhere" / "default.sqlite"),
        "XDG_CACHE_HOME": str(tmp_path / "xdg-cache"),
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(WRAPPER), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    added = run("collection", "add", str(notes), "--name", "notes", "--index", "work")
    assert added.returncode == 0, added.stderr
    assert (tmp_path / "xdg-cache" / "tansaku" / "work.sqlite").exists()
    assert not (tmp_path / "elsewhere" / "default.sqlite").exists()
    # Without the flag, the variable still names the default index's file.
    other = run("collection", "add", str(notes), "--name", "mine")
    assert other.returncode == 0, other.stderr
    assert (tmp_path / "elsewhere" / "default.sqlite").exists()


def test_help_and_docs_say_which_wins(cli):
    text = " ".join(cli("--help").stdout.split())
    assert "even when TANSAKU_INDEX_PATH is set: the flag wins" in text
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    assert "`--index NAME` outranks `TANSAKU_INDEX_PATH`" in readme


def test_the_release_hooks_keep_the_readme_lines_named_index_in_their_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # The README line runs `tansaku --index sample ...` with the hooks' environment: the named
    # index's file must be in the release's temporary folder, not the user's cache.
    from .test_release import load_release

    release = load_release()
    state = tmp_path / "state"
    env = release.hook_env(release.Places(dist=tmp_path / "dist", venv=tmp_path / "venv", state=state))
    for name in ("TANSAKU_CONFIG_DIR", "TANSAKU_INDEX_PATH", "XDG_CACHE_HOME"):
        monkeypatch.setenv(name, env[name])
    assert locations("sample").index_file.is_relative_to(state)
    assert locations("sample").config_file.is_relative_to(state)
    assert not Path(env["PIP_CACHE_DIR"]).is_relative_to(state)
