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
from tansaku.store.backend import documents as routed_documents
from tansaku.store.documents import KeywordScope
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
    '"the" AND "file" AND "backup"',  # an AND of words: only the rarest one's documents summed
    '"the" AND "backup" AND {title headings} : "file"',  # not with a column's phrase among them
    '"the" AND "restore" AND "backup" OR "zebrafish"',
    '"nothing at all here"',
    '"the" AND "zebrafish"',  # the rarest word in no document
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


SCOPES = ((None, None), ("sample", 10))  # (collection, limit): everywhere, and one collection


def _named(conn: Any, rows: list[tuple[int, float]]) -> list[tuple[str, float]]:
    paths = routed_documents.paths_by_ids(conn, [doc for doc, _ in rows])
    return [(paths[doc], score) for doc, score in rows]


def update_both(cli: Any, postgres_url: str) -> None:
    """`update` on the SQLite index, then on the PostgreSQL one."""
    for args in (("update",), ("--index", postgres_url, "update")):
        result = cli(*args)
        assert result.exit_code == 0, result.stderr


def compare_searches(sqlite: Any, postgres: Any, expressions: list[str], scopes: Any) -> int:
    """Each expression searched in each (collection, limit) of ``scopes`` on both backends: the
    same documents with the same scores; returns how many results were compared."""
    compared = 0
    for expression in expressions:
        for collection, limit in scopes:
            expected = sqlite_store.keyword_search(sqlite, expression, KeywordScope(collection, limit))
            found = pg_store.keyword_search(postgres, expression, KeywordScope(collection, limit))
            assert _named(postgres, found) == _named(sqlite, expected), expression
            compared += len(expected)
    return compared


def assert_statistics_recounted(postgres: Any) -> None:
    """The kept document frequencies equal a recount over the packed postings."""
    counted = postgres.execute(
        "SELECT p.term, count(DISTINCT u.d) FROM postings AS p, unnest(p.docs) AS u(d) GROUP BY p.term"
    ).fetchall()
    assert pg_store.term_statistics(postgres) == {term: int(n) for term, n in counted}


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
def test_keyword_search_scores_in_sql_as_fts5_does(both: Any) -> None:
    sqlite, postgres = both
    numbering = "SELECT id, collection, path FROM documents ORDER BY id"
    ids = [tuple(row) for row in sqlite.execute(numbering)]
    assert [tuple(row) for row in postgres.execute(numbering).fetchall()] == ids  # ties break alike
    some = [row[0] for row in ids][::3]
    met = {expression: sqlite_store.phrase_frequency(sqlite, expression) for expression in HARD[:-2]}
    assert all(met.values()), met  # each hard case is met: it matches something
    compared = 0
    for expression in [*HARD, *_expressions()]:
        for weights in (sqlite_store.BM25_WEIGHTS, sqlite_store.PROSE_WEIGHTS):
            for collection, limit in ((None, None), ("sample", 10), ("garden", None)):
                scope = KeywordScope(collection, limit)
                expected = sqlite_store.keyword_search(sqlite, expression, scope, weights)
                found = pg_store.keyword_search(postgres, expression, scope, weights)
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


def test_an_and_of_words_sums_only_its_rarest_words_documents() -> None:
    """The AND of plain words reads the entries of its rarest word's documents only; not an AND
    with a prefix or a column's phrase (their counts are taken over the statement's hits), nor an
    OR (test_keyword_search_scores_in_sql_as_fts5_does compares the answers with FTS5's)."""
    table = bm25_sql.DOCUMENT_POSTINGS

    def sql(expression: str) -> str:
        return bm25_sql.hits(table, parse(expression), (1.0,), None).sql

    assert "ORDER BY s.df" in sql('"the" AND "file" AND "backup"')
    for other in ('"the" OR "file"', '"the" AND "fil" *', '"the" AND {title} : "file"', '"the" AND "a b"'):
        assert "ORDER BY s.df" not in sql(other), other


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
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
            expected = sqlite_store.keyword_search(sqlite, expression, KeywordScope(collection, limit, where))
            found = pg_store.keyword_search(postgres, expression, KeywordScope(collection, limit, where))
            assert _named(postgres, found) == _named(sqlite, expected), expression
            kept += len(expected)
        assert pg_store.keyword_count(postgres, expression, None, where) == sqlite_store.keyword_count(
            sqlite, expression, None, where
        )
    assert kept > 5


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
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


# The keyword tables as schema version 7 made them (migrations._V1 and _V6): a row per term,
# document and column with its positions, as that version's update wrote them.
_V7_POSTINGS = """
CREATE TABLE postings (
    term text COLLATE "C" NOT NULL,
    doc_id bigint NOT NULL,
    col smallint NOT NULL,
    positions integer[] NOT NULL,
    PRIMARY KEY (term, doc_id, col)
);
CREATE INDEX postings_doc ON postings (doc_id)
"""


def undo_version_9(url: str) -> None:
    """The database as tansaku of schema version 8 left it: its postings table (version 7's),
    filled from each document's keyword text with version 7's statements; no blocks, no functions
    of version 9."""
    import psycopg

    with psycopg.connect(url) as conn:
        texts = conn.execute(
            "SELECT d.id, d.fts_path, d.fts_title, coalesce(d.fts_body, c.body), d.fts_headings,"
            " d.fts_options FROM documents AS d JOIN content AS c ON c.hash = d.hash ORDER BY d.id"
        ).fetchall()
        for statement in (
            "DROP TABLE postings",
            "DROP SEQUENCE posting_blocks",
            "DROP FUNCTION tansaku_entries",
            "DROP FUNCTION tansaku_without",
            "ALTER TABLE documents DROP COLUMN keyword_block",
            *_V7_POSTINGS.split(";\n"),
            "UPDATE tansaku_schema SET version = 8",
        ):
            conn.execute(statement)
        with conn.cursor().copy("COPY postings (term, doc_id, col, positions) FROM STDIN") as copy:
            for doc_id, *columns in texts:
                places, _ = pg_store._places(sqlite_store.FtsText(*columns))
                for (term, column), at in places.items():
                    copy.write_row((term, doc_id, column, "{" + ",".join(map(str, at)) + "}"))


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
def test_an_index_of_schema_version_8_is_migrated_and_ranks_alike(
    cli: Callable[..., CliResult], postgres_url: str, tmp_path: Path, index_path: Path
) -> None:
    """Today's index (a row per posting) opened by this code: reading asks for `update`, which
    packs the postings (migration 9); then update keeps working on the migrated blocks (a changed
    file, a removed one) and every expression ranks as FTS5 does."""
    from tansaku.errors import IndexSchemaMismatch
    from tansaku.store.postgres.migrations import SCHEMA_VERSION

    for name, source in COLLECTIONS:
        shutil.copytree(REPO / source, tmp_path / name)
        assert cli("collection", "add", tmp_path / name, "--name", name, "--mask", "**/*").exit_code == 0
    share_collections(postgres_url)
    for name, _ in COLLECTIONS:
        assert cli("--index", postgres_url, "update", "-c", name).exit_code == 0
    undo_version_9(postgres_url)
    with pytest.raises(IndexSchemaMismatch) as refused, PostgresBackend(postgres_url).reading():
        pass
    assert "tansaku update" in str(refused.value.hint)
    migrated = cli("--index", postgres_url, "update")
    assert migrated.exit_code == 0, migrated.stderr
    changed = next(path for path in sorted((tmp_path / "sample").rglob("*.md")))
    changed.write_text("# Changed\n\nThe backup is restored from the archive.\n", encoding="utf-8")
    removed = next(path for path in sorted((tmp_path / "garden").rglob("*.md")))
    removed.unlink()
    update_both(cli, postgres_url)
    sqlite = db.open_read(index_path)
    try:
        with PostgresBackend(postgres_url).reading() as postgres:
            version = postgres.execute("SELECT version FROM tansaku_schema").fetchone()[0]
            assert version == SCHEMA_VERSION
            compared = compare_searches(sqlite, postgres, [*HARD, *_expressions()], SCOPES)
            assert compared > 500
            assert_statistics_recounted(postgres)
    finally:
        sqlite.close()
