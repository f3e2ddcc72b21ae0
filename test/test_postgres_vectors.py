"""Vectors on PostgreSQL (pgvector) against SQLite (sqlite-vec), on a real server, with the real
MiniLM model: the same corpus embedded on both backends gives the same vector and hybrid results,
`embed` resumes after an interruption, and `status` counts what is pending alike."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import REPO, SAMPLE, CliResult, interruptible, share_collections
from .models_fixture import requires_llama, requires_minilm
from .postgres_fixture import requires_postgres
from .test_keyword_ranking import DOCS
from .test_postgres_backend import _write

pytestmark = [requires_postgres, requires_llama, requires_minilm]

QUERIES = [
    "how do I get my files back after a disk failure",
    "shrink an archive",
    "who may read this file",
    "what did we decide in the meeting",
    "configuration options",
    "error codes",
    "恢复 备份",
]


# The keyword tests' documents but the two long ones (half a minute of embedding on 2 cores).
SHORT_DOCS = {path: text for path, text in DOCS.items() if len(text) < 2000}


def _add_on_both(cli: Callable[..., CliResult], tmp_path: Path, pg: tuple[str, ...], *mask: str) -> None:
    """The sample and the short keyword documents, as collections indexed on both backends."""
    sample = tmp_path / "sample"
    shutil.copytree(SAMPLE, sample)
    docs = tmp_path / "docs"
    _write(docs, SHORT_DOCS)
    for folder, name in ((sample, "sample"), (docs, "docs")):
        assert cli("collection", "add", folder, "--name", name, *mask).exit_code == 0
        share_collections(pg[1])
        assert cli(*pg, "update", "-c", name).exit_code == 0


@pytest.fixture
def both(cli: Callable[..., CliResult], postgres_url: str, tmp_path: Path, model: Path) -> tuple[str, ...]:
    """Two collections (the sample, and the keyword tests' documents) indexed and embedded on
    both backends; the PostgreSQL index's `--index` arguments."""
    pg = ("--index", postgres_url)
    _add_on_both(cli, tmp_path, pg, "--mask", "**/*")
    for index in ((), pg):
        result = cli(*index, "embed", "--json")
        assert result.exit_code == 0, result.stderr
        assert not result.json().get("interrupted")
    return pg


def _vsearch(cli: Callable[..., CliResult], index: tuple[str, ...], query: str, *options: str) -> list:
    result = cli(*index, "vsearch", "--json", "-n", "10", "--min-score", "0", *options, "--", query)
    assert result.exit_code == 0, (query, result.stderr)
    data = result.json()
    return [(hit["collection"], hit["path"], hit["score"], hit.get("chunk_lines")) for hit in data["results"]]


def _same_hits(sqlite: list, postgres: list, query: str) -> None:
    assert [hit[:2] for hit in postgres] == [hit[:2] for hit in sqlite], query
    for ours, theirs in zip(postgres, sqlite, strict=True):
        assert ours[2] == pytest.approx(theirs[2], abs=1e-4), query
        assert ours[3] == theirs[3], query


def _vsearch_alike(cli: Callable[..., CliResult], both: tuple[str, ...]) -> None:
    for query in QUERIES:
        sqlite = _vsearch(cli, (), query)
        assert len(sqlite) == 10
        _same_hits(sqlite, _vsearch(cli, both, query), query)
        # One collection: the filter keeps the limit filled however the other one scores.
        _same_hits(_vsearch(cli, (), query, "-c", "docs"), _vsearch(cli, both, query, "-c", "docs"), query)


def _in_memory_alike(cli: Callable[..., CliResult], both: tuple[str, ...]) -> None:
    """`--all` scores every vector in memory, as a server's kept API does: alike on both."""
    from tansaku.api import Tansaku

    for query in QUERIES[:3]:
        sqlite = _vsearch(cli, (), query, "--all")
        assert len(sqlite) > 10
        _same_hits(sqlite, _vsearch(cli, both, query, "--all"), query)
        kept = [Tansaku(), Tansaku(both[1])]
        found = [
            [(h.collection, h.path, h.score, h.chunk_lines) for h in api.vsearch(query, limit=10).hits]
            for api in kept
        ]
        _same_hits(found[0], found[1], query)
        assert kept[1]._vector_cache().loads == 1  # read into memory, not searched on the server


def _hnsw_alike(
    cli: Callable[..., CliResult], both: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no room for vectors in memory, SQLite scans on disk and PostgreSQL asks its HNSW index
    (iterative scan, filtered by collection): on this corpus both find the same ten."""
    monkeypatch.setenv("TANSAKU_VECTOR_MEMORY_MB", "0")
    for query in QUERIES:
        _same_hits(_vsearch(cli, (), query), _vsearch(cli, both, query), query)
        _same_hits(
            _vsearch(cli, (), query, "-c", "sample"), _vsearch(cli, both, query, "-c", "sample"), query
        )


def _synthetic_model(url: str, total: int, dims: int) -> tuple[str, object]:
    """``total`` random vectors of a made-up model, one document each, in two collections:
    ``small`` (every 50th) and ``big`` (the rest); returns the fingerprint and the matrix."""
    import numpy as np

    from tansaku.store.backend import open_backend, writing
    from tansaku.store.backend import vectors as routed_vectors  # PostgreSQL's or both backends'
    from tansaku.store.postgres import vectors as pg_vectors
    from tansaku.store.vectors import EmbedModelRecord

    fingerprint = "synthetic:plain:c2"
    matrix = np.random.default_rng(3).standard_normal((total, dims)).astype(np.float32)
    backend = open_backend(url)
    with writing(backend, "test") as conn:
        pg_vectors.ensure_vec_table(conn, dims)
        record = EmbedModelRecord(fingerprint, "/none", "synthetic", 0, 0, "plain", dims, 256)
        routed_vectors.register_model(conn, record, "2026-01-01T00:00:00Z")
        tables = {
            "documents (id, collection, path, hash, title, size, mtime_ns, line_count, indexed_at, fts_path,"
            " fts_title, fts_lengths, fts_tokens)": lambda i: (
                i + 1, "small" if i % 50 == 0 else "big", f"{i}.md", f"h{i}", "", 1, 0, 1, "", "", "",
                [0, 0, 0, 0, 0], 0,
            ),
            "embeddings (id, fingerprint, text_sha)": lambda i: (i + 1, fingerprint, f"s{i}"),
            "chunk_vectors (fingerprint, hash, chunk_params, seq, window_no, embedding_id, start_line,"
            " end_line)": lambda i: (fingerprint, f"h{i}", "P", 0, 0, i + 1, 1, 1),
            f"vectors_{dims} (id, fingerprint, embedding)": lambda i: (
                i + 1, fingerprint, "[" + ",".join(repr(float(x)) for x in matrix[i]) + "]",
            ),
        }  # fmt: skip
        for table, row in tables.items():
            with conn.copy(f"COPY {table} FROM STDIN") as copy:
                for i in range(total):
                    copy.write_row(row(i))
        conn.execute("ANALYZE")
    return fingerprint, matrix


def test_the_hnsw_index_answers_a_big_collection_and_fills_the_limit(postgres_url: str, monkeypatch) -> None:
    """Past the in-memory size, knn asks the model's HNSW index (iterative scan filtered by
    collection): as many neighbours as asked, or all a collection has, nearest first, and the
    nearest ones (checked against the exact scan)."""
    import numpy as np

    from tansaku.store.backend import open_backend
    from tansaku.store.backend import vectors as vec
    from tansaku.store.postgres import vectors as pg_vectors

    dims = 8
    fingerprint, _ = _synthetic_model(postgres_url, 10_000, dims)
    monkeypatch.setenv("TANSAKU_VECTOR_MEMORY_MB", "0")
    query = np.random.default_rng(5).standard_normal(dims).astype(np.float32)
    with open_backend(postgres_url).reading() as conn:
        vec.load_extension(conn)
        plan = conn.execute(
            f"EXPLAIN SELECT e.id FROM vectors_{dims} AS e WHERE e.fingerprint = '{fingerprint}'"
            f" AND e.id IN ({pg_vectors._COLLECTION_EMBEDDINGS}) ORDER BY e.embedding <=> %(query)s LIMIT 10",
            {"query": query, "fingerprint": fingerprint, "collection": "big", "params": "P"},
        ).fetchall()
        assert "hnsw" in " ".join(row[0] for row in plan)  # the index, not a scan of every vector
        # knn's own statement (relaxed order, sorted again in a CTE) walks the graph too
        scans = "SELECT pg_stat_get_xact_numscans(%s::regclass)"
        graph = pg_vectors._index_name(dims, fingerprint)
        before = conn.execute(scans, (graph,)).fetchone()[0]
        assert len(vec.knn(conn, dims, fingerprint, query.tobytes(), 10, "big", "P")) == 10
        assert conn.execute(scans, (graph,)).fetchone()[0] > before
        for collection, held in (("big", 9_800), ("small", 200)):
            arguments = {"query": query, "fingerprint": fingerprint, "collection": collection,
                         "params": "P"}  # fmt: skip
            for k in (10, 150, 400):
                found = vec.knn(conn, dims, fingerprint, query.tobytes(), k, collection, "P")
                assert len(found) == min(k, held), (collection, k)
                distances = [d for _, d in found]
                assert distances == sorted(distances)
                exact = pg_vectors._exact(conn, dims, {**arguments, "k": k})
                assert len({i for i, _ in found} & {i for i, _ in exact}) >= 0.95 * len(exact)


def _query_alike(cli: Callable[..., CliResult], both: tuple[str, ...]) -> None:
    for query in QUERIES:
        results = []
        for index in ((), both):
            found = cli(*index, "query", "--json", "-n", "10", "--no-expand", "--no-rerank", "--", query)
            assert found.exit_code == 0, (query, found.stderr)
            data = found.json()
            results.append(
                (
                    [(hit["collection"], hit["path"], round(hit["score"], 4)) for hit in data["results"]],
                    [w["code"] for w in data.get("warnings", [])],
                )
            )
        assert results[1] == results[0], query


def _pack_alike(cli: Callable[..., CliResult], both: tuple[str, ...]) -> None:
    options = ("--pack", "--max-bytes", "2000", "--json", "--no-expand", "--no-rerank", "restore a backup")
    sqlite = cli("query", *options)
    postgres = cli(*both, "query", *options)
    assert postgres.exit_code == 0, postgres.stderr
    items = postgres.json()["items"]
    assert items and items == sqlite.json()["items"]


def test_the_same_corpus_gives_the_same_vector_results_on_both_backends(
    cli: Callable[..., CliResult], both: tuple[str, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """One corpus embedded once on each backend (the slow part), then every vector path."""
    _vsearch_alike(cli, both)
    _in_memory_alike(cli, both)
    _query_alike(cli, both)
    _pack_alike(cli, both)
    _hnsw_alike(cli, both, monkeypatch)  # last: it takes the in-memory room away


def _status(cli: Callable[..., CliResult], index: tuple[str, ...]) -> tuple[list, list]:
    result = cli(*index, "status", "--json")
    assert result.exit_code == 0, result.stderr
    data = result.json()
    counts = [
        (c["collection"]["name"], c["chunks"], c["vectors"], c.get("unembedded"), c.get("stale_vectors"))
        for c in data["collections"]
    ]
    return counts, data["pending"]


@pytest.mark.sqlite_only("compares a SQLite index (the default) with a PostgreSQL one")
def test_status_counts_pending_chunks_alike(cli, postgres_url: str, model: Path, tmp_path: Path) -> None:
    pg = ("--index", postgres_url)
    _add_on_both(cli, tmp_path, pg)
    assert _status(cli, pg) == _status(cli, ())
    for index in ((), pg):
        assert cli(*index, "embed", "-c", "sample").exit_code == 0
    first = _status(cli, ())
    assert any(unembedded for _, _, _, unembedded, _ in first[0])  # docs still has chunks to embed
    assert _status(cli, pg) == first
    edited = tmp_path / "sample" / "guides" / "backups.md"
    edited.write_text("# Backups\n\nNightly tar archives.\n", encoding="utf-8")
    for index in ((), pg):
        assert cli(*index, "update").exit_code == 0
    assert _status(cli, pg) == _status(cli, ())
    # A re-embed reuses every unchanged chunk's vector on both.
    reports = [cli(*index, "embed", "--json").json() for index in ((), pg)]
    tallies = [[(c["name"], c["embedded"], c["reused"]) for c in r["collections"]] for r in reports]
    assert tallies[1] == tallies[0]
    assert _status(cli, pg) == _status(cli, ())
    # Removing the collections removes their vectors.
    for name in ("sample", "docs"):
        assert cli(*pg, "collection", "remove", name).exit_code == 0
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        left = [conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("chunk_vectors", "embeddings", "vectors_384")]  # fmt: skip
    assert left == [0, 0, 0]


def _vector_rows(url: str) -> int:
    import psycopg

    with psycopg.connect(url) as conn:
        return int(conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0])


# Notes embedded in one run: enough batches of 32 (five) that a Ctrl-C sent once 32 vectors are
# stored lands inside the batches, not after the last one (70 was 3 batches; a poll slowed by
# load could first see 64 and interrupt the final prune, which has no report).
NOTES = 130


@pytest.mark.subprocess
def test_an_interrupted_embed_keeps_its_batches_and_resumes(model: Path, postgres_url: str, tmp_path: Path):
    corpus = tmp_path / "many"
    corpus.mkdir()
    for i in range(NOTES):
        (corpus / f"n{i:03}.md").write_text(
            f"# Note {i}\n\n" + f"word{i} sentence about item {i}. " * 60, encoding="utf-8"
        )
    env = {**os.environ, "TANSAKU_PYTHON": sys.executable, "TANSAKU_EMBED_WINDOW": "510",
           "PYTHONPATH": str(REPO / "src")}  # fmt: skip
    command = [sys.executable, "-m", "tansaku", "--index", postgres_url]
    subprocess.run([*command, "collection", "add", str(corpus), "--name", "many"], env=env, check=True,
                   capture_output=True)  # fmt: skip
    process = subprocess.Popen([*command, "embed", "--json"], env=env, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, preexec_fn=interruptible)  # fmt: skip
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.2)
        done = _vector_rows(postgres_url)
        if done >= 32:
            break
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    assert out.strip(), (process.returncode, err)  # the report, even when interrupted
    report = json.loads(out)
    assert report["interrupted"] is True, err
    kept = _vector_rows(postgres_url)
    assert 32 <= kept < NOTES
    status = json.loads(subprocess.run([*command, "status", "--json"], env=env, capture_output=True,
                                       text=True, check=True).stdout)  # fmt: skip
    assert status["collections"][0]["unembedded"] == NOTES - kept
    resumed = subprocess.run([*command, "embed", "--json"], env=env, capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    (collection,) = json.loads(resumed.stdout)["collections"]
    assert collection["pending"] == NOTES - kept and collection["embedded"] == NOTES - kept
    assert _vector_rows(postgres_url) == NOTES


def test_a_second_embed_waits_then_says_it_is_running(cli, postgres_url: str, sample: Path, model: Path):
    import psycopg

    from tansaku.store.postgres.backend import COMMAND_LOCKS, LOCK_SPACE

    assert cli("--index", postgres_url, "collection", "add", sample, "--name", "sample").exit_code == 0
    with psycopg.connect(postgres_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s, %s)", (LOCK_SPACE, COMMAND_LOCKS["embed"]))
        locked = cli("--index", postgres_url, "embed", "--json")
        assert locked.exit_code == 3, locked.stderr
        assert locked.error()["code"] == "INDEX_LOCKED"
        assert f"server pid {holder.info.backend_pid}" in locked.error()["message"]
    assert cli("--index", postgres_url, "embed").exit_code == 0


def test_quick_vectors_count_and_go_as_the_quick_pass_expects(cli, postgres_url: str, sample: Path) -> None:
    """The quick pass's store functions (a chunk's quick vector is window -1): a chunk with only a
    quick vector is still pending for the full pass but not for the quick one, is counted as
    quick, and loses it when unlink_quick runs."""
    from tansaku.index.chunks import params_for
    from tansaku.store.backend import open_backend, writing
    from tansaku.store.backend import vectors as pg_vectors  # routed: PostgreSQL's, or written for both

    assert cli("--index", postgres_url, "collection", "add", sample, "--name", "sample").exit_code == 0
    from tansaku.api import Tansaku

    params = params_for(Tansaku(postgres_url).config().collections["sample"]).fingerprint()
    backend = open_backend(postgres_url)
    fingerprint = "quick:plain:c2"
    with writing(backend, "test") as conn:
        (first, *rest) = pg_vectors.pending_chunks(conn, fingerprint, "sample", params)
        pg_vectors.link_chunks(
            conn, [(fingerprint, first[0], params, first[1], pg_vectors.QUICK_WINDOW, 1, 1, 1)]
        )
    with backend.reading() as conn:
        assert first in pg_vectors.pending_chunks(conn, fingerprint, "sample", params)
        assert first not in pg_vectors.pending_chunks(conn, fingerprint, "sample", params, quick=True)
        assert len(pg_vectors.pending_chunks(conn, fingerprint, "sample", params, quick=True)) == len(rest)
        assert pg_vectors.collection_quick_count(conn, "sample", params, fingerprint) == 1
        assert pg_vectors.collection_vector_counts(conn, "sample", params, fingerprint)[0] == 0
    with writing(backend, "test") as conn:
        pg_vectors.unlink_quick(conn, fingerprint, params, [first])
    with backend.reading() as conn:
        assert pg_vectors.collection_quick_count(conn, "sample", params, fingerprint) == 0
