"""Issue 39: `tansaku skill show|install|remove`, the SKILL.md that teaches an agent the JSON CLI.

The skill is generated for the installed version, and every fenced `tansaku` command in it is
run here against the sample collection, with the exit codes its `# exit` comment promises, so
the skill cannot teach a command that does not work. Every path goes through $HOME and the
working folder, both inside the test's own folder (conftest's `isolated`).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import tansaku
from tansaku.errors import EXIT_CODES, TansakuError
from tansaku.skill import codes, content
from tansaku.skill.content import PLACEHOLDERS, render_skill, skill_version

from .conftest import REPO
from .models_fixture import requires_llama, requires_minilm
from .test_exit_codes import error_classes

VERSION = tansaku.__version__
WRAPPER = REPO / "bin" / "tansaku"
CLAUDE = Path(".claude/skills/tansaku/SKILL.md")
CODEX = Path(".agents/skills/tansaku/SKILL.md")
# `# exit 0 | 1 DOC_NOT_FOUND | 3 NO_VECTORS`: the exit codes a command may end with, and the
# error code that goes with each non-zero one.
_PROMISE = re.compile(r"#\s*exit (\d+(?: [A-Z_]+)?(?: \| \d+(?: [A-Z_]+)?)*)")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The working folder a project-scope install writes into."""
    folder = tmp_path / "project"
    folder.mkdir()
    monkeypatch.chdir(folder)
    return folder


@pytest.fixture
def home() -> Path:
    return Path(os.environ["HOME"])


def front_matter(text: str) -> dict:
    assert text.startswith("---\n")
    head, _, _ = text[4:].partition("\n---\n")
    return yaml.safe_load(head)


# --- what `skill show` prints -------------------------------------------------------------------


def test_show_prints_an_agent_skill_for_this_version(cli, project: Path):
    result = cli("skill", "show")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == render_skill()
    meta = front_matter(result.stdout)
    # The Agent Skills format (Claude Code, Codex): a name that is the folder's, lower case with
    # hyphens, at most 64 characters; a description of at most 1024.
    assert meta["name"] == "tansaku" == CLAUDE.parent.name
    assert re.fullmatch(r"[a-z0-9-]{1,64}", meta["name"])
    assert 0 < len(meta["description"]) <= 1024
    assert len(meta["compatibility"]) <= 500
    assert meta["metadata"] == {
        content.VERSION_KEY: VERSION,
        "generated-by": meta["metadata"]["generated-by"],
    }
    assert all(isinstance(value, str) for value in meta["metadata"].values())
    assert f'  tansaku-skill-version: "{VERSION}"\n' in result.stdout
    assert skill_version(result.stdout) == VERSION
    assert "tansaku --version" in result.stdout
    assert not list(project.iterdir())  # show writes nothing


def test_show_snapshot_with_the_version_masked(cli, project: Path, snapshot):
    text = cli("skill", "show").stdout
    assert text.count(VERSION) >= 3  # the front matter, the version check, the compatibility line
    assert text.replace(VERSION, "X.Y.Z") == snapshot


def test_show_json(cli, project: Path):
    result = cli("skill", "show", "--json")
    assert result.exit_code == 0
    assert result.json() == {"name": "tansaku", "version": VERSION, "text": render_skill()}


def test_the_version_line_is_the_skills_own_marker():
    assert skill_version(render_skill("9.8.7")) == "9.8.7"
    assert skill_version("---\nname: mine\ndescription: x\n---\n\ntansaku-skill-version: 1.0\n") is None
    assert skill_version("# no front matter\ntansaku-skill-version: 1.0\n") is None
    assert skill_version("---\nmetadata:\n  tansaku-skill-version: '2.0'\n---\n") == "2.0"


# --- the code tables come from the code ---------------------------------------------------------


def test_every_exit_code_has_advice_and_its_meaning_from_errors_py():
    assert list(codes.EXIT_ADVICE) == list(EXIT_CODES)
    text = render_skill()
    for code, meaning in EXIT_CODES.items():
        assert f"| {code} | {meaning} | {codes.EXIT_ADVICE[code]} |" in text


def test_error_rows_are_the_error_classes_codes():
    classes = {cls.code: cls for cls in error_classes()}
    text = render_skill()
    for row in codes.error_rows():
        assert classes[row.code].exit_code == row.exit_code, row.code
        assert f"| `{row.code}` | {row.exit_code} |" in text


def _emitted_codes() -> set[str]:
    """Every "UPPER_CASE" string literal of the package outside tansaku.skill, and error codes."""
    found: set[str] = set()
    src = Path(tansaku.__file__).parent
    for path in src.rglob("*.py"):
        if "skill" in path.relative_to(src).parts:
            continue
        found |= set(re.findall(r"\"([A-Z][A-Z_]{3,})\"", path.read_text(encoding="utf-8")))
    return found


def test_every_warning_code_listed_is_one_tansaku_emits():
    emitted = _emitted_codes()
    rows = codes.warning_rows()
    assert len({r.code for r in rows}) == len(rows)
    for row in rows:
        assert row.code in emitted, f"{row.code} is not a code tansaku emits (renamed?)"
        assert row.exit_code is None
        assert f"| `{row.code}` | {row.advice} |" in render_skill()


def test_the_warnings_every_search_can_give_are_listed():
    listed = {row.code for row in codes.warning_rows()}
    for code in ("PARTIAL_MATCH", "NO_COLLECTIONS", "QUICK_VECTORS", "PENDING_VECTORS", "ALL_SKIPPED"):
        assert code in listed


# --- install, idempotence, force, remove, dry run -----------------------------------------------


def test_install_writes_the_shown_file_and_a_second_install_changes_nothing(cli, project: Path):
    first = cli("skill", "install", "--json")
    assert first.exit_code == 0, first.stderr
    path = project / CLAUDE
    assert path.read_text(encoding="utf-8") == cli("skill", "show").stdout
    (change,) = first.json()["changes"]
    assert change == {
        "agent": "claude",
        "scope": "project",
        "path": str(path),
        "action": "created",
        "version": VERSION,
        "previous_version": None,
    }
    before = path.stat().st_mtime_ns
    second = cli("skill", "install")
    assert second.exit_code == 0
    assert second.stdout == f"unchanged {path} (tansaku {VERSION})\n"
    assert path.stat().st_mtime_ns == before  # not even rewritten
    assert sorted(p.name for p in path.parent.iterdir()) == ["SKILL.md"]  # no temporary file left


def test_install_updates_a_skill_of_another_version(cli, project: Path):
    path = project / CLAUDE
    path.parent.mkdir(parents=True)
    path.write_text(render_skill("0.0.1"), encoding="utf-8")
    result = cli("skill", "install", "--json")
    assert result.exit_code == 0, result.stderr
    (change,) = result.json()["changes"]
    assert (change["action"], change["previous_version"], change["version"]) == ("updated", "0.0.1", VERSION)
    assert path.read_text(encoding="utf-8") == render_skill()
    assert cli("skill", "install").stdout.startswith("unchanged ")


def test_a_skill_tansaku_did_not_write_is_kept_unless_forced(cli, project: Path):
    path = project / CLAUDE
    path.parent.mkdir(parents=True)
    mine = "---\nname: tansaku\ndescription: my own notes on tansaku\n---\n\nHand-written.\n"
    path.write_text(mine, encoding="utf-8")
    refused = cli("skill", "install", "--json")
    assert refused.exit_code == 2
    assert refused.stdout == ""
    assert refused.error()["code"] == "SKILL_NOT_OURS"
    assert "--force" in refused.error()["hint"]
    assert path.read_text(encoding="utf-8") == mine
    not_removed = cli("skill", "remove", "--json")
    assert not_removed.exit_code == 2
    assert not_removed.error()["code"] == "SKILL_NOT_OURS"
    assert path.read_text(encoding="utf-8") == mine
    forced = cli("skill", "install", "--force")
    assert forced.exit_code == 0, forced.stderr
    assert forced.stdout.startswith(f"replaced {path} ")
    assert skill_version(path.read_text(encoding="utf-8")) == VERSION


def test_a_refusal_for_one_agent_writes_nothing_for_the_others(cli, project: Path):
    foreign = project / CODEX
    foreign.parent.mkdir(parents=True)
    foreign.write_text("# not a tansaku skill\n", encoding="utf-8")
    result = cli("skill", "install", "--agent", "claude", "--agent", "codex")
    assert result.exit_code == 2
    assert "did not write it" in result.stderr
    assert not (project / CLAUDE).exists()


def test_remove_deletes_only_its_own_file_and_its_folder_when_empty(cli, project: Path):
    assert cli("skill", "install", "--agent", "claude", "--agent", "codex").exit_code == 0
    (project / CODEX).with_name("notes.txt").write_text("the user's own file\n", encoding="utf-8")
    result = cli("skill", "remove", "--agent", "claude", "--agent", "codex", "--json")
    assert result.exit_code == 0, result.stderr
    assert [c["action"] for c in result.json()["changes"]] == ["removed", "removed"]
    assert not (project / CLAUDE).parent.exists()  # the tansaku folder, now empty
    assert (project / CLAUDE).parent.parent.is_dir()  # .claude/skills itself stays
    assert not (project / CODEX).exists()
    assert (project / CODEX).with_name("notes.txt").exists()
    again = cli("skill", "remove", "--json")
    assert again.exit_code == 1
    assert again.error()["code"] == "SKILL_NOT_FOUND"


def test_dry_runs_change_nothing(cli, project: Path):
    planned = cli("skill", "install", "--dry-run", "--json")
    assert planned.exit_code == 0
    assert planned.json()["dry_run"] is True
    assert planned.json()["changes"][0]["action"] == "created"
    assert not list(project.iterdir())
    text = cli("skill", "install", "--dry-run").stdout
    assert text == f"would create {project / CLAUDE} (tansaku {VERSION})\ndry run: nothing was changed\n"
    assert cli("skill", "install").exit_code == 0
    removal = cli("skill", "remove", "--dry-run")
    assert removal.exit_code == 0
    assert removal.stdout.startswith(f"would remove {project / CLAUDE} ")
    assert (project / CLAUDE).exists()


def test_global_installs_go_to_the_home_folder_of_each_agent(cli, project: Path, home: Path):
    result = cli("skill", "install", "--global", "--agent", "claude", "--agent", "codex", "--json")
    assert result.exit_code == 0, result.stderr
    assert [c["path"] for c in result.json()["changes"]] == [str(home / CLAUDE), str(home / CODEX)]
    assert {c["scope"] for c in result.json()["changes"]} == {"global"}
    assert not list(project.iterdir())
    assert cli("skill", "remove", "--global", "--agent", "codex").exit_code == 0
    assert (home / CLAUDE).exists() and not (home / CODEX).exists()


def test_dir_installs_for_any_other_agent(cli, project: Path, tmp_path: Path):
    result = cli("skill", "install", "--dir", tmp_path / "other-agent" / "skills", "--json")
    assert result.exit_code == 0, result.stderr
    path = tmp_path / "other-agent" / "skills" / "tansaku" / "SKILL.md"
    assert result.json()["changes"][0]["path"] == str(path)
    assert skill_version(path.read_text(encoding="utf-8")) == VERSION
    assert not (project / CLAUDE).exists()  # --dir alone: no default agent
    assert cli("skill", "install", "--global", "--dir", tmp_path / "x").exit_code == 2


def test_a_folder_that_cannot_be_written_is_a_step_that_failed(cli, project: Path):
    (project / ".claude").write_text("a file where the folder would go\n", encoding="utf-8")
    result = cli("skill", "install", "--json")
    assert result.exit_code == 4
    assert result.error()["code"] == "SKILL_WRITE_FAILED"


# --- every command the skill teaches works as it says -------------------------------------------


def skill_commands(text: str) -> list[tuple[str, set[int], dict[int, set[str]]]]:
    """Each fenced `tansaku` command line, the exit codes its comment allows, and the error code
    named with each non-zero one."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            if not line.startswith("tansaku "):
                continue
            promise = _PROMISE.search(line)
            assert promise, f"no `# exit N` promise: {line}"
            allowed: set[int] = set()
            named: dict[int, set[str]] = {}
            for part in promise.group(1).split(" | "):
                code, _, name = part.partition(" ")
                allowed.add(int(code))
                if name:
                    named.setdefault(int(code), set()).add(name)
            found.append((line, allowed, named))
    return found


def fill(line: str, values: dict[str, str]) -> list[str]:
    words = shlex.split(line, comments=True)
    assert words[0] == "tansaku"
    filled = []
    for word in words[1:]:
        for name in sorted(values, key=len, reverse=True):
            word = re.sub(rf"\b{name}\b", values[name], word)
        filled.append(word)
    return filled


def sample_values(cli) -> dict[str, str]:
    hits = cli("search", "restore", "--json").json()["results"]
    assert len(hits) >= 2
    return {
        "COLLECTION": "sample",
        "DOCID": hits[0]["docid"],
        "DOCID2": hits[1]["docid"],
        "LINE": str(hits[0]["snippet"]["start_line"]),
    }


def installed_skill(cli, project: Path) -> str:
    assert cli("skill", "install").exit_code == 0
    return (project / CLAUDE).read_text(encoding="utf-8")


def run_the_skills_commands(cli, text: str) -> dict[str, int]:
    values = sample_values(cli)
    assert set(values) == set(PLACEHOLDERS)
    codes_by_line: dict[str, int] = {}
    commands = skill_commands(text)
    assert len(commands) >= 10
    for line, allowed, named in commands:
        argv = fill(line, values)
        assert not [w for w in argv if re.search(r"\b(COLLECTION|DOCID2?|LINE)\b", w)], argv
        result = cli(*argv)
        assert result.exit_code in allowed, (line, result.exit_code, result.stderr[-800:])
        if result.exit_code and "--json" in argv and result.exit_code in named:
            assert result.error()["code"] in named[result.exit_code], (line, result.stderr)
        if result.exit_code == 0 and "--json" in argv:
            json.loads(result.stdout)  # the JSON the skill tells the agent to read
        codes_by_line[line] = result.exit_code
    return codes_by_line


def test_every_command_of_the_installed_skill_runs_as_promised_without_vectors(
    cli, project: Path, indexed: Path, no_model_env
):
    text = installed_skill(cli, project)
    ran = run_the_skills_commands(cli, text)
    vsearch = next(line for line in ran if line.startswith("tansaku vsearch"))
    assert ran[vsearch] == 1  # MODEL_MISSING: no model on this machine; the skill says fall back
    assert all(code == 0 for line, code in ran.items() if line != vsearch)


@requires_llama
@requires_minilm
def test_every_command_of_the_installed_skill_exits_0_with_vectors(cli, project: Path, indexed: Path, model):
    assert cli("embed", "--json").exit_code == 0
    ran = run_the_skills_commands(cli, installed_skill(cli, project))
    assert set(ran.values()) == {0}, ran


def test_what_the_skill_says_about_a_missing_index_holds(cli, project: Path):
    status = cli("status", "--json")
    assert status.exit_code == 0  # "exit 0, even when there is no index yet"
    data = status.json()
    assert data["index_exists"] is False
    assert "INDEX_MISSING" in {w["code"] for w in data["warnings"]}
    search = cli("search", "restore", "--json")
    assert search.exit_code == 3  # never "no results"
    assert search.error()["code"] == "INDEX_MISSING"


def test_the_version_the_skill_checks_is_what_tansaku_prints(cli, project: Path):
    result = cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"tansaku {skill_version(render_skill())}"


def test_the_skills_error_codes_are_real_errors():
    for row in codes.error_rows():
        assert any(cls.code == row.code and issubclass(cls, TansakuError) for cls in error_classes())


# --- the entry point, in a real process ---------------------------------------------------------


@pytest.mark.subprocess
def test_a_real_process_installs_shows_and_removes(project: Path, home: Path):
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(WRAPPER), *args],
            capture_output=True,
            text=True,
            env={**os.environ, "TANSAKU_PYTHON": sys.executable},
            cwd=project,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    version = run("--version")
    assert version.returncode == 0 and version.stdout == f"tansaku {VERSION}\n"
    shown = run("skill", "show")
    assert shown.returncode == 0 and shown.stderr == ""
    installed = run("skill", "install", "--global", "--json")
    assert installed.returncode == 0, installed.stderr
    assert json.loads(installed.stdout)["changes"][0]["path"] == str(home / CLAUDE)
    assert (home / CLAUDE).read_text(encoding="utf-8") == shown.stdout
    assert not (project / ".claude").exists()
    removed = run("skill", "remove", "--global")
    assert removed.returncode == 0
    missing = run("skill", "remove", "--global", "--json")
    assert missing.returncode == 1
    assert missing.stdout == ""
    assert json.loads(missing.stderr)["error"]["code"] == "SKILL_NOT_FOUND"
