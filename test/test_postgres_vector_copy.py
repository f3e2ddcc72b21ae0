"""Vectors copied by text from a SQLite index into a PostgreSQL one (what
evals/bench_backends.py --evals does instead of running the model twice), and the sizes of
PostgreSQL's tables (what it reports beside its timings)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import CliResult, share_collections
from .models_fixture import requires_llama, requires_minilm
from .postgres_fixture import requires_postgres

pytestmark = [requires_postgres]


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
@requires_llama
@requires_minilm
def test_vectors_copied_by_text_are_reused_by_embed_and_answer_alike(
    cli: Callable[..., CliResult], postgres_url: str, indexed: Path, model: Path
) -> None:
    from tansaku.api import Tansaku
    from tansaku.store import vectors as sqlite_vectors
    from tansaku.store.backend import open_backend, writing
    from tansaku.store.backend import vectors as routed_vectors  # PostgreSQL's or both backends'
    from tansaku.store.postgres import vectors as pg_vectors

    pg = ("--index", postgres_url)
    assert cli("embed").exit_code == 0
    share_collections(postgres_url)  # the sample registered in the database too
    assert cli(*pg, "update").exit_code == 0
    with Tansaku().backend.reading() as conn:
        sqlite_vectors.load_extension(conn)
        (record,) = sqlite_vectors.models(conn)
        rows = sqlite_vectors.model_vectors_by_text(conn, record.fingerprint, record.dims)
        stored = sqlite_vectors.model_vector_count(conn, record.fingerprint)
    assert len(rows) == stored > 0
    assert len({sha for sha, _ in rows}) == len(rows)
    assert {len(blob) for _, blob in rows} == {record.dims * 4}
    with writing(open_backend(postgres_url), "test") as conn:
        pg_vectors.ensure_vec_table(conn, record.dims)
        routed_vectors.register_model(conn, record, "2026-01-01T00:00:00Z")
        for text_sha, blob in rows:
            routed_vectors.add_embedding(conn, record.fingerprint, record.dims, text_sha, blob)

    embedded = cli(*pg, "embed", "--json")
    assert embedded.exit_code == 0, embedded.stderr
    (sample,) = embedded.json()["collections"]
    assert sample["embedded"] == 0 and sample["reused"] == sample["pending"] > 0  # no model call
    for query in ("how do I get my files back after a disk failure", "who may read this file"):
        found = []
        for index in ((), pg):
            result = cli(*index, "vsearch", "--json", "-n", "10", "--min-score", "0", "--", query)
            assert result.exit_code == 0, result.stderr
            found.append([(hit["path"], round(hit["score"], 4)) for hit in result.json()["results"]])
        assert found[1] == found[0] and found[0], query


def test_relation_sizes_name_every_table_largest_first(
    cli: Callable[..., CliResult], postgres_url: str, indexed: Path
) -> None:
    from tansaku.store.backend import open_backend
    from tansaku.store.postgres.sizes import relation_sizes

    share_collections(postgres_url)
    assert cli("--index", postgres_url, "update").exit_code == 0
    with open_backend(postgres_url).reading() as conn:
        sizes = relation_sizes(conn)
    assert {"documents", "postings", "chunks"} <= set(sizes)
    assert all(size > 0 for size in sizes.values())
    assert list(sizes.values()) == sorted(sizes.values(), reverse=True)
    assert sizes["postings"] > sizes["documents"]  # every token's positions against one row a file
