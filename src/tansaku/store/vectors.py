"""SQL for embeddings and their sqlite-vec tables.

sqlite-vec must be loaded on every connection that touches a vec0 table (``load_extension``);
keyword search never does, so it never pays for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from . import routed
from .dialect import both, dialect, run, run_many
from .vector_rows import CollectionEntries, EmbedModelRecord, UnusableVectors, VectorsUnavailable

# SQLite caps host parameters; batches of ids stay well under the limit (PostgreSQL takes a list
# as one array parameter: its batches only keep statements short).
_BATCH = 500


def _batch(conn: Any) -> int:
    return 5000 if dialect(conn).name == "postgresql" else _BATCH


def load_extension(conn: Any) -> None:
    try:
        import sqlite_vec
    except ImportError as exc:
        raise VectorsUnavailable(
            "sqlite-vec is not installed", hint="pip install 'tansaku[models]' (or sqlite-vec)"
        ) from exc
    conn.enable_load_extension(True)
    try:
        sqlite_vec.load(conn)
    finally:
        conn.enable_load_extension(False)


def has_vec_tables(conn: Any) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE name LIKE 'vec_f32_%' LIMIT 1").fetchone()
    return row is not None


def vec_table(dims: int) -> str:
    return f"vec_f32_{int(dims)}"


def ensure_vec_table(conn: Any, dims: int) -> None:
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {vec_table(dims)} USING vec0("
        f"fingerprint text partition key, embedding float[{int(dims)}] distance_metric=cosine)"
    )


@both
def register_model(conn: Any, record: EmbedModelRecord, created_at: str) -> None:
    run(
        conn,
        dialect(conn).upsert(
            "embed_models",
            "fingerprint, model_path, model_sha256, model_size, model_mtime_ns, prompt_format, dims,"
            " window_tokens, created_at",
            key="fingerprint",
        ),
        (
            record.fingerprint,
            record.model_path,
            record.model_sha256,
            record.model_size,
            record.model_mtime_ns,
            record.prompt_format,
            record.dims,
            record.window_tokens,
            created_at,
        ),
    )
    routed.vectors.index_model(conn, record)


def index_model(conn: Any, record: EmbedModelRecord) -> None:
    """Nothing on SQLite: vec0 partitions a table's vectors by model (fingerprint) already."""


@both
def remember_model_file(conn: Any, fingerprint: str, path: str, size: int, mtime_ns: int) -> None:
    run(
        conn,
        "UPDATE embed_models SET model_path = ?, model_size = ?, model_mtime_ns = ? WHERE fingerprint = ?",
        (path, size, mtime_ns, fingerprint),
    )


@both
def models(conn: Any) -> list[EmbedModelRecord]:
    """Every model the index has vectors of, the one embed registered last at the end."""
    rows = run(
        conn,
        "SELECT fingerprint, model_path, model_sha256, model_size, model_mtime_ns, prompt_format, dims,"
        " window_tokens FROM embed_models ORDER BY created_at, fingerprint",
    ).fetchall()
    return [EmbedModelRecord(*row) for row in rows]


@both
def model_window(conn: Any, model_path: str) -> int | None:
    """The window the index last used with the model file at ``model_path``, if it knows one."""
    row = run(
        conn,
        "SELECT window_tokens FROM embed_models WHERE model_path = ? ORDER BY created_at DESC LIMIT 1",
        (model_path,),
    ).fetchone()
    return row[0] if row else None


@both
def existing_embeddings(conn: Any, fingerprint: str, text_shas: Iterable[str]) -> dict[str, int]:
    wanted = list(set(text_shas))
    found: dict[str, int] = {}
    size = _batch(conn)
    for start in range(0, len(wanted), size):
        among, params = dialect(conn).one_of("text_sha", wanted[start : start + size])
        rows = run(
            conn,
            f"SELECT text_sha, id FROM embeddings WHERE fingerprint = ? AND {among}",
            (fingerprint, *params),
        ).fetchall()
        found.update({row[0]: row[1] for row in rows})
    return found


@both
def add_embedding(conn: Any, fingerprint: str, dims: int, text_sha: str, blob: bytes) -> int:
    """Store a vector for a text, replacing the one it had (``embed -f`` recomputes)."""
    row = run(
        conn, "SELECT id FROM embeddings WHERE fingerprint = ? AND text_sha = ?", (fingerprint, text_sha)
    ).fetchone()
    if row is None:
        row = run(
            conn,
            "INSERT INTO embeddings (fingerprint, text_sha) VALUES (?, ?) RETURNING id",
            (fingerprint, text_sha),
        ).fetchone()
        replacing = False
    else:
        replacing = True
    embedding_id = int(row[0])
    routed.vectors.put_vector(conn, dims, fingerprint, embedding_id, blob, replacing=replacing)
    return embedding_id


def put_vector(
    conn: Any, dims: int, fingerprint: str, embedding_id: int, blob: bytes, *, replacing: bool
) -> None:
    """The vector of an embedding, in its model's vec0 table (a virtual table: delete, then insert)."""
    if replacing:
        conn.execute(f"DELETE FROM {vec_table(dims)} WHERE rowid = ?", (embedding_id,))
    conn.execute(
        f"INSERT INTO {vec_table(dims)} (rowid, fingerprint, embedding) VALUES (?, ?, ?)",
        (embedding_id, fingerprint, blob),
    )


@both
def link_chunks(conn: Any, rows: Sequence[tuple[str, str, str, int, int, int, int, int]]) -> None:
    """Rows of (fingerprint, hash, chunk_params, seq, window, embedding_id, start_line, end_line)."""
    words = dialect(conn)
    key = f"fingerprint, hash, chunk_params, seq, {words.window}"
    run_many(conn, words.upsert("chunk_vectors", f"{key}, embedding_id, start_line, end_line", key=key), rows)


@both
def record_failure(conn: Any, fingerprint: str, content_hash: str, params: str, seq: int, error: str) -> None:
    key = "fingerprint, hash, chunk_params, seq"
    run(
        conn,
        dialect(conn).upsert("embed_failures", f"{key}, error", key=key),
        (fingerprint, content_hash, params, seq, error),
    )


@both
def clear(conn: Any, fingerprint: str, hashes: Sequence[str]) -> None:
    """Forget these texts' vectors for a model (embed -f); pruning then frees unused embeddings."""
    size = _batch(conn)
    for start in range(0, len(hashes), size):
        among, params = dialect(conn).one_of("hash", list(hashes[start : start + size]))
        run(conn, f"DELETE FROM chunk_vectors WHERE fingerprint = ? AND {among}", (fingerprint, *params))
        run(conn, f"DELETE FROM embed_failures WHERE fingerprint = ? AND {among}", (fingerprint, *params))


# The window number of a chunk's quick vector: its title, headings and the first words of each
# paragraph, embedded before its full windows (0, 1, ...) so that a large collection is searchable
# within minutes.
# A chunk keeps it only until its full windows are linked.
QUICK_WINDOW = -1


@both
def pending_chunks(
    conn: Any, fingerprint: str, collection: str, params: str, *, quick: bool = False
) -> list[tuple[str, int]]:
    """(content hash, seq) of this collection's chunks with no vector (nor failure) for the model;
    ``quick``: with no vector at all, quick or full (what the quick pass embeds)."""
    windows = "" if quick else f" AND v.{dialect(conn).window} != {QUICK_WINDOW}"
    rows = run(
        conn,
        "SELECT DISTINCT c.hash, c.seq FROM documents AS d"
        " JOIN chunks AS c ON c.hash = d.hash AND c.params = ? WHERE d.collection = ?"
        " AND NOT EXISTS (SELECT 1 FROM chunk_vectors AS v WHERE v.fingerprint = ? AND v.hash = c.hash"
        f"   AND v.chunk_params = c.params AND v.seq = c.seq{windows})"
        " AND NOT EXISTS (SELECT 1 FROM embed_failures AS f WHERE f.fingerprint = ? AND f.hash = c.hash"
        "   AND f.chunk_params = c.params AND f.seq = c.seq)"
        " ORDER BY c.hash, c.seq",
        (params, collection, fingerprint, fingerprint),
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


@both
def unlink_quick(conn: Any, fingerprint: str, params: str, chunks: Iterable[tuple[str, int]]) -> None:
    """Drop the quick vectors of chunks whose full windows are now linked (``prune`` then frees
    the embeddings nothing else uses)."""
    run_many(
        conn,
        "DELETE FROM chunk_vectors WHERE fingerprint = ? AND hash = ? AND chunk_params = ? AND seq = ?"
        f" AND {dialect(conn).window} = {QUICK_WINDOW}",
        [(fingerprint, content_hash, params, seq) for content_hash, seq in chunks],
    )


@both
def collection_quick_count(conn: Any, collection: str, params: str, fingerprint: str | None) -> int:
    """Chunks of the collection searched by their quick vector only (no full windows yet)."""
    if fingerprint is None:
        return 0
    row = run(
        conn,
        "SELECT count(*) FROM chunk_vectors WHERE fingerprint = ? AND chunk_params = ?"
        f" AND {dialect(conn).window} = {QUICK_WINDOW}"
        " AND hash IN (SELECT hash FROM documents WHERE collection = ?)",
        (fingerprint, params, collection),
    ).fetchone()
    return int(row[0])


@both
def collection_vector_counts(
    conn: Any, collection: str, params: str, fingerprint: str | None
) -> tuple[int, int, int]:
    """(chunks with a vector for this model, chunks, chunks with vectors only from other models)."""
    window = dialect(conn).window
    hashes = "SELECT hash FROM documents WHERE collection = ?"
    total = run(
        conn,
        f"SELECT coalesce(sum(chunk_count), 0) FROM chunk_runs WHERE params = ? AND hash IN ({hashes})",
        (params, collection),
    ).fetchone()[0]
    embedded = 0
    if fingerprint is not None:
        # Every chunk with vectors has a window 0, so counting those counts chunks without DISTINCT.
        embedded = run(
            conn,
            f"SELECT count(*) FROM chunk_vectors WHERE fingerprint = ? AND chunk_params = ? AND {window} = 0"
            f" AND hash IN ({hashes})",
            (fingerprint, params, collection),
        ).fetchone()[0]
    # Chunks that have another model's vectors and none of this one's: what `embed` would redo.
    stale = run(
        conn,
        "SELECT count(*) FROM (SELECT DISTINCT hash, seq FROM chunk_vectors AS o WHERE fingerprint != ?"
        f" AND chunk_params = ? AND {window} = 0 AND hash IN ({hashes}) AND NOT EXISTS (SELECT 1 FROM"
        " chunk_vectors AS c WHERE c.fingerprint = ? AND c.hash = o.hash AND c.chunk_params ="
        f" o.chunk_params AND c.seq = o.seq AND c.{window} = 0)) AS s",
        (fingerprint or "", params, collection, fingerprint or ""),
    ).fetchone()[0]
    return int(embedded), int(total), int(stale)


@both
def prune_if_present(conn: Any, *, keep_unlinked: bool = False) -> int:
    """Prune vectors when the index has any (on SQLite the writer has loaded sqlite-vec then)."""
    vectors = routed.vectors
    return vectors.prune(conn, keep_unlinked=keep_unlinked) if vectors.has_vec_tables(conn) else 0


def prune(conn: Any, *, keep_unlinked: bool = False) -> int:
    """Unlink vectors of chunks that no longer exist, then drop embeddings nothing points to.

    ``keep_unlinked`` keeps those embeddings: `update` unlinks the vectors of an edited document's
    old chunks, and the next `embed` reuses the ones whose text reappears (usually all but the
    edited chunk) before it drops the rest. Unlinked vectors are never search results.
    """
    orphans = unlink_gone(conn, keep_unlinked=keep_unlinked)
    for embedding_id, dims in orphans:
        conn.execute(f"DELETE FROM {vec_table(dims)} WHERE rowid = ?", (embedding_id,))
        conn.execute("DELETE FROM embeddings WHERE id = ?", (embedding_id,))
    return len(orphans)


def unlink_gone(conn: Any, *, keep_unlinked: bool) -> list[tuple[int, int]]:
    """Both backends' ``prune`` up to the embeddings: unlink the vectors (and forget the failures)
    of chunks that no longer exist; the embeddings nothing points to now, as (id, dims), none
    when ``keep_unlinked``."""
    run(
        conn,
        "DELETE FROM chunk_vectors WHERE NOT EXISTS (SELECT 1 FROM chunk_runs AS r"
        " WHERE r.hash = chunk_vectors.hash AND r.params = chunk_vectors.chunk_params)",
    )
    run(
        conn,
        "DELETE FROM embed_failures WHERE NOT EXISTS (SELECT 1 FROM chunk_runs AS r"
        " WHERE r.hash = embed_failures.hash AND r.params = embed_failures.chunk_params)",
    )
    if keep_unlinked:
        return []
    return [
        (int(embedding_id), int(dims))
        for embedding_id, dims in run(
            conn,
            "SELECT e.id, m.dims FROM embeddings AS e JOIN embed_models AS m ON m.fingerprint = e.fingerprint"
            " WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors AS v WHERE v.embedding_id = e.id)",
        ).fetchall()
    ]


@both
def unlink_superseded(conn: Any, fingerprint: str, family: str) -> int:
    """Unlink the vectors of ``family`` (the same model file and prompt, an older embedded-text
    version: fingerprints matching ``family`` as a LIKE pattern) from chunks that now have one of
    ``fingerprint``: nothing will search them again. ``prune`` then drops the embeddings."""
    cursor = run(
        conn,
        "DELETE FROM chunk_vectors WHERE fingerprint != ? AND fingerprint LIKE ? AND EXISTS (SELECT 1"
        " FROM chunk_vectors AS c WHERE c.fingerprint = ? AND c.hash = chunk_vectors.hash AND"
        " c.chunk_params = chunk_vectors.chunk_params AND c.seq = chunk_vectors.seq"
        f" AND c.{dialect(conn).window} = 0)",
        (fingerprint, family, fingerprint),
    )
    return int(cursor.rowcount or 0)


@both
def unlinked_count(conn: Any) -> int:
    return int(
        run(
            conn,
            "SELECT count(*) FROM embeddings AS e WHERE NOT EXISTS"
            " (SELECT 1 FROM chunk_vectors AS v WHERE v.embedding_id = e.id)",
        ).fetchone()[0]
    )


# sqlite-vec refuses a larger k.
KNN_MAX = 4096


def knn(
    conn: Any, dims: int, fingerprint: str, query: bytes, k: int, collection: str, params: str
) -> list[tuple[int, float]]:
    """sqlite-vec's k nearest (exact distances) among one collection's vectors, nearest first.

    A vector with no direction (all zeros, or NaN or infinite values: stored by an index made
    before endpoint answers were checked) has no distance (NULL) and sorts anywhere: it is left
    out, and more are asked for in its place, so up to k usable ones come back (fewer only when
    the collection has no more; `doctor` counts such vectors)."""
    asked = k
    while True:
        rows = conn.execute(
            f"SELECT rowid, distance FROM {vec_table(dims)} WHERE embedding MATCH ? AND k = ?"
            " AND fingerprint = ? AND rowid IN (SELECT v.embedding_id FROM documents AS d"
            "   JOIN chunk_vectors AS v ON v.hash = d.hash AND v.chunk_params = ? AND v.fingerprint = ?"
            "   WHERE d.collection = ?)",
            (query, asked, fingerprint, params, fingerprint, collection),
        ).fetchall()
        usable = [(row[0], row[1]) for row in rows if row[1] is not None]
        if len(usable) >= k or len(rows) < asked or asked >= KNN_MAX:
            return usable[:k]
        asked = min(asked + len(rows) - len(usable), KNN_MAX)


def model_vectors_by_text(conn: Any, fingerprint: str, dims: int) -> list[tuple[str, bytes]]:
    """Every stored vector of one model with its text's sha256, to copy them into another index
    (evals/bench_backends.py gives PostgreSQL the vectors SQLite computed, for `embed` to reuse)."""
    rows = conn.execute(
        f"SELECT e.text_sha, v.embedding FROM embeddings AS e JOIN {vec_table(dims)} AS v"
        " ON v.rowid = e.id WHERE e.fingerprint = ?",
        (fingerprint,),
    )
    return [(str(sha), bytes(blob)) for sha, blob in rows]


# How many of a model's vectors `doctor` looks at (measured: 0.25 s for 300,000 of 384
# dimensions): the newest, which is where an endpoint that began answering badly put its vectors.
UNUSABLE_SCAN_MAX = 2_000_000
# Through the virtual table (a vec0 layout this code does not know), 30 times slower: fewer.
_UNUSABLE_SCAN_SLOW_MAX = 200_000


def unusable_vectors(
    conn: Any, dims: int, fingerprint: str, limit: int = UNUSABLE_SCAN_MAX
) -> UnusableVectors:
    """Count the model's vectors that no search can score, newest first, at most ``limit`` of
    them: vec0's blocks as numpy arrays where their layout is the known one (store/vectors.py's
    ``read_model_vectors``), else cosine distance to itself through the virtual table (NULL for
    such a vector)."""
    import numpy as np

    total = model_vector_count(conn, fingerprint)
    table = vec_table(dims)
    if _has_block_layout(conn, dims):
        # The blocks' ids first (small rows), then each block's vectors by rowid: sorting the
        # joined rows would read every vector before the first one is looked at.
        blocks = conn.execute(
            f"SELECT chunk_id, size, validity FROM {table}_chunks WHERE partition00 = ?"
            " ORDER BY chunk_id DESC",
            (fingerprint,),
        ).fetchall()
        count = checked = 0
        for chunk_id, size, validity in blocks:
            if checked >= limit:
                break
            row = conn.execute(
                f"SELECT vectors FROM {table}_vector_chunks00 WHERE rowid = ?", (chunk_id,)
            ).fetchone()
            vectors = row[0] if row else b""
            if len(vectors) != size * dims * 4 or len(validity) * 8 < size:
                break  # not the layout this code knows: what was counted so far stands
            bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
            block = np.frombuffer(vectors, dtype=np.float32).reshape(size, dims)[bits[:size].astype(bool)]
            count += int(np.count_nonzero(without_direction(block)))
            checked += len(block)
        return UnusableVectors(count, min(checked, total), total)
    row = conn.execute(
        f"SELECT count(*), coalesce(sum(vec_distance_cosine(embedding, embedding) IS NULL), 0) FROM"
        f" (SELECT embedding FROM {table} WHERE fingerprint = ? ORDER BY rowid DESC LIMIT ?)",
        (fingerprint, min(limit, _UNUSABLE_SCAN_SLOW_MAX)),
    ).fetchone()
    return UnusableVectors(int(row[1]), int(row[0]), total)


def without_direction(matrix: Any) -> Any:
    """The rows of ``matrix`` (float32[n, dims]) no search can score: stored vectors are unit
    length, so a sum of squares that is not finite and positive (all zeros, a NaN, an infinite or
    overflowing value) marks one. bool[n]."""
    import numpy as np

    squares = np.einsum("ij,ij->i", matrix, matrix)
    return ~(np.isfinite(squares) & (squares > 0))


def _has_block_layout(conn: Any, dims: int) -> bool:
    table = vec_table(dims)
    chunk_columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table}_chunks)")]
    vector_columns = [row[1] for row in conn.execute(f"PRAGMA table_info({table}_vector_chunks00)")]
    return chunk_columns == ["chunk_id", "size", "sequence_id", "partition00", "validity", "rowids"] and (
        vector_columns == ["rowid", "vectors"]
    )


@both
def model_vector_count(conn: Any, fingerprint: str) -> int:
    row = run(conn, "SELECT count(*) FROM embeddings WHERE fingerprint = ?", (fingerprint,)).fetchone()
    return int(row[0])


@both
def collection_entries(conn: Any, fingerprint: str, collection: str, params: str) -> CollectionEntries:
    return _entries(
        _plain_rows(
            conn,
            "SELECT d.id, v.embedding_id, v.start_line, v.end_line FROM documents AS d"
            " JOIN chunk_vectors AS v ON v.hash = d.hash AND v.chunk_params = ? AND v.fingerprint = ?"
            f" WHERE d.collection = ? ORDER BY {_window_order(conn)}",
            (params, fingerprint, collection),
        )
    )


@both
def entries_for_embeddings(
    conn: Any, fingerprint: str, collection: str, params: str, embedding_ids: Sequence[int]
) -> CollectionEntries:
    """The collection's chunk windows that use these embeddings, ordered by document id."""
    words = dialect(conn)
    among, ids = words.one_of("v.embedding_id", embedding_ids)
    # SQLite's "+fingerprint": find the rows by embedding id, not by scanning all the model's rows.
    model = "+v.fingerprint" if words.name == "sqlite" else "v.fingerprint"
    return _entries(
        _plain_rows(
            conn,
            "SELECT d.id, v.embedding_id, v.start_line, v.end_line FROM chunk_vectors AS v"
            " JOIN documents AS d ON d.hash = v.hash AND d.collection = ?"
            f" WHERE {among} AND {model} = ? AND v.chunk_params = ? ORDER BY {_window_order(conn)}",
            (collection, *ids, fingerprint, params),
        )
    )


def _window_order(conn: Any) -> str:
    # By document; SQLite reads a document's windows in its key's order (seq, window) already,
    # PostgreSQL is told.
    return "d.id" if dialect(conn).name == "sqlite" else "d.id, v.seq, v.window_no"


def _plain_rows(conn: Any, statement: str, params: Sequence[Any]) -> list[Any]:
    """The rows as plain tuples (on SQLite, not sqlite3.Row: this reads one row per chunk window)."""
    if dialect(conn).name == "sqlite":
        cursor = conn.cursor()
        cursor.row_factory = None
        return cursor.execute(statement, params).fetchall()  # type: ignore[no-any-return]
    return run(conn, statement, params).fetchall()  # type: ignore[no-any-return]


def _entries(rows: Sequence[tuple[int, int, int, int]]) -> CollectionEntries:
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    return CollectionEntries(*(list(column) for column in columns))


def read_model_vectors(
    conn: Any, dims: int, fingerprint: str, expected: int | None = None
) -> tuple[Any, Any]:
    """Every stored vector of one model as (embedding ids, float32 matrix), in no set order.

    Reads vec0's own tables a block of 1,024 vectors at a time when their layout is the one this
    code knows (some 20 times faster than row by row through the virtual table); any surprise in
    that layout falls back to the virtual table, so a new sqlite-vec costs speed, never results.
    ``expected`` is the model's vector count when the caller has just read it.
    """
    import numpy as np

    if expected is None:
        expected = model_vector_count(conn, fingerprint)
    ids = np.empty(expected, dtype=np.int64)
    matrix = np.empty((expected, dims), dtype=np.float32)
    if _read_vec0_blocks(conn, dims, fingerprint, ids, matrix):
        return ids, matrix
    cursor = conn.cursor()
    cursor.row_factory = None
    rows = cursor.execute(
        f"SELECT rowid, embedding FROM {vec_table(dims)} WHERE fingerprint = ?", (fingerprint,)
    )
    filled = 0
    for filled, (rowid, blob) in enumerate(rows, start=1):
        if filled > expected:
            raise VectorsUnavailable("the vector table holds more vectors than the index lists")
        ids[filled - 1] = rowid
        matrix[filled - 1] = np.frombuffer(blob, dtype=np.float32)
    return ids[:filled], matrix[:filled]


def _read_vec0_blocks(conn: Any, dims: int, fingerprint: str, ids: Any, matrix: Any) -> bool:
    """Fill ``ids`` and ``matrix`` from vec0's block tables; False if anything is not as expected."""
    import numpy as np

    table = vec_table(dims)
    if not _has_block_layout(conn, dims):
        return False
    cursor = conn.cursor()
    cursor.row_factory = None
    rows = cursor.execute(
        f"SELECT c.size, c.validity, c.rowids, v.vectors FROM {table}_chunks AS c"
        f" JOIN {table}_vector_chunks00 AS v ON v.rowid = c.chunk_id WHERE c.partition00 = ?",
        (fingerprint,),
    )
    filled = 0
    for size, validity, rowids, vectors in rows:
        if len(rowids) != size * 8 or len(vectors) != size * dims * 4 or len(validity) * 8 < size:
            return False
        valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")[:size].astype(bool)
        count = int(valid.sum())
        if filled + count > len(ids):
            return False
        ids[filled : filled + count] = np.frombuffer(rowids, dtype=np.int64)[valid]
        matrix[filled : filled + count] = np.frombuffer(vectors, dtype=np.float32).reshape(size, dims)[valid]
        filled += count
    return filled == len(ids)
