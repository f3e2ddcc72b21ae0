"""Issue 9: words starting with - that are not options are query words (search, vsearch).

What a -word means inside the query is the query parser's business (tansaku.search.query); these
tests check only how the command line is split into options and query words, plus one exclusion
observed in real results.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tansaku.api import Tansaku
from tansaku.cli.common import CommandParser, add_query_argument
from tansaku.cli.main import build_parser

from .conftest import REPO
from .models_fixture import requires_llama, requires_minilm

WRAPPER = REPO / "bin" / "tansaku"


@pytest.fixture
def notes(cli, tmp_path: Path) -> Path:
    """A tiny real collection: two documents about restore, one of them also about a laptop."""
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "desktop.md").write_text(
        "# Desktop\n\nHow to restore the desktop from last night's backup.\n", encoding="utf-8"
    )
    (folder / "laptop.md").write_text(
        "# Laptop\n\nHow to restore the laptop from last night's backup.\n", encoding="utf-8"
    )
    (folder / "garden.md").write_text("# Garden\n\nTomatoes need sun.\n", encoding="utf-8")
    result = cli("collection", "add", folder, "--name", "notes")
    assert result.exit_code == 0, result.stderr
    return folder


def found(result) -> list[str]:
    assert result.exit_code == 0, result.stderr
    return sorted(hit["path"] for hit in result.json()["results"])


class Called(Exception):
    """Raised by the spies below, so a test sees exactly what the CLI handed to the api."""

    def __init__(self, query: str, options: dict[str, Any]) -> None:
        super().__init__(query)
        self.query, self.options = query, options


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch):
    """Replace Tansaku.search and .vsearch with a recorder; run the CLI; return (query, options).

    The cli fixture sets TANSAKU_DEBUG, so the recorder's exception comes out of main() as is.
    """

    def record(self: Tansaku, query: str, **options: Any) -> None:
        raise Called(query, options)

    monkeypatch.setattr(Tansaku, "search", record)
    monkeypatch.setattr(Tansaku, "vsearch", record)

    def run(cli, *argv: str) -> tuple[str, dict[str, Any]]:
        with pytest.raises(Called) as called:
            cli(*argv)
        return called.value.query, called.value.options

    return run


def test_an_unquoted_minus_word_is_part_of_the_query_and_excludes(cli, notes: Path):
    # Without the exclusion both restore documents match, so the second assertion can fail.
    assert found(cli("search", "restore", "--json")) == ["desktop.md", "laptop.md"]
    assert found(cli("search", "restore", "-laptop", "--json")) == ["desktop.md"]
    # The same as the quoted form the README shows.
    assert found(cli("search", "restore -laptop", "--json")) == ["desktop.md"]


@pytest.mark.parametrize(
    "argv",
    [
        ["-n", "1", "restore", "-laptop", "--json"],  # options before the words
        ["restore", "-laptop", "-n", "1", "--json"],  # after
        ["restore", "-n", "1", "-laptop", "--json"],  # between
        ["--json", "restore", "-c", "notes", "-laptop", "--min-score", "0.0", "-n", "1"],
        ["restore", "--format", "json", "-laptop", "--collection=notes", "-n1"],
    ],
)
def test_options_work_anywhere_and_keep_their_values(cli, notes: Path, argv: list[str]):
    result = cli("search", *argv)
    assert found(result) == ["desktop.md"]
    data = result.json()
    assert data["query"] == "restore -laptop"
    assert data["limit"] == 1


def test_query_words_keep_their_order_and_options_their_values(cli, spy):
    query, options = spy(
        cli, "search", "-laptop", "restore", "-c", "notes", "-old", "--min-score", "0.25", "-n", "3", "--all"
    )
    assert query == "-laptop restore -old"
    assert options["collections"] == ["notes"]
    assert options["min_score"] == 0.25
    assert options["limit"] is None  # --all wins over -n, as before


def test_a_lone_double_dash_ends_the_options(cli, spy):
    query, options = spy(cli, "search", "--", "--user", "-n", "2")
    assert query == "--user -n 2"
    assert options["limit"] == 5  # the terminal default: -n 2 was query text, not an option
    # Options before the -- still count; after it, even another -- is query text.
    query, options = spy(cli, "search", "-n", "3", "restore", "--", "--json", "--", "x")
    assert (query, options["limit"]) == ("restore --json -- x", 3)


@pytest.mark.parametrize(
    ("word", "why"),
    [
        ("-5", "a negative number alone"),
        ("-nginx", "-n glued to a value that is not a number"),
        ("-crypto", "-c glued to a value: collection names are never glued"),
        ("-vx", "short flags are not grouped"),
        ("-ful", "one dash: a query word, whatever option it resembles"),
        ("-", "a lone dash"),
        ("---", "dashes only: text, not an option"),
        ("--8<--", "a snippet marker: no option name after the dashes"),
        ("--user pip", "one quoted word with a space: a query, not an option"),
    ],
)
def test_option_looking_words_that_are_not_options_are_query_words(cli, spy, word: str, why: str):
    query, options = spy(cli, "search", "restore", word)
    assert query == f"restore {word}", why
    assert options["limit"] == 5 and options["collections"] == [] and options["full"] is False


def test_a_number_glued_to_n_and_option_equals_value_still_work(cli, spy):
    assert spy(cli, "search", "restore", "-n3")[1]["limit"] == 3
    assert spy(cli, "search", "restore", "-n=4")[1]["limit"] == 4
    assert spy(cli, "search", "--min-score=0.5", "restore")[1]["min_score"] == 0.5


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["restore", "-n"], "argument -n: expected one argument"),
        (["-n", "--", "restore"], "argument -n: expected one argument"),
        (["restore", "-n", "-laptop"], "argument -n: expected one argument"),
        (["restore", "-n", "abc"], "argument -n: invalid"),
        (["restore", "-n", "0"], "argument -n: must be 1 or more"),
        (["restore", "-n", "-5"], "argument -n: must be 1 or more"),
        (["restore", "--min-score", "2"], "argument --min-score: must be between 0 and 1"),
        (["restore", "--format", "yaml"], "argument --format: invalid choice"),
        (["restore", "--json=yes"], "argument --json: ignored explicit argument"),
        (["restore", "-c"], "argument -c/--collection: expected one argument"),
        (["-n", "3"], "the following arguments are required: query"),
        (["--"], "the following arguments are required: query"),
    ],
)
def test_real_option_mistakes_are_still_usage_errors(cli, notes: Path, argv: list[str], message: str):
    result = cli("search", *argv)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "usage: tansaku search" in result.stderr
    assert message in result.stderr


def test_other_commands_still_reject_unknown_options(cli, notes: Path):
    result = cli("get", "notes/desktop.md", "--laptop")
    assert result.exit_code == 2
    assert "unrecognized arguments: --laptop" in result.stderr


def test_help_says_how_query_words_and_options_are_told_apart(cli):
    for command in ("search", "vsearch"):
        result = cli(command, "--help")
        assert result.exit_code == 0
        text = " ".join(result.stdout.split())  # help is wrapped to the terminal width
        assert f"in `tansaku {command} restore -laptop`, -laptop is a query word" in text
        assert "Everything after a lone -- is the query, verbatim" in text
        assert f"`tansaku {command} -- -n 2` searches for the text -n 2" in text
    assert "-word (excludes a word)" in " ".join(cli("search", "--help").stdout.split())


def parsed(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def test_vsearch_splits_the_command_line_the_same_way():
    args = parsed("vsearch", "-n", "2", "old", "-laptop", "-v", "--", "--full", "-c")
    assert args.query == ["old", "-laptop", "--full", "-c"]
    assert (args.limit, args.verbose, args.full, args.collections) == (2, True, False, [])
    args = parsed("vsearch", "backup", "-c", "notes", "-5", "--min-score", "0.1", "--json")
    assert args.query == ["backup", "-5"]
    assert (args.collections, args.min_score, args.format) == (["notes"], 0.1, "json")
    with pytest.raises(SystemExit) as exit_info:
        parsed("vsearch", "backup", "-n", "abc")
    assert exit_info.value.code == 2


def test_vsearch_hands_the_joined_words_to_the_api(cli, spy):
    query, options = spy(cli, "vsearch", "restore", "-laptop", "-n", "2", "--verbose")
    assert query == "restore -laptop"
    assert (options["limit"], options["verbose"], options["min_score"]) == (2, True, 0.3)


@requires_llama
@requires_minilm
def test_vsearch_end_to_end_with_a_minus_word(cli, notes: Path, model: Path):
    assert cli("embed", "-c", "notes", "--json").exit_code == 0
    result = cli("vsearch", "restore", "-laptop", "--min-score", "0", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    assert data["query"] == "restore -laptop"
    assert data["results"]


def test_the_helper_refuses_options_with_a_variable_number_of_values():
    parser = CommandParser(prog="tansaku query")
    add_query_argument(parser, help="words")
    parser.add_argument("--explain", nargs="?")
    assert parser.parse_args(["a", "-b"]).query == ["a", "-b"]
    with pytest.raises(TypeError, match="fixed nargs"):
        parser.parse_args(["a", "--explain"])


@pytest.mark.subprocess
def test_installed_entry_point_excludes_an_unquoted_minus_word(notes: Path):
    # `notes` indexed in-process; the subprocess inherits the isolated config and index paths.
    result = subprocess.run(
        [str(WRAPPER), "search", "restore", "-laptop", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, "TANSAKU_PYTHON": sys.executable},
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["query"] == "restore -laptop"
    assert [hit["path"] for hit in data["results"]] == ["desktop.md"]


# Issue 36, item 8: a word with two dashes that is not an option of the command is a mistyped
# option, never query text: `search bisect --jsn` searched for "bisect --jsn" and exited 0.
QUERY_COMMANDS = ("search", "vsearch", "query")


def query_word_commands() -> list[str]:
    """Every command whose free words are a query, read from the parser itself, so that a new
    one cannot escape the tests below."""
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = []
    for name, sub in commands.choices.items():
        subs = [sub] + [
            child
            for action in sub._actions
            if isinstance(action, argparse._SubParsersAction)
            for child in action.choices.values()
        ]
        found += [name for parser in subs if getattr(parser, "query_words", False)]
    return found


def test_the_query_word_commands_are_the_ones_tested():
    assert sorted(query_word_commands()) == sorted(QUERY_COMMANDS)


def refused(result) -> str:
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr.startswith("usage: tansaku ")
    return result.stderr.splitlines()[-1]


@pytest.mark.parametrize("command", QUERY_COMMANDS)
@pytest.mark.parametrize(
    ("argv", "unknown", "guess"),
    [
        (["bisect", "--jsn"], "--jsn", "--json"),
        (["bisect", "--formt", "xml"], "--formt", "--format"),
        (["restore", "--formt=xml"], "--formt=xml", "--format"),
        (["restore", "--ful"], "--ful", "--full"),  # no prefix matching either
        (["restore", "--min"], "--min", "--min-score"),
        (["restore", "--limit", "3"], "--limit", "-n"),
        (["restore", "--n", "3"], "--n", "-n"),
        (["--collectoin", "notes", "restore"], "--collectoin", "--collection"),
        (["pip", "--user"], "--user", None),  # a program's option: searched only after --
        (["--exclude=node_modules"], "--exclude=node_modules", None),
    ],
)
def test_an_unknown_double_dash_word_is_refused_with_the_nearest_option(
    cli, command: str, argv: list[str], unknown: str, guess: str | None
):
    error = refused(cli(command, *argv))
    assert error.startswith(f"tansaku {command}: error: unknown option {unknown}")
    if guess is None:
        assert "did you mean" not in error
    else:
        assert f"unknown option {unknown}; did you mean {guess}? " in error
    assert f"(to search for {unknown} as text, put -- before it: tansaku {command} " in error


def test_the_refusal_comes_before_anything_runs_and_names_every_unknown_word(cli, spy):
    # The spy raises if the api is reached: a refusal must stop at the command line.
    error = refused(cli("search", "bisect", "--jsn", "-n", "2", "--formt=xml"))
    assert "unknown option --jsn; did you mean --json?" in error
    assert "unknown option --formt=xml; did you mean --format?" in error
    assert error.endswith(
        "(to search for --jsn --formt=xml as text, put -- before them:"
        " tansaku search -n 2 -- bisect --jsn --formt=xml)"
    )
    # The words before the command are part of the line to run again.
    error = refused(cli("--index", "work", "vsearch", "bisect", "--jsn"))
    assert error.endswith("put -- before it: tansaku --index work vsearch -- bisect --jsn)")


def test_the_suggested_line_searches_for_the_word_as_text(cli, notes: Path):
    (notes / "pip.md").write_text("# pip\n\nInstall for one user: pip install --user.\n", encoding="utf-8")
    assert cli("update").exit_code == 0
    error = refused(cli("search", "install", "--user", "--json"))
    line = error.split("put -- before it: ", 1)[1].rstrip(")")
    assert line == "tansaku search --json -- install --user"
    result = cli(*line.split()[1:])
    assert found(result) == ["pip.md"]
    assert result.json()["query"] == "install --user"


@pytest.mark.parametrize(
    ("argv", "query"),
    [
        (["--", "--user"], "--user"),
        (["pip", "--", "--save-exact", "-n", "2"], "pip --save-exact -n 2"),
        (["-n", "2", "--", "--exclude=node_modules"], "--exclude=node_modules"),
        (["pip --user"], "pip --user"),  # the whole query as one quoted word
        (["--user pip"], "--user pip"),
        (["find", "-mtime"], "find -mtime"),  # one dash: unchanged
        (["head", "-20"], "head -20"),
    ],
)
def test_after_a_lone_double_dash_or_quoted_with_other_words_it_is_query_text(
    cli, spy, argv: list[str], query: str
):
    assert spy(cli, "search", *argv)[0] == query
    assert spy(cli, "vsearch", *argv)[0] == query


def test_help_says_a_mistyped_option_is_refused(cli):
    for command in QUERY_COMMANDS:
        text = " ".join(cli(command, "--help").stdout.split())
        assert "A word that starts with -- and is not an option above is refused" in text
        assert f"`tansaku {command} pip -- --user` for pip --user" in text


@pytest.mark.subprocess
def test_a_real_process_refuses_a_mistyped_option_with_exit_2(notes: Path):
    result = subprocess.run(
        [str(WRAPPER), "search", "bisect", "--jsn"],
        capture_output=True,
        text=True,
        env={**os.environ, "TANSAKU_PYTHON": sys.executable},
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 2
    assert result.stdout == ""
    assert "tansaku search: error: unknown option --jsn; did you mean --json?" in result.stderr
    assert "Traceback" not in result.stderr
