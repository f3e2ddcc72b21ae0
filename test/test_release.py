"""tools/release.py, run for real in a small throw-away git repository with fast hooks."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from .conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

RELEASE = REPO / "tools" / "release.py"

# Written here rather than copied, so the tests do not depend on what /work/main's CHANGELOG says
# today (after a real release its Unreleased section is empty).
CHANGELOG = """\
# Changelog

All notable changes to tansaku are listed here. The format follows
[Keep a Changelog](https://keepachangelog.com/en/1.1.0/); versions follow semantic versioning.

## Unreleased

### Changed
- `search` ranks instead of filtering: longer queries rank documents by BM25 over the terms
  they contain (thanks @alice, #123)
- Faster start-up.

### Added
- `tansaku doctor` checks the config (thanks @bob, #130)
- Shell completion for bash, zsh and fish (thanks @alice, #140)

### Fixed
"""

RELEASED_CHANGELOG = """\
# Changelog

All notable changes to tansaku are listed here. The format follows
[Keep a Changelog](https://keepachangelog.com/en/1.1.0/); versions follow semantic versioning.

## Unreleased

## [0.2.0] - 2024-05-01

Thanks to @alice (#123, #140), @bob (#130).

### Changed
- `search` ranks instead of filtering: longer queries rank documents by BM25 over the terms
  they contain (thanks @alice, #123)
- Faster start-up.

### Added
- `tansaku doctor` checks the config (thanks @bob, #130)
- Shell completion for bash, zsh and fish (thanks @alice, #140)
"""

VERSION_FILE = '"""tansaku (探索): local-first search for your own documents."""\n\n__version__ = "0.1.0"\n'

README = """\
# tansaku

```bash
python3 -m venv .venv && .venv/bin/pip install -q . && .venv/bin/tansaku --index sample search "restore file"
```
"""

FAST = "{python} -c pass\n"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    # A fresh CI machine has no git identity, and a developer's global config (signing, hooks)
    # must not leak in.
    for role in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{role}_NAME", "Release Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "release@example.invalid")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    root = tmp_path / "repo"
    write(root / "CHANGELOG.md", CHANGELOG)
    write(root / "src" / "tansaku" / "__init__.py", VERSION_FILE)
    write(root / "README.md", README)
    (root / "tools").mkdir()
    shutil.copy(RELEASE, root / "tools" / "release.py")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "start")
    return root


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8"))


def hooks(tmp_path: Path, text: str) -> str:
    path = tmp_path / "hooks.txt"  # outside the repository, so the tree stays clean
    path.write_text(text, encoding="utf-8")
    return str(path)


def release(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(repo / "tools" / "release.py"), *args]
    return subprocess.run(command, cwd=repo, capture_output=True, text=True, check=False)


def state(repo: Path) -> tuple[str, ...]:
    """Everything a release may change: HEAD, tags, status and the bytes of the edited files."""
    files = (repo / "CHANGELOG.md", repo / "src" / "tansaku" / "__init__.py")
    contents = tuple(path.read_bytes().decode("utf-8") for path in files)
    return (git(repo, "rev-parse", "HEAD"), git(repo, "tag"), git(repo, "status", "--porcelain"), *contents)


def commit_entry(repo: Path, entry: str) -> None:
    path = repo / "CHANGELOG.md"
    text = path.read_text(encoding="utf-8").replace(
        "## Unreleased\n", f"## Unreleased\n\n### Fixed\n{entry}\n", 1
    )
    path.write_text(text, encoding="utf-8")
    git(repo, "commit", "-q", "-am", "an entry")


def test_dry_run_changes_nothing_and_prints_the_diff_and_the_default_hooks(repo: Path):
    before = state(repo)
    result = release(repo, "0.2.0", "--dry-run", "--date", "2024-05-01")
    assert result.returncode == 0, result.stdout + result.stderr
    assert state(repo) == before
    out = result.stdout
    assert "--- a/CHANGELOG.md\n+++ b/CHANGELOG.md\n" in out
    assert "+## [0.2.0] - 2024-05-01\n" in out
    assert "+Thanks to @alice (#123, #140), @bob (#130).\n" in out
    assert "-### Fixed\n" in out
    assert '-__version__ = "0.1.0"\n+__version__ = "0.2.0"\n' in out
    for hook in (
        "ruff check src test evals",
        "pytest",
        "python -m build --sdist --wheel --outdir dist/0.2.0 .",
        "twine check --strict dist/0.2.0/*",
    ):
        assert hook in out
    # The README's line, installing the wheel into a fresh environment instead of the checkout.
    assert "python3 -m venv TMP/venv && TMP/venv/bin/pip install -q {wheel} && TMP/venv/bin/tansaku" in out
    assert 'git commit -m "release 0.2.0"' in out
    assert "git tag -a v0.2.0" in out
    assert "nothing changed" in out


def test_dry_run_check_runs_the_hooks_on_the_edited_files_then_restores_them(repo: Path, tmp_path: Path):
    seen = tmp_path / "seen"
    script = f"import shutil; shutil.copy('src/tansaku/__init__.py', {str(seen)!r})"
    before = state(repo)
    result = release(
        repo, "0.2.0", "--dry-run", "--check", "--hooks", hooks(tmp_path, f'{{python}} -c "{script}"\n')
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert '__version__ = "0.2.0"' in seen.read_text()
    assert state(repo) == before
    assert "the hooks passed" in result.stdout


def test_release_commits_tags_and_rewrites_the_changelog(repo: Path, tmp_path: Path):
    result = release(repo, "0.2.0", "--date", "2024-05-01", "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (repo / "CHANGELOG.md").read_text(encoding="utf-8") == RELEASED_CHANGELOG
    assert '__version__ = "0.2.0"' in (repo / "src" / "tansaku" / "__init__.py").read_text(encoding="utf-8")
    assert git(repo, "status", "--porcelain") == ""
    assert git(repo, "log", "-1", "--format=%s") == "release 0.2.0"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "CHANGELOG.md",
        "src/tansaku/__init__.py",
    ]
    assert git(repo, "tag") == "v0.2.0"
    assert git(repo, "cat-file", "-t", "v0.2.0") == "tag"  # annotated
    assert git(repo, "rev-parse", "v0.2.0^{commit}") == git(repo, "rev-parse", "HEAD")
    message = git(repo, "tag", "-l", "--format=%(contents)", "v0.2.0")
    assert message.startswith("## [0.2.0] - 2024-05-01\n\nThanks to @alice (#123, #140), @bob (#130).\n")
    assert "### Added\n- `tansaku doctor` checks the config (thanks @bob, #130)" in message
    assert "git push origin main v0.2.0" in result.stdout


@pytest.mark.parametrize("dirt", ["modified", "untracked"])
def test_a_dirty_tree_is_refused(repo: Path, tmp_path: Path, dirt: str):
    if dirt == "modified":
        (repo / "README.md").write_text("changed\n", encoding="utf-8")
    else:
        (repo / "notes.txt").write_text("new\n", encoding="utf-8")
    before = state(repo)
    result = release(repo, "0.2.0", "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 1
    assert "the working tree is not clean" in result.stdout
    assert state(repo) == before


def test_an_empty_unreleased_section_is_refused(repo: Path, tmp_path: Path):
    text = CHANGELOG.split("## Unreleased")[0] + "## Unreleased\n\n### Changed\n\n### Added\n"
    write(repo / "CHANGELOG.md", text)
    git(repo, "commit", "-q", "-am", "empty")
    result = release(repo, "0.2.0", "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 1
    assert "has no entries" in result.stdout
    assert git(repo, "tag") == ""


def test_an_existing_tag_is_refused(repo: Path, tmp_path: Path):
    git(repo, "tag", "v0.2.0")
    result = release(repo, "0.2.0", "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 1
    assert "tag v0.2.0 already exists" in result.stdout
    assert git(repo, "log", "-1", "--format=%s") == "start"


@pytest.mark.parametrize("version", ["0.1.0", "0.0.9", "0.1.0rc1"])
def test_a_version_not_above_the_current_one_is_refused(repo: Path, tmp_path: Path, version: str):
    result = release(repo, version, "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 1
    assert f"{version} is not above 0.1.0" in result.stdout


def test_a_version_not_above_the_changelog_is_refused(repo: Path, tmp_path: Path):
    assert release(repo, "0.2.0", "--hooks", hooks(tmp_path, FAST)).returncode == 0
    # __version__ set back by hand must not let an older number through: the CHANGELOG knows 0.2.0.
    path = repo / "src" / "tansaku" / "__init__.py"
    path.write_text(VERSION_FILE, encoding="utf-8")
    commit_entry(repo, "- A fix.")
    result = release(repo, "0.2.0rc1", "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 1
    assert "0.2.0rc1 is not above 0.2.0, the newest version (in CHANGELOG.md)" in result.stdout


@pytest.mark.parametrize("version", ["0.2", "v0.2.0", "0.2.0-rc.1", "00.2.0", "0.2.0.1"])
def test_a_malformed_version_is_refused(repo: Path, tmp_path: Path, version: str):
    result = release(repo, version, "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 1
    assert "is not a version X.Y.Z" in result.stdout


def test_a_pre_release_comes_before_its_final_release(repo: Path, tmp_path: Path):
    assert release(repo, "0.2.0rc1", "--hooks", hooks(tmp_path, FAST)).returncode == 0
    commit_entry(repo, "- A fix.")
    result = release(repo, "0.2.0", "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 0, result.stdout + result.stderr
    assert git(repo, "tag").split() == ["v0.2.0", "v0.2.0rc1"]


def test_a_failing_hook_leaves_the_tree_as_it_was(repo: Path, tmp_path: Path):
    marker = tmp_path / "third-hook-ran"
    failing = "import sys; print('hook saw', open('src/tansaku/__init__.py').read().split()[-1]); sys.exit(3)"
    text = f'{{python}} -c pass\n{{python}} -c "{failing}"\n{{python}} -c "open({str(marker)!r}, \'w\')"\n'
    before = state(repo)
    result = release(repo, "0.2.0", "--hooks", hooks(tmp_path, text))
    assert result.returncode == 3
    assert 'hook saw "0.2.0"' in result.stdout  # the hooks ran on the edited files
    assert "hook 2 failed (exit 3)" in result.stdout
    assert not marker.exists()
    assert state(repo) == before


def test_a_hook_that_changes_other_files_stops_the_release(repo: Path, tmp_path: Path):
    text = "{python} -c \"open('README.md', 'a').write('more')\"\n"
    result = release(repo, "0.2.0", "--hooks", hooks(tmp_path, text))
    assert result.returncode == 3
    assert "README.md" in result.stdout
    assert git(repo, "status", "--porcelain") == "M README.md"  # ours restored, theirs left
    assert git(repo, "tag") == ""


def test_a_malformed_credit_is_refused(repo: Path, tmp_path: Path):
    write(repo / "CHANGELOG.md", CHANGELOG.replace("(thanks @bob, #130)", "(Thanks @bob #130)"))
    git(repo, "commit", "-q", "-am", "typo")
    result = release(repo, "0.2.0", "--hooks", hooks(tmp_path, FAST))
    assert result.returncode == 1
    assert "credit not in the form '(thanks @name, #123)'" in result.stdout


def test_notes_of_a_series_combine_its_releases_newest_first(repo: Path, tmp_path: Path):
    assert release(repo, "0.2.0", "--date", "2024-05-01", "--hooks", hooks(tmp_path, FAST)).returncode == 0
    commit_entry(repo, "- `get` keeps line numbers (thanks @carol, #150)")
    assert release(repo, "0.2.1", "--date", "2024-06-01", "--hooks", hooks(tmp_path, FAST)).returncode == 0

    series = release(repo, "notes", "0.2")
    assert series.returncode == 0, series.stderr
    headings = re.findall(r"^## .+$", series.stdout, re.M)
    assert headings == ["## [0.2.1] - 2024-06-01", "## [0.2.0] - 2024-05-01"]
    assert "Thanks to @carol (#150)." in series.stdout
    assert "Thanks to @alice (#123, #140), @bob (#130)." in series.stdout

    one = release(repo, "notes", "0.2.1")
    assert one.returncode == 0
    assert one.stdout == "## [0.2.1] - 2024-06-01\n\nThanks to @carol (#150).\n\n### Fixed\n" + (
        "- `get` keeps line numbers (thanks @carol, #150)\n"
    )
    assert git(repo, "tag", "-l", "--format=%(contents)", "v0.2.1") == one.stdout.strip()


@pytest.mark.parametrize("selector", ["0.3", "0.2.5", "1.0.0"])
def test_notes_of_an_unknown_version_fail(repo: Path, selector: str):
    result = release(repo, "notes", selector)
    assert result.returncode == 1
    assert f"no release {selector} in CHANGELOG.md" in result.stderr
    assert result.stdout == ""


def load_release() -> ModuleType:
    spec = importlib.util.spec_from_file_location("release_tool", RELEASE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def test_the_readme_line_installs_the_wheel_into_a_fresh_environment():
    tool = load_release()
    line = tool.readme_install_line((REPO / "README.md").read_text(encoding="utf-8"))
    assert line.startswith("python3 -m venv {venv} && {venv}/bin/pip install -q {wheel} && ")
    assert ".venv" not in line


def test_credits_accept_several_people_and_pull_requests():
    tool = load_release()
    items = [
        "- a (thanks @alice, @bob, #1, #2)",
        "- b (thanks @bob, #2)",
        "- c, ours",
        "- d (thanks @dan-x, #9)",
    ]
    assert tool.thanks_line(tool.credits(items)) == "Thanks to @alice (#1, #2), @bob (#1, #2), @dan-x (#9)."
    assert tool.malformed_credits(items) == []


def test_the_repository_changelog_is_releasable():
    # Caught here, not on release day: an Unreleased entry the release would refuse.
    tool = load_release()
    lines = (REPO / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
    section = tool.unreleased_section(lines)
    assert section is not None, "CHANGELOG.md has no '## Unreleased' section"
    items = tool.entries(tool.section_body(lines, section))
    assert tool.malformed_credits(items) == []
