"""PostgreSQL's update writes in batches (issue 40's cold update): a batch's documents tokenized
together in an in-memory FTS5 table and read back grouped by term (store/postgres/tokens.Batch),
new documents' rows and texts held back and sent per batch with ids taken ahead
(documents._PendingDocuments). With batches of a few documents, so that an update crosses many of
them, the index must still be what one document at a time made: each document's postings as
FTS5 tokenizes it, every block's entries in (document, column) order (also when a moved file's
older id comes after newer ones in a batch), the same ids as SQLite gives, the statistics a
recount gives, and the same rankings as SQLite's.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tansaku.store import db
from tansaku.store import documents as sqlite_store
from tansaku.store.postgres import documents as pg_store
from tansaku.store.postgres import tokens
from tansaku.store.postgres.backend import PostgresBackend

from .conftest import REPO, CliResult, share_collections
from .postgres_fixture import requires_postgres
from .test_postgres_bm25_sql import HARD, SCOPES, assert_statistics_recounted, compare_searches, update_both

pytestmark = requires_postgres


def _entries(postgres: Any) -> dict[str, list[tuple[int, int, tuple[int, ...], int]]]:
    """Every term's entries over all blocks: (document, column, positions, document's tokens),
    checking each row's order on the way."""
    found: dict[str, list[tuple[int, int, tuple[int, ...], int]]] = {}
    rows = postgres.execute("SELECT term, docs, cols, counts, lens, positions FROM postings")
    for term, docs, cols, counts, lens, positions in rows:
        assert list(zip(docs, cols, strict=True)) == sorted(zip(docs, cols, strict=True)), term
        assert len(set(zip(docs, cols, strict=True))) == len(docs), term
        at = 0
        for doc, col, count, length in zip(docs, cols, counts, lens, strict=True):
            found.setdefault(term, []).append((doc, col, tuple(positions[at : at + count]), length))
            at += count
        assert at == len(positions), term
    return {term: sorted(entries) for term, entries in found.items()}


def _expected(postgres: Any) -> dict[str, list[tuple[int, int, tuple[int, ...], int]]]:
    """The same from each document's keyword text, tokenized one document at a time."""
    expected: dict[str, list[tuple[int, int, tuple[int, ...], int]]] = {}
    rows = postgres.execute(
        "SELECT d.id, d.fts_path, d.fts_title, coalesce(d.fts_body, c.body), d.fts_headings,"
        " d.fts_options, d.fts_lengths, d.fts_tokens FROM documents AS d JOIN content AS c ON c.hash = d.hash"
    )
    for doc, *columns, lengths, total in rows:
        places, counted = pg_store._places(sqlite_store.FtsText(*columns))
        assert counted == list(lengths) and sum(counted) == total, doc
        for (term, col), at in places.items():
            expected.setdefault(term, []).append((doc, col, tuple(at), total))
    return {term: sorted(entries) for term, entries in expected.items()}


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
def test_small_batches_make_the_index_one_document_at_a_time_made(
    cli: Callable[..., CliResult],
    postgres_url: str,
    tmp_path: Path,
    index_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pg_store._KeywordRows, "TOKENS", 40)  # a block every few documents
    monkeypatch.setattr(pg_store._PendingDocuments, "ROWS", 3)
    monkeypatch.setattr(pg_store._PendingDocuments, "IDS", 4)
    for name, source in (("sample", "fixtures/sample"), ("garden", "fixtures/fields")):
        shutil.copytree(REPO / source, tmp_path / name)
        assert cli("collection", "add", tmp_path / name, "--name", name, "--mask", "**/*").exit_code == 0
    share_collections(postgres_url)
    for name in ("sample", "garden"):
        updated = cli("--index", postgres_url, "update", "-c", name)
        assert updated.exit_code == 0, updated.stderr
    # One update that changes a file (a new, larger id), then moves one (its older id comes
    # after the new one in the same batch), removes one and adds one.
    files = sorted((tmp_path / "sample").rglob("*.md"))
    assert len(files) >= 4
    files[0].write_text("# Changed\n\nThe backup is restored from the archive.\n", encoding="utf-8")
    files[1].rename(files[1].with_name("moved-" + files[1].name))
    files[2].unlink()
    (tmp_path / "sample" / "added.md").write_text("# Added\n\nA zebrafish backup, and the archive.\n")
    update_both(cli, postgres_url)
    sqlite = db.open_read(index_path)
    try:
        with PostgresBackend(postgres_url).reading() as postgres:
            assert _entries(postgres) == _expected(postgres)
            blocks = postgres.execute("SELECT count(DISTINCT block) FROM postings").fetchone()[0]
            assert blocks > 5
            ids = {(c, p): i for i, c, p in postgres.execute("SELECT id, collection, path FROM documents")}
            assert ids == {
                (row[1], row[2]): row[0]
                for row in sqlite.execute("SELECT id, collection, path FROM documents")
            }
            assert_statistics_recounted(postgres)
            totals = postgres.execute("SELECT docs, tokens FROM keyword_totals").fetchone()
            assert tuple(totals) == tuple(
                postgres.execute("SELECT count(*), sum(fts_tokens) FROM documents").fetchone()
            )
            assert compare_searches(sqlite, postgres, HARD, SCOPES) > 50
    finally:
        sqlite.close()


def test_a_batch_gives_each_documents_lengths_and_entries_as_one_at_a_time() -> None:
    """tokens.Batch against column_tokens (FTS5 one document at a time), with ids that do not
    ascend with the batch's order (the sorted way) and a document with empty columns."""
    texts = [
        ["a / b.md", "Backup", "The backup of the backup, restored.", "Backup\nRestore", ""],
        ["c.md", "", "", "", ""],
        ["d / 压缩.md", "压缩 备份", "Café naïve résumé; the archive's 3 files.", "", "--force"],
    ]
    for ids in ([1, 2, 3], [7, 3, 5]):
        batch = tokens.Batch()
        expected: dict[str, list[tuple[str, str, str, str]]] = {}
        for doc, columns in zip(ids, texts, strict=True):
            local, lengths = batch.add(columns)
            per_column = tokens.column_tokens(columns)
            assert lengths == [len(column) for column in per_column]
            batch.name(local, doc, sum(lengths))
            for col, column in enumerate(per_column):
                for term in dict.fromkeys(term for _, term in column):
                    at = [str(p) for p, t in column if t == term]
                    expected.setdefault(term, []).append(
                        (str(doc), str(col), ",".join(at), str(sum(lengths)))
                    )
        found = {}
        for term, docs, cols, counts, lens, positions, _ in batch.rows():
            entries = list(
                zip(docs.split(","), cols.split(","), counts.split(","), lens.split(","), strict=True)
            )
            assert [(int(d), int(c)) for d, c, _, _ in entries] == sorted(
                (int(d), int(c)) for d, c, _, _ in entries
            )
            at = positions.split(",")
            start = 0
            found[term] = []
            for doc, col, count, length in entries:
                found[term].append((doc, col, ",".join(at[start : start + int(count)]), length))
                start += int(count)
        assert found == {
            term: sorted(entries, key=lambda e: (int(e[0]), int(e[1]))) for term, entries in expected.items()
        }
        batch.clear()
        assert list(batch.rows()) == []


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
def test_a_session_grown_twice_keeps_one_set_of_postings(
    cli: Callable[..., CliResult], postgres_url: str, tmp_path: Path, index_path: Path
) -> None:
    """A grown session's postings go to the batch's block, and its row says so (keyword_block):
    growing it again takes the earlier postings out of that block, not the first one."""
    from .test_postgres_transcripts import SHOP, _add_both, _append

    shutil.copytree(REPO / "fixtures" / "transcripts" / "judged", tmp_path / "agents")
    shutil.copytree(REPO / "fixtures" / "sample", tmp_path / "sample")
    _add_both(cli, postgres_url, tmp_path)
    for line in ("Also pinned the kumquat surcharge to the store time zone.", "Then the kumquat rota."):
        _append(tmp_path / "agents" / "claude" / SHOP, line)
        update_both(cli, postgres_url)
    sqlite = db.open_read(index_path)
    try:
        with PostgresBackend(postgres_url).reading() as postgres:
            assert _entries(postgres) == _expected(postgres)
            for expression in ('"kumquat"', '"time zone"', '"rota"'):
                assert compare_searches(sqlite, postgres, [expression], [(None, None)]), expression
    finally:
        sqlite.close()
