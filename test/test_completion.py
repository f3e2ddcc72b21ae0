"""Shell completion: the argcomplete protocol driven as a shell drives it, and `tansaku completion`.

A shell completes by running the command itself with `_ARGCOMPLETE` set, the line so far in
COMP_LINE and the cursor in COMP_POINT; the candidates come back on fd 8, or in the file named by
`_ARGCOMPLETE_STDOUT_FILENAME`, separated by `_ARGCOMPLETE_IFS` (vertical tab by default).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import REPO

pytestmark = pytest.mark.subprocess
WRAPPER = REPO / "bin" / "tansaku"
IFS = "\013"


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "TANSAKU_PYTHON": sys.executable, **extra}


def complete(line: str, tmp_path: Path, **env: str) -> list[str]:
    """The candidates tansaku offers with the cursor at the end of `line` (which starts `tansaku`)."""
    out = tmp_path / "candidates"
    protocol = {
        "_ARGCOMPLETE": "1",  # the words start at the first one: the command name itself
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "_ARGCOMPLETE_STDOUT_FILENAME": str(out),
    }
    result = subprocess.run(
        [str(WRAPPER)],
        capture_output=True,
        text=True,
        env=_env(**protocol, **env),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == ""  # a shell shows whatever lands here; the answer goes to the file
    text = out.read_text()
    return [c.strip() for c in text.split(IFS)] if text else []


@pytest.fixture
def two_collections(config_path: Path, tmp_path: Path) -> Path:
    """A config naming two collections, written by hand: completion must need nothing else."""
    config_path.parent.mkdir(parents=True, exist_ok=True)
    config_path.write_text(
        f'[collections.notes]\npath = "{tmp_path}"\n\n[collections.work-log]\npath = "{tmp_path}"\n'
    )
    return config_path


def test_command_names(tmp_path: Path):
    assert complete("tansaku se", tmp_path) == ["search", "session"]
    assert "collection" in complete("tansaku ", tmp_path)
    assert complete("tansaku collection re", tmp_path) == ["rename", "remove"]


def test_options(tmp_path: Path):
    assert complete("tansaku search backup --fo", tmp_path) == ["--format"]
    assert {"--collection", "--level", "--json", "--min-score"} <= set(
        complete("tansaku search x --", tmp_path)
    )


def test_option_values(tmp_path: Path):
    assert complete("tansaku search backup --format ", tmp_path) == [
        "cli",
        "json",
        "csv",
        "md",
        "xml",
        "files",
    ]
    assert complete("tansaku status --format ", tmp_path) == ["cli", "json"]
    assert complete("tansaku query x --level s", tmp_path) == ["session"]
    assert complete("tansaku update --chunk-strategy ", tmp_path) == ["regex", "auto"]
    assert {"embed", "generate", "rerank"} <= set(complete("tansaku models path ", tmp_path))
    assert {"embed", "generate", "rerank"} <= set(complete("tansaku models pull ", tmp_path))


def test_collection_names_from_the_config(tmp_path: Path, two_collections: Path, index_path: Path):
    assert complete("tansaku search backup -c ", tmp_path) == ["notes", "work-log"]
    assert complete("tansaku search -c w", tmp_path) == ["work-log"]
    # After a query word that looks like an option: search sorts its words itself (issue 9).
    assert complete("tansaku search backup -laptop --collection ", tmp_path) == ["notes", "work-log"]
    # After a mistyped option, which running the line refuses (issue 36): completion still works.
    assert complete("tansaku search backup --jsn -c ", tmp_path) == ["notes", "work-log"]
    assert complete("tansaku search backup --jsn --ful", tmp_path) == ["--full", "--full-path"]
    assert complete("tansaku vsearch x -c n", tmp_path) == ["notes"]
    assert complete("tansaku update -c ", tmp_path) == ["notes", "work-log"]
    assert complete("tansaku collection show ", tmp_path)[-2:] == ["notes", "work-log"]
    assert complete("tansaku collection remove wo", tmp_path) == ["work-log"]
    assert not index_path.exists()  # the config only: no index is opened, let alone created


def test_collection_names_follow_index_and_survive_a_broken_config(tmp_path: Path, two_collections: Path):
    other = two_collections.with_name("other.toml")
    other.write_text(f'[collections.elsewhere]\npath = "{tmp_path}"\n')
    assert complete("tansaku --index other search -c ", tmp_path) == ["elsewhere"]
    other.write_text("[collections\n")  # not TOML: complete nothing rather than a traceback
    assert complete("tansaku --index other search -c ", tmp_path) == []


def test_candidates_on_fd_8_as_the_bash_code_reads_them(tmp_path: Path):
    # The bash code points fd 8 at its own stdout and sends the command's stdout to /dev/null.
    redirect = 'exec 8>&1 1>/dev/null; exec "$@"'
    protocol = {"_ARGCOMPLETE": "1", "COMP_LINE": "tansaku mc", "COMP_POINT": "10"}
    result = subprocess.run(
        ["bash", "-c", redirect, "bash", str(WRAPPER)],
        capture_output=True,
        text=True,
        env=_env(**protocol),
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "mcp"


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_prints_the_shell_code(shell: str):
    result = subprocess.run(
        [str(WRAPPER), "completion", shell], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "_ARGCOMPLETE" in result.stdout and "tansaku" in result.stdout
    if shell == "bash":
        assert "complete " in result.stdout and "COMP_LINE" in result.stdout
    if shell == "fish":
        assert "complete " in result.stdout and "_ARGCOMPLETE_SHELL fish" in result.stdout


def test_completion_refuses_another_shell():
    result = subprocess.run(
        [str(WRAPPER), "completion", "tcsh"], capture_output=True, text=True, env=_env(), timeout=60
    )
    assert result.returncode == 2
    assert result.stdout == "" and "invalid choice" in result.stderr


def _shell_env(tmp_path: Path) -> dict[str, str]:
    # The completion code runs `tansaku` by name, as a user's shell would find it on PATH.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "tansaku").symlink_to(WRAPPER)
    return _env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}")


_BASH_DRIVER = r"""
eval "$(tansaku completion bash)"
function=$(complete -p tansaku | sed -E 's/.* -F ([^ ]+) .*/\1/')
COMP_LINE="$1"; COMP_POINT=${#COMP_LINE}; read -ra COMP_WORDS <<< "$COMP_LINE"
[[ "$COMP_LINE" == *" " ]] && COMP_WORDS+=("")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); COMPREPLY=()
"$function" tansaku "${COMP_WORDS[-1]}" "${COMP_WORDS[-2]}"
printf '%s\n' "${COMPREPLY[@]}"
"""


def test_bash_itself_completes_with_the_printed_code(tmp_path: Path, two_collections: Path):
    env = _shell_env(tmp_path)

    def offered(line: str) -> list[str]:
        result = subprocess.run(
            ["bash", "-c", _BASH_DRIVER, "driver", line],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        return [word.strip() for word in result.stdout.splitlines() if word.strip()]

    assert offered("tansaku se") == ["search", "session"]
    assert offered("tansaku vsearch -c ") == ["notes", "work-log"]


@pytest.mark.skipif(shutil.which("fish") is None, reason="fish is not installed")
def test_fish_itself_completes_with_the_printed_code(tmp_path: Path, two_collections: Path):
    script = 'tansaku completion fish | source; complete -C "tansaku se"; complete -C "tansaku search -c "'
    result = subprocess.run(
        ["fish", "--no-config", "-c", script],
        capture_output=True, text=True, env=_shell_env(tmp_path), timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    words = [line.split("\t")[0] for line in result.stdout.splitlines()]
    assert words == ["search", "session", "notes", "work-log"]
