"""Keyword search scored inside PostgreSQL (store/postgres/bm25_sql.py) gives FTS5's answers, bit
for bit: the same corpus indexed by both backends, then every expression search writes (and a
few harder ones) asked of both stores directly, with the raw bm25 compared exactly, not rounded as
the CLI prints it.

The cases where SQL scoring could drift from FTS5: a word in most documents (its IDF clamped), a
phrase of several words and a prefix phrase (positions checked in SQL), the definitions columns
and the prose weights (a weight of 0: a match that scores nothing), an OR whose branch does not
match, a NOT, a collection filter (ties by path), ``--where`` (applied before the limit), Chinese.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tansaku.fields.where import parse_where
from tansaku.store import db
from tansaku.store import documents as sqlite_store
from tansaku.store.fields import document_filter
from tansaku.store.postgres import bm25_sql
from tansaku.store.postgres import documents as pg_store
from tansaku.store.postgres.backend import PostgresBackend
from tansaku.store.postgres.expression import parse

from .conftest import REPO, CliResult, share_collections
from .postgres_fixture import requires_postgres
from .test_postgres_ranking import _expressions

pytestmark = requires_postgres

COLLECTIONS = (
    ("sample", "fixtures/sample"),
    ("chunking", "fixtures/chunking"),
    ("garden", "fixtures/fields"),
)

HARD = [
    '"the"',  # in nearly every document: IDF clamped to 1e-6, ties broken by id or path
    '"the" OR "zebrafish"',  # an OR branch that matches nothing
    '"backup" OR "the"',
    '"the" NOT "backup"',  # a NOT: its right side never counts
    '"the" AND ("restore" OR "compress" *)',  # a prefix inside an OR
    '"repository is locked"',  # several words: positions checked in SQL
    '"wrong password" OR "the file" *',  # several words, the last a prefix
    '"of the" OR "in the" OR "to the"',
    '{title headings} : "backup" OR options : "count"',  # column filters, the definitions columns
    '{title headings} : "file permissions"',
    '"压缩" OR "备份"',  # Chinese, segmented before indexing
    '"garden" AND "python"',
    '"nothing at all here"',
]


@pytest.fixture
def both(cli: Callable[..., CliResult], postgres_url: str, tmp_path: Path, index_path: Path) -> Any:
    for name, source in COLLECTIONS:
        shutil.copytree(REPO / source, tmp_path / name)
        added = cli("collection", "add", tmp_path / name, "--name", name, "--mask", "**/*")
        assert added.exit_code == 0, added.stderr
    share_collections(postgres_url)
    for name, _ in COLLECTIONS:  # in the same order: both backends number the documents alike
        updated = cli("--index", postgres_url, "update", "-c", name)
        assert updated.exit_code == 0, updated.stderr
    sqlite = db.open_read(index_path)
    with PostgresBackend(postgres_url).reading() as postgres:
        yield sqlite, postgres
    sqlite.close()


def _named(store: Any, conn: Any, rows: list[tuple[int, float]]) -> list[tuple[str, float]]:
    paths = store.paths_by_ids(conn, [doc for doc, _ in rows])
    return [(paths[doc], score) for doc, score in rows]


def test_keyword_search_scores_in_sql_as_fts5_does(both: Any) -> None:
    sqlite, postgres = both
    numbering = "SELECT id, collection, path FROM documents ORDER BY id"
    ids = [tuple(row) for row in sqlite.execute(numbering)]
    assert [tuple(row) for row in postgres.execute(numbering).fetchall()] == ids  # ties break alike
    some = [row[0] for row in ids][::3]
    met = {expression: sqlite_store.phrase_frequency(sqlite, expression) for expression in HARD[:-1]}
    assert all(met.values()), met  # each hard case is met: it matches something
    compared = 0
    for expression in [*HARD, *_expressions()]:
        for weights in (sqlite_store.BM25_WEIGHTS, sqlite_store.PROSE_WEIGHTS):
            for collection, limit in ((None, None), ("sample", 10), ("garden", None)):
                expected = sqlite_store.keyword_search(sqlite, expression, collection, limit, weights)
                found = pg_store.keyword_search(postgres, expression, collection, limit, weights)
                assert found == expected, (expression, weights, collection)
                compared += len(expected)
            expected_parts = sqlite_store.phrase_bm25(sqlite, expression, some, weights)
            assert pg_store.phrase_bm25(postgres, expression, some, weights) == expected_parts, expression
        assert pg_store.phrase_documents(postgres, expression, some) == sqlite_store.phrase_documents(
            sqlite, expression, some
        ), expression
        assert pg_store.phrase_frequency(postgres, expression) == sqlite_store.phrase_frequency(
            sqlite, expression
        ), expression
        for collection in ("sample", "chunking"):
            assert pg_store.keyword_count(postgres, expression, collection) == sqlite_store.keyword_count(
                sqlite, expression, collection
            ), (expression, collection)
    assert compared > 1000  # the expressions match: the comparison is not of empty lists


def test_the_where_filter_applies_inside_the_scoring_statement(both: Any) -> None:
    sqlite, postgres = both
    kept = 0
    for expression, conditions in (
        ('"garden"', ["tags=python"]),
        ('"garden" OR "the"', ["status!=draft"]),
        ('"planting" OR "harvest"', ["date>=2024-06-01"]),
        ('"the"', ["priority<2"]),
    ):
        where = document_filter(parse_where(conditions))
        for collection, limit in ((None, 1), (None, None), ("garden", 3)):
            expected = sqlite_store.keyword_search(sqlite, expression, collection, limit, where=where)
            found = pg_store.keyword_search(postgres, expression, collection, limit, where=where)
            assert _named(pg_store, postgres, found) == _named(sqlite_store, sqlite, expected), expression
            kept += len(expected)
        assert pg_store.keyword_count(postgres, expression, None, where) == sqlite_store.keyword_count(
            sqlite, expression, None, where
        )
    assert kept > 5


def test_the_idfs_computed_here_score_as_the_servers(both: Any) -> None:
    """The way taken when the server's ``ln`` differs from math.log in the last bit (another
    libm): statistics read first, IDFs computed here, then scored; the same as FTS5 too."""
    sqlite, postgres = both
    ids = [row[0] for row in sqlite.execute("SELECT id FROM documents ORDER BY id")]
    compared = 0
    for expression in HARD:
        expected = sqlite_store.phrase_bm25(sqlite, expression, ids, sqlite_store.BM25_WEIGHTS)
        rows = bm25_sql.run_ranked(
            postgres,
            bm25_sql.DOCUMENT_POSTINGS,
            parse(expression),
            sqlite_store.BM25_WEIGHTS,
            None,
            None,
            lambda sql: sql,
            server_idf=False,
        )
        assert {int(row[0]): float(row[1]) for row in rows} == expected, expression
        compared += len(expected)
    assert compared > 100
