"""Shared fixtures: every test gets its own config dir and index file, never the real home."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import os
import re
import shutil
import signal
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

# A scripted OpenAI-compatible endpoint (server, remote_embed) and an environment without the
# developer's models or remote settings (no_model_env), for the modules that ask for them.
from .openai_server import no_model_env, remote_embed, server  # noqa: F401

# The PostgreSQL server fixtures (postgres_server, postgres_url) for the backend's tests.
from .postgres_fixture import own_postgres_server, postgres_server, postgres_url  # noqa: F401

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


# Where a test's index lives. A module marked `pytest.mark.both_backends` runs each of its tests
# twice, with a SQLite index and with a PostgreSQL one (a fresh database per test, named by the
# config's `[index] url`), except the tests marked `sqlite_only` (about the SQLite file itself),
# the tests that use no index, and snapshot tests (SQLite only: see pytest_generate_tests).
# TANSAKU_TEST_BACKEND=postgresql puts every other test's index in PostgreSQL too (see
# docs/backends.md); tests about the SQLite file, or that replace the config file, still use SQLite.
BACKEND_ENV = "TANSAKU_TEST_BACKEND"
BACKENDS = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "index_backend" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("both_backends") is None:
        return
    if metafunc.definition.get_closest_marker("sqlite_only") is not None:
        return
    # A test without an index (no CLI runner, no indexed sample) would only run twice alike; a
    # snapshot test compares with SQLite's recorded output, whose name has no backend in it.
    if not {"cli", "indexed"} & set(metafunc.fixturenames) or "snapshot" in metafunc.fixturenames:
        return
    metafunc.parametrize("index_backend", BACKENDS, indirect=True)


@pytest.fixture
def index_backend(request: pytest.FixtureRequest) -> str:
    """``sqlite`` or ``postgresql``: where this test's index lives."""
    if request.node.get_closest_marker("sqlite_only") is not None:
        return "sqlite"
    return str(getattr(request, "param", None) or os.environ.get(BACKEND_ENV) or "sqlite")


@pytest.fixture(autouse=True)
def isolated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, index_backend: str
) -> Path:
    if index_backend == "postgresql":
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


class _Qmark:
    """A psycopg connection that takes SQLite's ``?`` placeholders, for the tests' own SQL."""

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def execute(self, sql: str, params: Any = ()) -> Any:
        return self.raw.execute(sql.replace("?", "%s"), params)


@contextlib.contextmanager
def index_sql(index_path: Path) -> Iterator[Any]:
    """An autocommit connection to the test's index, SQLite or PostgreSQL, whichever the config
    names (its ``[index] url``): for tests that read or change rows behind tansaku's back. The
    SQL must mean the same on both (tables both schemas share, ``?`` placeholders)."""
    import tomllib

    config = Path(os.environ["TANSAKU_CONFIG_DIR"]) / "index.toml"
    url = None
    if config.exists():
        url = tomllib.loads(config.read_text(encoding="utf-8")).get("index", {}).get("url")
    if url is None:
        import sqlean

        conn = sqlean.connect(str(index_path), isolation_level=None)
        try:
            yield conn
        finally:
            conn.close()
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as raw:
        yield _Qmark(raw)


@pytest.fixture
def index_path(isolated: Path) -> Path:
    return isolated / "cache" / "index.sqlite"


@pytest.fixture
def config_path(isolated: Path) -> Path:
    return isolated / "config" / "index.toml"


@pytest.fixture
def without_pdf_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """As if the docs extra (pypdfium2) were not installed, for the extraction worker, which is a
    process of its own: a pypdfium2 that cannot be imported comes first on its path. Call the
    returned function to install the extra again."""
    hidden = tmp_path / "without_pdf_extra" / "pypdfium2"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('hidden by the test')\n")
    previous = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(hidden.parent), previous) if p))

    def install() -> None:
        if previous is None:
            monkeypatch.delenv("PYTHONPATH")
        else:
            monkeypatch.setenv("PYTHONPATH", previous)

    return install


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


def interruptible() -> None:
    """``preexec_fn`` for a child a test interrupts as Ctrl-C does: SIGINT back to its default, so
    Python turns it into KeyboardInterrupt even when this run started in the background (a shell
    without job control ignores SIGINT for background commands, and children inherit that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def share_collections(url: str) -> None:
    """Register the default index's collections in the database ``url`` too. Before issue 40 the
    default config's list was every `--index URL`'s; now each index has its own, so a test that
    indexes the same folders into both registers them in both."""
    from dataclasses import replace

    from tansaku.api import Tansaku

    default = Tansaku().config()
    api = Tansaku(url)
    old = api.config()
    collections = {**old.collections, **default.collections}
    new = replace(old, collections=collections, contexts={**old.contexts, **default.contexts})
    api._save_config(old, new)
