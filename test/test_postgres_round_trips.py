"""A keyword search on PostgreSQL in few statements (issue 40), with the same answers.

Each statement is a round trip to the server (0.3 to 5 ms on a loaded machine), so the count is
what the p50 of a search depends on past the scoring itself. Counted on a real server: every
statement a read block runs goes through PgConnection.execute.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tansaku.api import Tansaku
from tansaku.search.keyword import SearchOptions, search
from tansaku.store import db
from tansaku.store import documents as sqlite_store
from tansaku.store.postgres import documents as pg_store
from tansaku.store.postgres import keyword_parts
from tansaku.store.postgres.backend import PgConnection, PostgresBackend

from .conftest import REPO, CliResult, share_collections
from .postgres_fixture import requires_postgres
from .test_postgres_bm25_sql import HARD

pytestmark = requires_postgres

SHORT = "restore backup"
LONG = "how do I restore a file from the nightly backup when the repository is locked"


@pytest.fixture
def indexed(cli: Callable[..., CliResult], postgres_url: str, tmp_path: Path, index_path: Path) -> Any:
    shutil.copytree(REPO / "fixtures/sample", tmp_path / "sample")
    assert cli("collection", "add", tmp_path / "sample", "--name", "sample").exit_code == 0
    share_collections(postgres_url)
    assert cli("--index", postgres_url, "update", "-c", "sample").exit_code == 0
    return postgres_url


@pytest.fixture
def statements(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every statement PgConnection runs, in order."""
    seen: list[str] = []
    execute = PgConnection.execute

    def counted(self: PgConnection, sql: str, params: Any = None) -> Any:
        seen.append(sql)
        return execute(self, sql, params)

    monkeypatch.setattr(PgConnection, "execute", counted)
    yield seen


def _top(api: Tansaku, query: str) -> list[tuple[str, float]]:
    return [(hit.path, hit.score) for hit in api.search(query, limit=10, snippets=False).hits]


@pytest.mark.parametrize(("query", "most"), [(SHORT, 5), (LONG, 8)])
def test_a_search_reads_in_few_statements(indexed: str, statements: list[str], query: str, most: int) -> None:
    api = Tansaku(indexed)
    config = api.config()
    collections = list(config.collections.values())
    with api.backend.reading() as conn:
        statements.clear()
        result = search(conn, query, collections, config.contexts, SearchOptions(limit=10, snippets=False))
    assert result.hits
    # The candidates (a long query: twice, with its words' frequencies between), rescoring's
    # frequencies and parts (two statements, not up to three per word), the results' documents
    # and paths (three: first_copies reads the results for the hits too).
    assert len(statements) <= most, "\n".join(sql[:60] for sql in statements)
    # The read block itself: one statement to begin, none to end (the connection's close ends it).
    statements.clear()
    with api.backend.reading():
        pass
    assert len(statements) == 1 and statements[0].startswith("BEGIN"), statements


def test_searches_rank_as_on_sqlite(indexed: str) -> None:
    sqlite, postgres = Tansaku(), Tansaku(indexed)
    for query in (SHORT, LONG, "compress OR archive", "the", "wrong password", "zebrafish backup"):
        assert _top(postgres, query) == _top(sqlite, query), query


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
def test_the_parts_read_together_are_those_read_one_at_a_time(indexed: str, index_path: Path) -> None:
    sqlite = db.open_read(index_path)
    backend = PostgresBackend(indexed)
    with backend.reading() as one:
        ids = [int(row[0]) for row in one.execute("SELECT id FROM documents ORDER BY id")][::2]
        frequencies = {expression: pg_store.phrase_frequency(one, expression) for expression in HARD}
        weights = [sqlite_store.BM25_WEIGHTS, sqlite_store.PROSE_WEIGHTS]
        asked = [(expression, w) for expression in HARD for w in weights]
        bm25 = [pg_store.phrase_bm25(one, expression, ids, w) for expression, w in asked]
        present = [pg_store.phrase_documents(one, expression, ids) for expression in HARD]
    with backend.reading() as together:  # a fresh read block: nothing known beforehand
        assert keyword_parts.phrase_frequencies(together, HARD) == frequencies
        assert keyword_parts.phrase_parts(together, asked, HARD, ids) == (bm25, present)
    # ... and they are FTS5's (bit for bit).
    assert bm25 == [sqlite_store.phrase_bm25(sqlite, expression, ids, w) for expression, w in asked]
    assert frequencies == {e: sqlite_store.phrase_frequency(sqlite, e) for e in HARD}
    # SQLite's together-forms ask one at a time, with the same answers.
    assert sqlite_store.phrase_frequencies(sqlite, HARD) == frequencies
    assert sqlite_store.phrase_parts(sqlite, asked, HARD, ids) == (bm25, present)
    assert sum(map(len, bm25)) > 20
    sqlite.close()


def test_a_search_connects_once(indexed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The collection list is read on a connection that the search's read block then takes."""
    connects: list[int] = []
    connect = PostgresBackend._connect

    def counted(self: PostgresBackend) -> Any:
        connects.append(1)
        return connect(self)

    monkeypatch.setattr(PostgresBackend, "_connect", counted)
    api = Tansaku(indexed)
    assert _top(api, SHORT)
    assert len(connects) == 1
    assert _top(api, SHORT)
    assert len(connects) == 2  # one per search: a read block's connection is not kept


def test_a_handed_connection_the_server_closed_is_replaced(indexed: str) -> None:
    import psycopg

    backend = PostgresBackend(indexed)
    with backend.unchecked() as conn:
        pid = conn.execute("SELECT pg_backend_pid()").fetchone()[0]
    with psycopg.connect(indexed, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    with backend.reading() as conn:
        assert conn.execute("SELECT pg_backend_pid()").fetchone()[0] != pid
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] > 0
