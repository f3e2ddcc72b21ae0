"""Issue 36, item 9: one table of exit codes (errors.EXIT_CODES), the same for every command.

`ls nosuch` and `search -c nosuch` exited 2 while the README said 1 means not found. Every command
the parser has is run here with a not-found case (where it names something that can be missing)
and a bad-input case; the list of commands is read from the parser, so a new command fails
`test_every_command_has_its_cases` until it is given its cases. A few run as real processes too.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tansaku
from tansaku.cli import main as cli_main
from tansaku.cli.main import build_parser
from tansaku.errors import EXIT_CODES, TansakuError

from .conftest import REPO, SAMPLE

NOT_FOUND, BAD_INPUT, CANNOT_WORK, STEP_FAILED = 1, 2, 3, 4
WRAPPER = REPO / "bin" / "tansaku"
SET = REPO / "fixtures" / "evals" / "sample-v1.jsonl"


def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse has no public way to walk sub-commands
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def leaf_commands() -> list[tuple[str, ...]]:
    """Every command line's command words: ("search",), ("collection", "add"), ..."""
    found: list[tuple[str, ...]] = []
    for name, sub in choices(build_parser()).items():
        children = choices(sub)
        found += [(name, child) for child in children] if children else [(name,)]
    return found


# Per command: a line that names something missing (None when the command names nothing that
# can be, with the reason as a comment) and a line with bad input. ROOT is the test's folder;
# the sample collection is indexed as `sample`. Query-model commands are kept off the models:
# the collection check comes first.
CASES: dict[tuple[str, ...], tuple[list[str] | None, list[str]]] = {
    ("collection", "add"): (["ROOT/nosuch"], ["ROOT/sample", "--name", "bad name!"]),
    ("collection", "list"): (None, ["--format", "xml"]),  # names nothing
    ("collection", "show"): (["nosuch"], ["sample", "--csv"]),
    ("collection", "rename"): (["nosuch", "fresh"], ["sample", "bad name!"]),
    ("collection", "remove"): (["nosuch"], ["sample", "--nosuch"]),
    ("collection", "include"): (["nosuch"], ["sample", "--format", "md"]),
    ("collection", "exclude"): (["nosuch"], ["sample", "--format", "md"]),
    ("collection", "set-update"): (["nosuch", "true"], ["sample", "true", "--nosuch"]),
    ("collection", "set-chunk-strategy"): (["nosuch", "auto"], ["sample", "fastest"]),
    ("ls",): (["nosuch"], ["--format", "xml"]),
    ("search",): (["restore", "-c", "nosuch"], ["bisect", "--jsn"]),
    ("get",): (["nosuch.md"], ["sample/README.md", "--from", "0"]),
    # A miss is part of multi-get's result (listed with similar paths), not an error.
    ("multi-get",): (None, ["sample/*.md", "-l", "0"]),
    ("chunks",): (["nosuch.md"], ["sample/README.md", "--chunk-strategy", "fastest"]),
    ("session", "read"): (["nosuch"], ["nosuch", "--limit", "0"]),
    ("update",): (["-c", "nosuch"], ["--chunk-strategy", "fastest"]),
    ("status",): (None, ["--csv"]),  # names nothing
    ("context", "add"): (["tansaku://nosuch/", "text"], ["nosuch/", "text"]),
    ("context", "list"): (None, ["--format", "xml"]),  # names nothing
    ("context", "rm"): (["tansaku://sample/nosuch"], ["tansaku://"]),
    ("context", "check"): (None, ["--format", "xml"]),  # checks every context; names none
    ("completion",): (None, ["tcsh"]),  # names a shell, one of three: a choice
    ("doctor",): (None, ["--format", "xml"]),  # names nothing
    ("embed",): (["-c", "nosuch"], ["--quick-only", "--no-quick"]),
    ("vsearch",): (["restore", "-c", "nosuch"], ["restore", "--min-score", "2"]),
    ("query",): (["restore", "-c", "nosuch", "--no-expand", "--no-rerank"], ["restore", "-C", "0"]),
    ("models", "list"): (None, ["--format", "xml"]),  # names nothing
    ("models", "pull"): (None, ["summarize"]),  # names roles, a choice; a hub miss is 3
    ("models", "add"): (["embed", "ROOT/nosuch.gguf"], ["summarize", "ROOT/x.gguf"]),
    ("models", "import"): (["ROOT/nosuch"], ["ROOT/sample", "--dtype", "f8"]),
    ("models", "path"): (["embed"], ["summarize"]),  # no embed model in a fresh models folder
    ("bench",): (["ROOT/nosuch.jsonl"], [str(SET), "--mode", "fastest"]),
    ("mcp",): (["stop"], ["--port", "http"]),  # no daemon runs
    ("ui",): (None, ["--port", "http"]),  # starts or reuses a server; names nothing
    ("skill", "show"): (None, ["--format", "xml"]),  # names nothing
    ("skill", "install"): (None, ["--agent", "nosuch"]),  # writes where it is told; names no thing
    ("skill", "remove"): (["--dir", "ROOT/nosuch"], ["--agent", "nosuch"]),
}


def test_every_command_has_its_cases():
    assert sorted(leaf_commands()) == sorted(CASES)


def argv_for(words: list[str], root: Path) -> list[str]:
    return [word.replace("ROOT", str(root)) for word in words]


@pytest.fixture
def world(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The sample indexed as `sample`, and a models folder of the test's own (no model in it)."""
    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(tmp_path / "models"))
    monkeypatch.delenv("TANSAKU_EMBED_MODEL", raising=False)
    shutil.copytree(SAMPLE, tmp_path / "sample")
    result = cli("collection", "add", tmp_path / "sample", "--name", "sample")
    assert result.exit_code == 0, result.stderr
    return tmp_path


def not_found_codes() -> set[str]:
    return {cls.code for cls in error_classes() if cls.exit_code == NOT_FOUND}


@pytest.mark.parametrize("command", [c for c in sorted(CASES) if CASES[c][0] is not None], ids=" ".join)
def test_a_missing_thing_exits_1_with_a_not_found_code(cli, world: Path, command: tuple[str, ...]):
    missing = CASES[command][0]
    assert missing is not None
    result = cli(*command, *argv_for(missing, world), *json_flag(command))
    assert result.exit_code == NOT_FOUND, (result.stdout, result.stderr)
    if command == ("mcp",):
        return  # `mcp stop` answers in text only
    error = result.error()
    assert error["code"] in not_found_codes(), error


@pytest.mark.parametrize("command", sorted(CASES), ids=" ".join)
def test_bad_input_exits_2(cli, world: Path, command: tuple[str, ...]):
    result = cli(*command, *argv_for(CASES[command][1], world))
    assert result.exit_code == BAD_INPUT, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "error" in result.stderr


def json_flag(command: tuple[str, ...]) -> list[str]:
    """--json where the command has it, so that the error's code can be read."""
    parser = build_parser()
    for word in command:
        parser = choices(parser)[word]
    return ["--json"] if "--json" in parser._option_string_actions else []


def error_classes() -> list[type[TansakuError]]:
    """Every error class in the package (modules that need a missing extra are left out)."""
    for module in pkgutil.walk_packages(tansaku.__path__, "tansaku."):
        if module.name.endswith("__main__"):
            continue  # importing it runs the CLI
        try:
            importlib.import_module(module.name)
        except ImportError:
            continue
    found: list[type[TansakuError]] = []
    todo = [TansakuError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo += cls.__subclasses__()
    return found


def test_every_error_class_exits_with_a_code_of_the_table():
    for cls in error_classes():
        assert cls.exit_code in EXIT_CODES, cls
        assert cls.exit_code not in (0, 70, 130), cls  # an error is never ok, a bug or Ctrl-C
    assert cli_main.EXIT_INTERNAL in EXIT_CODES and cli_main.EXIT_INTERRUPTED in EXIT_CODES


def readme_table() -> dict[int, tuple[str, str]]:
    """README's exit code table: code -> (meaning, examples)."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d+) \| (.+?) \| (.*?) ?\|$", text, flags=re.MULTILINE)
    return {int(code): (meaning, examples) for code, meaning, examples in rows}


def test_readme_and_the_reference_give_the_one_table():
    table = readme_table()
    assert {code: meaning for code, (meaning, _) in table.items()} == EXIT_CODES
    classes = {cls.code: cls for cls in error_classes()}
    for code, (_, examples) in table.items():
        for name in re.findall(r"`([A-Z][A-Z_]+)`", examples):
            if name in classes:  # INTERNAL is the CLI's, not a class
                assert classes[name].exit_code == code, name
    reference = (REPO / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning} |" in reference


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("argv", "code"),
    [
        (["ls", "nosuch", "--json"], NOT_FOUND),
        (["search", "restore", "-c", "nosuch", "--json"], NOT_FOUND),
        (["collection", "show", "nosuch", "--json"], NOT_FOUND),
        (["search", "bisect", "--jsn"], BAD_INPUT),
        (["search", "restore", "-n", "0"], BAD_INPUT),
        (["search", "restore", "--json"], 0),
    ],
)
def test_real_processes_exit_with_the_tables_code(world: Path, argv: list[str], code: int):
    result = run(*argv)
    assert result.returncode == code, result.stderr
    if code == NOT_FOUND:
        assert json.loads(result.stderr)["error"]["code"] in not_found_codes()


@pytest.mark.subprocess
def test_a_real_process_without_an_index_exits_3_and_with_a_failing_hook_4(cli, tmp_path: Path):
    missing = run("search", "restore", "--json")
    assert missing.returncode == CANNOT_WORK
    assert json.loads(missing.stderr)["error"]["code"] == "INDEX_MISSING"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n", encoding="utf-8")
    assert cli("collection", "add", notes, "--name", "notes").exit_code == 0
    assert cli("collection", "set-update", "notes", "exit 7").exit_code == 0
    assert run("update", "--json").returncode == STEP_FAILED


def run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(WRAPPER), *argv],
        capture_output=True,
        text=True,
        env={**os.environ, "TANSAKU_PYTHON": sys.executable},
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
