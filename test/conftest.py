"""Shared fixtures: every test gets its own config dir and index file, never the real home."""

from __future__ import annotations

import inspect
import io
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

# The PostgreSQL server fixtures (postgres_server, postgres_url) for the backend's tests.
from .postgres_fixture import postgres_server, postgres_url  # noqa: F401

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "fixtures" / "sample"

_CJK_TEXT = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # CI runs the `cjk` tests a second time with rjieba hidden (test/without_rjieba). Marking by
    # content, not by hand, keeps a new Chinese test from being left out of that run.
    for item in items:
        function = getattr(item, "function", None)
        source = inspect.getsource(function) if function is not None else ""
        if _CJK_TEXT.search(item.name) or _CJK_TEXT.search(source):
            item.add_marker(pytest.mark.cjk)


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> object:
        return json.loads(self.stdout)

    def error(self) -> dict:
        return json.loads(self.stderr)["error"]


# TANSAKU_TEST_BACKEND=postgresql runs the tests with their index in PostgreSQL: each test's
# config starts with `[index] url = ...` naming a fresh database (see docs/backends.md). Tests about
# the SQLite file itself, or that replace the config file, still use SQLite.
BACKEND_ENV = "TANSAKU_TEST_BACKEND"


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Path:
    if os.environ.get(BACKEND_ENV) == "postgresql":
        url = request.getfixturevalue("postgres_url")
        (tmp_path / "config").mkdir()
        (tmp_path / "config" / "index.toml").write_text(f'[index]\nurl = "{url}"\n', encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("TANSAKU_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("TANSAKU_INDEX_PATH", str(tmp_path / "cache" / "index.sqlite"))
    monkeypatch.setenv("TANSAKU_LOCK_TIMEOUT", "0.5")
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    return tmp_path


@pytest.fixture
def index_path(isolated: Path) -> Path:
    return isolated / "cache" / "index.sqlite"


@pytest.fixture
def config_path(isolated: Path) -> Path:
    return isolated / "config" / "index.toml"


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    """A private copy of the bundled sample collection (tests may change it)."""
    target = tmp_path / "sample"
    shutil.copytree(SAMPLE, target)
    return target


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run the CLI in-process, capturing output. Unexpected exceptions propagate (TANSAKU_DEBUG)."""
    from tansaku.cli.main import main

    def run(*args: str, cwd: Path | None = None) -> CliResult:
        out, err = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        monkeypatch.setenv("TANSAKU_DEBUG", "1")
        if cwd is not None:
            monkeypatch.chdir(cwd)
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:  # argparse usage errors
            code = int(exc.code or 0)
        finally:
            monkeypatch.setattr(sys, "stdout", sys.__stdout__)
            monkeypatch.setattr(sys, "stderr", sys.__stderr__)
        return CliResult(code, out.getvalue(), err.getvalue())

    return run


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The MiniLM test model as the configured embedding model, with a private models folder."""
    from .models_fixture import minilm_gguf

    path = minilm_gguf()
    monkeypatch.setenv("TANSAKU_EMBED_MODEL", str(path))
    monkeypatch.setenv("TANSAKU_MODEL_DIR", str(tmp_path / "models"))
    return path


@pytest.fixture
def indexed(cli: Callable[..., CliResult], sample: Path) -> Path:
    result = cli("collection", "add", sample, "--name", "sample")
    assert result.exit_code == 0, result.stderr
    return sample
