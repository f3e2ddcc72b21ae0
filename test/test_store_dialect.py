"""Statements written once for both backends (store/dialect.py) and how a call finds its backend's
function (store/routed.py). No database: the statements are compared as text."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

import pytest

from tansaku.errors import BackendUnsupported
from tansaku.store import dialect, routed
from tansaku.store.dialect import POSTGRES, SQLITE


class Recorder:
    """A connection that keeps what it is asked to run; ``postgres`` makes it say so."""

    keyword_rows = None  # a PostgreSQL connection's: no update holds new documents back

    def __init__(self, *, postgres: bool) -> None:
        if postgres:
            self.tansaku_backend = "postgresql"
        self.sent: list[tuple[str, Any]] = []

    def execute(self, sql: str, params: Any = None) -> Any:
        self.sent.append((sql, params))
        return self

    def executemany(self, sql: str, rows: Any) -> None:
        self.sent.append((sql, list(rows)))

    def fetchone(self) -> None:  # as the cursor of a query that found nothing
        return None

    def __iter__(self) -> Any:
        return iter(())


def test_placeholders_become_psycopg_s_and_a_literal_percent_is_doubled() -> None:
    statement = "SELECT 1 FROM t WHERE a = ? AND b LIKE 'x%' AND c IN (?, ?)"
    assert SQLITE.sql(statement) == statement
    assert POSTGRES.sql(statement) == "SELECT 1 FROM t WHERE a = %s AND b LIKE 'x%%' AND c IN (%s, %s)"


def test_run_sends_the_connections_own_placeholders_and_always_parameters() -> None:
    sqlite, postgres = Recorder(postgres=False), Recorder(postgres=True)
    for conn in (sqlite, postgres):
        dialect.run(conn, "DELETE FROM t WHERE a = ?", (1,))
        dialect.run(conn, "DELETE FROM t")  # parameters () even when none: psycopg then reads %%
        dialect.run_many(conn, "UPDATE t SET a = ?", [])  # no rows: nothing is sent
    assert sqlite.sent == [("DELETE FROM t WHERE a = ?", (1,)), ("DELETE FROM t", ())]
    assert postgres.sent == [("DELETE FROM t WHERE a = %s", (1,)), ("DELETE FROM t", ())]


def test_the_words_that_differ() -> None:
    assert SQLITE.one_of("x", ["a", "b"]) == ("x IN (?,?)", ["a", "b"])
    assert POSTGRES.one_of("x", ["a", "b"]) == ("x = ANY(?)", [["a", "b"]])
    assert SQLITE.contains("p") == "instr(p, ?) > 0"
    assert POSTGRES.contains("p") == "strpos(p, ?) > 0"
    assert (SQLITE.window, POSTGRES.window) == ("window", "window_no")
    assert SQLITE.upsert("r", "doc_id, run_index, prompt", key="doc_id, run_index") == (
        "INSERT OR REPLACE INTO r (doc_id, run_index, prompt) VALUES (?, ?, ?)"
    )
    assert POSTGRES.upsert("r", "doc_id, run_index, prompt, line", key="doc_id, run_index") == (
        "INSERT INTO r (doc_id, run_index, prompt, line) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (doc_id, run_index) DO UPDATE SET prompt = excluded.prompt, line = excluded.line"
    )


def test_a_postgresql_call_runs_its_own_function_else_the_one_written_for_both() -> None:
    from tansaku.store import extractions

    own = routed._postgres_impl("extractions", "prune", extractions)
    assert own.__module__ == "tansaku.store.postgres.extractions"
    assert routed._postgres_impl("extractions", "get", extractions) is extractions.get
    assert routed._postgres_impl(
        "removal", "delete_collection", importlib.import_module("tansaku.store.removal")
    )


def test_a_function_neither_backend_module_nor_both_is_backend_unsupported() -> None:
    from tansaku.store import vectors

    assert not dialect.is_both(vectors.model_vectors_by_text)
    with pytest.raises(BackendUnsupported, match=r"vectors\.model_vectors_by_text"):
        routed._postgres_impl("vectors", "model_vectors_by_text", vectors)


def test_a_both_function_runs_the_same_statements_on_either_connection() -> None:
    from tansaku.store import extractions

    sqlite, postgres = Recorder(postgres=False), Recorder(postgres=True)
    routed.extractions.mark_seen(sqlite, [("h", "pdf:1")], "now")
    routed.extractions.mark_seen(postgres, [("h", "pdf:1")], "now")
    assert sqlite.sent[0][0].replace("?", "%s") == postgres.sent[0][0]
    assert sqlite.sent[0][1] == postgres.sent[0][1] == [("now", "h", "pdf:1")]
    assert dialect.is_both(extractions.mark_seen)


def test_the_seam_imports_no_driver_and_no_store_module() -> None:
    import ast
    from pathlib import Path

    for module in (dialect, routed):
        tree = ast.parse(Path(module.__file__ or "").read_text())
        imported = {
            node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level
        }
        assert imported <= {"errors", "dialect"}, (module.__name__, imported)
    assert "psycopg" not in sys.modules or "tansaku.store.postgres.backend" in sys.modules


def test_a_long_list_is_cut_for_sqlite_and_whole_for_postgresql() -> None:
    values = list(range(1201))
    assert [len(part) for part in SQLITE.batches(values)] == [500, 500, 201]
    assert list(POSTGRES.batches(values)) == [values]
    assert list(SQLITE.batches([])) == list(POSTGRES.batches([])) == []


def test_chunks_and_fields_run_the_same_statements_on_either_connection() -> None:
    from tansaku.store import chunks, fields

    sqlite, postgres = Recorder(postgres=False), Recorder(postgres=True)
    for conn in (sqlite, postgres):
        routed.fields.delete_fields(conn, 7)
        routed.chunks.chunks_of(conn, "h", "p")
        routed.chunks.chunked_hashes(conn, "p", ["h"])
    assert [sql.replace("?", "%s") for sql, _ in sqlite.sent] == [
        sql.replace("= ANY(%s)", "IN (%s)") for sql, _ in postgres.sent
    ]
    assert sqlite.sent[-1][1] == ("p", "h") and postgres.sent[-1][1] == ("p", ["h"])
    assert all(dialect.is_both(f) for f in (chunks.ChunkWriter, chunks.chunks_of, fields.fields_of))


def test_the_where_test_is_written_once_in_either_placeholders() -> None:
    from tansaku.store import fields
    from tansaku.store.postgres import fields as pg_fields

    conditions = (fields.Condition("tags", "=", "x"), fields.Condition("date", ">=", "", day="2024-01-01"))
    sqlite_filter = fields.document_filter(conditions)
    test, params = pg_fields.passing(sqlite_filter, "r.id")
    assert sqlite_filter.sql.replace("name = ?", "lower(name) = lower(?)").replace("?", "%s") == (
        f"SELECT id FROM documents WHERE {test[1:-1]}".replace("r.id", "id")
    )
    assert list(sqlite_filter.params) == params == ["tags", "x", "date", "2024-01-01"]
    assert pg_fields.passing(fields.document_filter(()), "id") == ("(true)", [])


def test_documents_run_the_same_statements_on_either_connection() -> None:
    sqlite, postgres = Recorder(postgres=False), Recorder(postgres=True)
    for conn in (sqlite, postgres):
        routed.documents.document_at(conn, "docs", "a.md")
        routed.documents.documents_by_ids(conn, [3, 1])
        routed.documents.touch_document(conn, 3, 10, 20)
        routed.documents.skipped_in(conn, "docs")
        routed.documents.set_collection_state(conn, "docs", "/d", "now", 2)
    assert [sql.replace("?", "%s") for sql, _ in sqlite.sent] == [
        sql.replace("= ANY(%s)", "IN (%s,%s)") for sql, _ in postgres.sent
    ]
    assert sqlite.sent[1][1] == [3, 1] and postgres.sent[1][1] == [[3, 1]]
    assert sqlite.sent[-1][0].startswith("INSERT INTO collection_state")


# Store functions PostgreSQL has no form of, on purpose: they read what only a SQLite file has
# (FTS5's and sqlite-vec's tables), or build SQLite's SQL for a caller that runs it there.
SQLITE_ONLY = {
    "vectors": {"model_vectors_by_text", "without_direction"},
    "fields": {"document_filter"},
    "health": {"fts_and_document_counts", "vec_version"},
}


def test_every_store_function_runs_on_postgresql_or_is_named_sqlite_only() -> None:
    concerns = ("documents", "chunks", "vectors", "fields", "extractions", "removal", "health", "transcripts")
    for name in concerns:
        module = importlib.import_module(f"tansaku.store.{name}")
        own = routed._postgres_module(name)
        missing = {
            attr
            for attr, value in vars(module).items()
            if isinstance(value, types.FunctionType)
            and value.__module__ == module.__name__
            and not attr.startswith("_")
            and not dialect.is_both(value)
            and not hasattr(own, attr)
        }
        assert missing == SQLITE_ONLY.get(name, set()), name
