"""A misspelt command or option is a usage error that says what was probably meant: the nearest
command (at every level), the nearest option, the formats a command has. Other usage errors keep
argparse's words."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., Any]


def usage_error(result: Any) -> str:
    """The error line of a usage error (exit 2, nothing on stdout, the usage first)."""
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert lines[0].startswith("usage: tansaku")
    return lines[-1]


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["serach", "x"], "tansaku: error: unknown command 'serach'; did you mean 'search'?"),
        (
            ["--index", "work", "serach", "x"],
            "tansaku: error: unknown command 'serach'; did you mean 'search'?",
        ),
        (["statsu"], "tansaku: error: unknown command 'statsu'; did you mean 'status'?"),
        (["coll"], "tansaku: error: unknown command 'coll'; did you mean 'collection'?"),
        (["collection", "lst"], "tansaku collection: error: unknown command 'lst'; did you mean 'list'?"),
        (["session", "red", "x"], "tansaku session: error: unknown command 'red'; did you mean 'read'?"),
        (["models", "lsit"], "tansaku models: error: unknown command 'lsit'; did you mean 'list'?"),
    ],
)
def test_a_misspelt_command_names_the_nearest_one(cli: Cli, argv: list[str], error: str):
    assert usage_error(cli(*argv)) == error


def test_a_word_near_no_command_lists_them_all(cli: Cli):
    error = usage_error(cli("xyzzy"))
    assert error.startswith(
        "tansaku: error: unknown command 'xyzzy' (choose from 'collection', 'ls', 'search',"
    )
    assert "did you mean" not in error


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ["session", "read", "abc", "--limt", "3"],
            "tansaku session read: error: unrecognized arguments: --limt 3; did you mean --limit?",
        ),
        (
            ["session", "read", "abc", "--limt=3"],
            "tansaku session read: error: unrecognized arguments: --limt=3; did you mean --limit?",
        ),
        (["status", "--jsn"], "tansaku status: error: unrecognized arguments: --jsn; did you mean --json?"),
        (
            ["get", "a.md", "--ful-path", "--jsn"],
            "tansaku get: error: unrecognized arguments: --ful-path --jsn; did you mean --full-path for"
            " --ful-path?; did you mean --json for --jsn?",
        ),
        (
            ["status", "--csv"],
            "tansaku status: error: unrecognized arguments: --csv; status prints text or --json",
        ),
        (
            ["collection", "list", "--md"],
            "tansaku collection list: error: unrecognized arguments: --md;"
            " collection list prints text or --json",
        ),
        (
            ["doctor", "--xml"],
            "tansaku doctor: error: unrecognized arguments: --xml; doctor prints text or --json",
        ),
    ],
)
def test_a_misspelt_option_names_the_nearest_one_and_formats_their_command(
    cli: Cli, argv: list[str], error: str
):
    assert usage_error(cli(*argv)) == error


def test_the_usage_shown_is_the_commands_own(cli: Cli):
    result = cli("status", "--csv")
    assert result.stderr.startswith("usage: tansaku status [-h]")


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        # argparse's own words where nothing near was meant, and its usual checks.
        (["status", "foo"], "tansaku status: error: unrecognized arguments: foo"),
        (["status", "-x"], "tansaku status: error: unrecognized arguments: -x"),
        (
            ["completion", "tcsh"],
            "tansaku completion: error: argument shell: invalid choice: 'tcsh'"
            " (choose from 'bash', 'zsh', 'fish')",
        ),
        (["collection"], "tansaku collection: error: the following arguments are required: ACTION"),
        (["search", "--json"], "tansaku search: error: the following arguments are required: query"),
    ],
)
def test_other_usage_errors_keep_argparse_words(cli: Cli, argv: list[str], error: str):
    assert usage_error(cli(*argv)) == error


def test_an_invalid_choice_gets_a_guess_after_argparse_list(cli: Cli):
    error = usage_error(cli("status", "--format", "jsn"))
    assert error == (
        "tansaku status: error: argument --format: invalid choice: 'jsn' (choose from 'cli', 'json');"
        " did you mean 'json'?"
    )


def test_a_query_word_with_two_dashes_is_a_mistyped_option_unless_after_a_lone_dash(cli: Cli, tmp_path: Path):
    # search takes -words as query words (issue 9), but --ful is a typo of --full (issue 36): it
    # is refused with the nearest option, and searched for only after --.
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("a --ful flag\n", encoding="utf-8")
    assert cli("collection", "add", notes, "--name", "notes").exit_code == 0
    assert usage_error(cli("search", "flag", "--ful", "--json")) == (
        "tansaku search: error: unknown option --ful; did you mean --full? (to search for --ful as"
        " text, put -- before it: tansaku search --json -- flag --ful)"
    )
    result = cli("search", "--json", "--", "flag", "--ful")
    assert result.exit_code == 0, result.stderr
    assert [hit["path"] for hit in result.json()["results"]] == ["a.md"]


@pytest.mark.parametrize(
    ("a", "b", "distance"),
    [("search", "search", 0), ("serach", "search", 1), ("lst", "list", 1), ("", "ls", 2), ("abc", "cab", 2)],
)
def test_edit_distance_counts_a_swap_as_one(a: str, b: str, distance: int):
    from tansaku.cli.suggest import edit_distance

    assert edit_distance(a, b) == distance == edit_distance(b, a)


def test_nearest_takes_the_closest_and_no_far_guess():
    from tansaku.cli.suggest import nearest

    assert nearest("lst", ["ls", "list", "last"]) == ["ls", "list", "last"]
    assert nearest("gte", ["get", "status"]) == ["get"]
    assert nearest("cat", ["get", "status"]) == []  # two edits in three letters is another word
    assert nearest("multi", ["multi-get", "models"]) == ["multi-get"]  # the one name it begins
    assert nearest("m", ["multi-get", "models"]) == []


def test_a_real_process_says_it_on_stderr_with_exit_2(tmp_path: Path):
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "tansaku", "serach", "restore"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    last = result.stderr.splitlines()[-1]
    assert last == "tansaku: error: unknown command 'serach'; did you mean 'search'?"
    assert "Traceback" not in result.stderr
