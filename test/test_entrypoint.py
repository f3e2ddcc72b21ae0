"""The real entry points in real subprocesses: exit codes, stdout/stderr split, start-up imports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO, SAMPLE

pytestmark = pytest.mark.subprocess
WRAPPER = REPO / "bin" / "tansaku"


def run(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(WRAPPER), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "TANSAKU_PYTHON": sys.executable, **(env or {})},
        cwd=cwd,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_version_and_help():
    assert run("--version").stdout.startswith("tansaku ")
    help_text = run("--help").stdout
    for command in ("collection", "search", "get", "multi-get", "update", "status", "context", "ls"):
        assert command in help_text


def test_usage_error_exits_2_on_stderr():
    result = run("search")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "usage:" in result.stderr


def test_add_search_get_round_trip_and_exit_codes(tmp_path: Path):
    sample = tmp_path / "sample"
    shutil.copytree(SAMPLE, sample)
    added = run("collection", "add", str(sample), "--name", "sample")
    assert added.returncode == 0, added.stderr
    assert "added 13" in added.stdout

    found = run("search", "restore", "--json")
    assert found.returncode == 0
    top = json.loads(found.stdout)["results"][0]
    assert top["path"] == "guides/backups.md"

    got = run("get", top["docid"], "--no-line-numbers")
    assert got.returncode == 0
    assert got.stdout == (sample / "guides" / "backups.md").read_text(encoding="utf-8")

    missing = run("get", "nope.md", "--json")
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert json.loads(missing.stderr)["error"]["code"] == "DOC_NOT_FOUND"

    duplicate = run("collection", "add", str(sample), "--name", "sample", "--json")
    assert duplicate.returncode == 2
    assert json.loads(duplicate.stderr)["error"]["code"] == "COLLECTION_EXISTS"


@pytest.mark.sqlite_only("a missing SQLite file (a database is created by the test run)")
def test_missing_index_exits_3_with_a_stable_code(tmp_path: Path):
    result = run("search", "anything", "--json")
    assert result.returncode == 3
    assert json.loads(result.stderr)["error"]["code"] == "INDEX_MISSING"
    assert not Path(os.environ["TANSAKU_INDEX_PATH"]).exists()
    plain = run("search", "anything")
    assert plain.returncode == 3
    assert plain.stderr.startswith("error: no index at")
    assert "collection add" in plain.stderr


def test_no_colour_when_piped_and_with_no_color(tmp_path: Path):
    sample = tmp_path / "s"
    shutil.copytree(SAMPLE, sample)
    run("collection", "add", str(sample))
    assert "\x1b[" not in run("search", "restore").stdout
    assert "\x1b[" not in run("search", "restore", env={"NO_COLOR": "1"}).stdout


def test_named_index_keeps_its_own_config_and_index(tmp_path: Path):
    sample = tmp_path / "s"
    shutil.copytree(SAMPLE, sample)
    env = {"TANSAKU_INDEX_PATH": ""}  # empty = not set: use the XDG cache location
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg-cache")
    assert run("--index", "work", "collection", "add", str(sample), env=env).returncode == 0
    assert (tmp_path / "xdg-cache" / "tansaku" / "work.sqlite").exists()
    assert (Path(os.environ["TANSAKU_CONFIG_DIR"]) / "work.toml").exists()
    # The default index knows nothing about it; the option works after the command too.
    assert run("collection", "list", "--json", env=env).stdout.strip() == "[]"
    listed = json.loads(run("collection", "list", "--index", "work", "--json", env=env).stdout)
    assert [c["collection"]["name"] for c in listed] == ["s"]


def test_pipe_closed_early_is_not_an_error(tmp_path: Path):
    sample = tmp_path / "s"
    shutil.copytree(SAMPLE, sample)
    run("collection", "add", str(sample))
    shell = f"'{WRAPPER}' search backup --all | head -1"
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell],
        capture_output=True,
        text=True,
        env={**os.environ, "TANSAKU_PYTHON": sys.executable},
        timeout=60,
    )
    assert "Traceback" not in result.stderr


def test_cli_import_pulls_in_no_heavy_modules():
    code = (
        "import sys, tansaku.cli.main\n"
        "heavy = {'rich', 'rjieba', 'jieba', 'tomli_w', 'llama_cpp', 'tree_sitter', 'sqlite_vec',"
        " 'markdown_it', 'argcomplete', 'wcmatch'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_english_search_never_loads_the_chinese_segmenter(tmp_path: Path):
    sample = tmp_path / "s"
    shutil.copytree(SAMPLE, sample)
    run("collection", "add", str(sample))
    code = (
        "import sys\n"
        "from tansaku.cli.main import main\n"
        "main(['search', 'restore', '--json'])\n"
        "print('rjieba' in sys.modules, 'rich' in sys.modules, file=sys.stderr)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ)
    assert result.stderr.strip() == "False False"
