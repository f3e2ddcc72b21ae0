"""vsearch's search path: vectors read in blocks from vec0, kept in memory while the index is
unchanged, and the KNN fallback above the memory budget, all with the real MiniLM model. The
tests marked both_backends run on PostgreSQL too (its change watch, its nearest-neighbour search);
the others are about this path's own code, the same on both."""

from __future__ import annotations

from pathlib import Path

import pytest

from tansaku.api import Tansaku
from tansaku.search.vector_cache import MEMORY_BUDGET_ENV
from tansaku.store import db
from tansaku.store import vectors as vec

from .models_fixture import requires_llama, requires_minilm

pytestmark = [requires_llama, requires_minilm]

QUERY = "restore a single file from a snapshot"


@pytest.fixture
def embedded(cli, model: Path, indexed: Path) -> Path:
    result = cli("embed", "--json")
    assert result.exit_code == 0, result.stderr
    return indexed


def _model_vectors_both_ways(index_path: Path) -> tuple[object, object, object, object]:
    import numpy as np

    conn = db.open_read(index_path)
    try:
        vec.load_extension(conn)
        fingerprint, dims = conn.execute("SELECT fingerprint, dims FROM embed_models").fetchone()
        count = vec.model_vector_count(conn, fingerprint)
        blocks = np.empty(count, dtype=np.int64), np.empty((count, dims), dtype=np.float32)
        assert vec._read_vec0_blocks(conn, dims, fingerprint, *blocks), "the vec0 layout was not recognised"
        rows = conn.execute(
            f"SELECT rowid, embedding FROM {vec.vec_table(dims)} WHERE fingerprint = ?", (fingerprint,)
        ).fetchall()
        slots = conn.execute(f"SELECT coalesce(sum(size), 0) FROM {vec.vec_table(dims)}_chunks").fetchone()[0]
    finally:
        conn.close()
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), dims)
    return blocks, ids, matrix, slots


@pytest.mark.sqlite_only("sqlite-vec's vec0 blocks")
def test_block_reader_matches_the_virtual_table_after_deletions(cli, embedded: Path, index_path: Path):
    import numpy as np

    # Deleting documents frees slots inside vec0's blocks: the reader must skip them.
    (embedded / "guides" / "backups.md").unlink()
    (embedded / "guides" / "compression.md").unlink()
    assert cli("update").exit_code == 0
    assert cli("embed").exit_code == 0  # drops the unlinked vectors
    (block_ids, block_matrix), ids, matrix, slots = _model_vectors_both_ways(index_path)
    assert slots > len(ids) > 0  # there are freed slots to skip
    order, block_order = np.argsort(ids), np.argsort(block_ids)
    assert np.array_equal(block_ids[block_order], ids[order])
    assert np.array_equal(block_matrix[block_order], matrix[order])


@pytest.mark.both_backends
def test_a_kept_api_answers_from_memory_until_the_index_changes(cli, embedded: Path):
    api = Tansaku()
    first = api.vsearch(QUERY, limit=3)
    again = api.vsearch("nightly backups", limit=3)
    assert api._vector_cache().loads == 1
    assert first.hits[0].path == "guides/backups.md" and again.hits
    # Another writer (the CLI, its own connection) adds a document and embeds it.
    (embedded / "guides" / "recovery.md").write_text(
        "# Recovering one file\n\nRestore a single file from a snapshot of last night.\n", encoding="utf-8"
    )
    assert cli("update").exit_code == 0
    assert cli("embed").exit_code == 0
    after = api.vsearch(QUERY, limit=3)
    assert api._vector_cache().loads == 2
    assert "guides/recovery.md" in [hit.path for hit in after.hits]


@pytest.mark.both_backends
def test_over_the_memory_budget_knn_gives_the_same_top_results(embedded: Path, monkeypatch):
    in_memory = Tansaku()
    expected = in_memory.vsearch(QUERY, limit=5, min_score=0.0)
    assert in_memory._vector_cache().loads == 1
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "0")
    on_disk = Tansaku()  # as the CLI's Tansaku(keep_vectors=False)
    found = on_disk.vsearch(QUERY, limit=5, min_score=0.0)
    assert on_disk._vector_cache().loads == 0  # nothing was read into memory
    assert [h.path for h in found.hits] == [h.path for h in expected.hits]
    assert [h.chunk_lines for h in found.hits] == [h.chunk_lines for h in expected.hits]
    for got, want in zip(found.hits, expected.hits, strict=True):
        assert got.score == pytest.approx(want.score, abs=1e-4)


def test_total_counts_every_document_over_the_floor(embedded: Path):
    api = Tansaku()
    everything = api.vsearch(QUERY, limit=None, min_score=-1.0)
    assert everything.total == len(everything.hits) == 13  # every sample document, once each
    limited = api.vsearch(QUERY, limit=2, min_score=-1.0)
    assert limited.total == 13 and len(limited.hits) == 2
    assert [h.path for h in limited.hits] == [h.path for h in everything.hits[:2]]
    floor = everything.hits[4].score
    above = api.vsearch(QUERY, limit=None, min_score=floor)
    assert above.total == sum(1 for h in everything.hits if h.score >= floor)


def test_change_watch_sees_commits_and_a_replaced_file(tmp_path: Path):
    import shutil
    import sqlite3

    path = tmp_path / "index.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    watch = db.ChangeWatch(path)
    first = watch.token()
    assert first is not None and watch.token() == first  # nothing changed, nothing moves
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO t VALUES (1)")
    second = watch.token()
    assert second != first
    copy = tmp_path / "rebuilt.sqlite"
    shutil.copy(path, copy)
    copy.replace(path)  # a rebuilt index swapped in: a new file, whatever its data_version
    third = watch.token()
    assert third is not None and third != second and watch.token() == third
    path.unlink()
    assert watch.token() is None
    watch.close()


@pytest.mark.both_backends
def test_on_disk_fetches_more_neighbours_when_one_document_fills_them(cli, model, tmp_path: Path):
    import random

    folder = tmp_path / "mixed"
    folder.mkdir()
    words = [
        "backup",
        "snapshot",
        "restore",
        "archive",
        "repository",
        "retention",
        "nightly",
        "offsite",
        "copy",
        "file",
    ]
    rng = random.Random(7)
    sections = [
        f"## Backup part {i}\n\n" + " ".join(rng.choice(words) for _ in range(330)) + f" part {i}.\n"
        for i in range(70)
    ]
    (folder / "huge.md").write_text("# Backups\n\n" + "\n".join(sections), encoding="utf-8")
    for name in ("soup", "bread", "tea"):
        (folder / f"{name}.md").write_text(f"# {name}\n\nHow to cook {name} at home.\n", encoding="utf-8")
    assert cli("collection", "add", folder, "--name", "mixed").exit_code == 0
    assert cli("embed").exit_code == 0
    vectors = Tansaku().vsearch("restore a backup snapshot", limit=None, min_score=-1.0)
    assert vectors.hits[0].path == "huge.md"
    on_disk = Tansaku(keep_vectors=False)
    found = on_disk.vsearch("restore a backup snapshot", limit=2, min_score=-1.0)
    # The 50 nearest vectors are all the huge document's: without fetching more, one result.
    assert [hit.path for hit in found.hits] == [hit.path for hit in vectors.hits[:2]]


def test_a_test_file_counts_less_than_the_code_it_quotes_in_memory_and_on_disk(
    cli, model, tmp_path: Path, monkeypatch
):
    folder = tmp_path / "code"  # widgets/ sorts after tests/: ties would put the test first
    (folder / "widgets").mkdir(parents=True)
    (folder / "tests").mkdir()
    text = 'def show_progress(items):\n    """Show a progress bar while looping over items."""\n'
    (folder / "widgets" / "progress.py").write_text(text, encoding="utf-8")
    (folder / "tests" / "test_progress.py").write_text(text, encoding="utf-8")
    assert cli("collection", "add", folder, "--name", "code", "--mask", "**/*.py").exit_code == 0
    assert cli("embed").exit_code == 0
    query = "show a progress bar while looping over items"
    # --all-copies: the two files hold one text, which is otherwise one result (search/copies.py).
    found = Tansaku().vsearch(query, limit=2, min_score=0.0, all_copies=True)
    assert [hit.path for hit in found.hits] == ["widgets/progress.py", "tests/test_progress.py"]
    # The same text, the same cosine: the test file's is weighed down (search/file_kinds.py).
    assert found.hits[1].score == pytest.approx(found.hits[0].score * 0.8, abs=1e-4)
    once = Tansaku().vsearch(query, limit=2, min_score=0.0)
    assert [(hit.path, hit.also_at) for hit in once.hits] == [
        ("widgets/progress.py", ("tansaku://code/tests/test_progress.py",))
    ]
    monkeypatch.setenv(MEMORY_BUDGET_ENV, "0")
    on_disk = Tansaku(keep_vectors=False).vsearch(query, limit=2, min_score=0.0, all_copies=True)
    assert [hit.path for hit in on_disk.hits] == ["widgets/progress.py", "tests/test_progress.py"]
    once = Tansaku(keep_vectors=False).vsearch(query, limit=2, min_score=0.0)
    assert [hit.path for hit in once.hits] == ["widgets/progress.py"]


def test_vsearch_says_when_the_embedder_read_only_the_start_of_a_long_query(cli, embedded: Path):
    words = " ".join(f"restore{n}" for n in range(200))
    data = cli("vsearch", f"restore a file {words}", "--json").json()
    truncated = [w for w in data["warnings"] if w["code"] == "QUERY_TRUNCATED"]
    assert len(truncated) == 1 and "first 64 words" in truncated[0]["message"]
    short = cli("vsearch", "restore a file", "--json").json()
    assert "QUERY_TRUNCATED" not in [w["code"] for w in short["warnings"]]
