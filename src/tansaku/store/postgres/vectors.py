"""Vectors on PostgreSQL: store/vectors.py's functions with the same names, arguments and results.

The tables mirror SQLite's (migrations.py, version 3). The vectors themselves are pgvector
``vector(dims)`` columns in one table per dimension count (``vectors_<dims>``, as SQLite's
``vec_f32_<dims>``), each model with its own HNSW index (cosine; a partial index on its
fingerprint, so one model's graph never holds another's vectors).

Nearest neighbours (``knn``) are exact while the model's vectors fit the size below which SQLite
keeps them in memory and scores every one (TANSAKU_VECTOR_MEMORY_MB, 1 GiB by default): a
distance per vector of the collection, as sqlite-vec computes them. Above it, the HNSW index
answers, with pgvector 0.8's iterative scan (relaxed order, sorted again) so that a collection
filter still fills the limit; if the scan gives up before (``hnsw.max_scan_tuples``), the exact
scan answers instead, so a search never returns fewer neighbours than the collection has, up to
the limit.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from ..vectors import (
    UNUSABLE_SCAN_MAX,
    CollectionEntries,
    EmbedModelRecord,
    UnusableVectors,
    VectorsUnavailable,
)
from .db import deferred

# Rows per statement for lists of ids or hashes (an array parameter has no limit; this keeps
# statements short).
_BATCH = 5000
_INSTALL_HINT = "install pgvector on the server (https://github.com/pgvector/pgvector), or use a SQLite index"


def vec_table(dims: int) -> str:
    return f"vectors_{int(dims)}"


def _index_name(dims: int, fingerprint: str) -> str:
    return f"vectors_{int(dims)}_hnsw_{hashlib.sha256(fingerprint.encode()).hexdigest()[:16]}"


def _literal(text: str) -> str:
    """A string as an SQL literal, for the one place a value cannot be a parameter: a partial
    index's predicate, which the planner must see as a constant to use the index."""
    return "'" + text.replace("'", "''") + "'"


def _has_vector_type(conn: Any) -> bool:
    return conn.execute("SELECT to_regtype('vector')").fetchone()[0] is not None


def load_extension(conn: Any) -> None:
    """Let the connection send and read pgvector's type as numpy arrays (when the database has
    it: an index nobody embedded yet has no vector tables to read)."""
    if getattr(conn, "vector_types", False) or not _has_vector_type(conn):
        return
    try:
        from pgvector.psycopg import register_vector
    except ImportError as exc:
        raise VectorsUnavailable(
            "pgvector's Python package is not installed", hint="pip install 'tansaku[postgres]'"
        ) from exc
    register_vector(conn.raw)
    conn.vector_types = True


def has_vec_tables(conn: Any) -> bool:
    row = conn.execute(
        "SELECT 1 FROM pg_class WHERE relkind = 'r' AND relname LIKE 'vectors\\_%%'"
        " AND relnamespace = current_schema()::regnamespace LIMIT 1"
    ).fetchone()
    return row is not None


def ensure_vec_table(conn: Any, dims: int) -> None:
    """The table of ``dims``-dimension vectors, with the ``vector`` extension it needs."""
    if not _has_vector_type(conn):
        available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if available is None:
            raise VectorsUnavailable("the PostgreSQL server has no pgvector extension", hint=_INSTALL_HINT)
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {vec_table(dims)} (id bigint PRIMARY KEY,"
        f' fingerprint text COLLATE "C" NOT NULL, embedding vector({int(dims)}) NOT NULL)'
    )
    load_extension(conn)


def _ensure_model_index(conn: Any, dims: int, fingerprint: str) -> None:
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS {_index_name(dims, fingerprint)} ON {vec_table(dims)}"
        f" USING hnsw (embedding vector_cosine_ops) WHERE fingerprint = {_literal(fingerprint)}"
    )


def register_model(conn: Any, record: EmbedModelRecord, created_at: str) -> None:
    conn.execute(
        "INSERT INTO embed_models (fingerprint, model_path, model_sha256, model_size, model_mtime_ns,"
        " prompt_format, dims, window_tokens, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (fingerprint) DO UPDATE SET model_path = excluded.model_path,"
        " model_sha256 = excluded.model_sha256, model_size = excluded.model_size,"
        " model_mtime_ns = excluded.model_mtime_ns, prompt_format = excluded.prompt_format,"
        " dims = excluded.dims, window_tokens = excluded.window_tokens, created_at = excluded.created_at",
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
    _ensure_model_index(conn, record.dims, record.fingerprint)


def remember_model_file(conn: Any, fingerprint: str, path: str, size: int, mtime_ns: int) -> None:
    conn.execute(
        "UPDATE embed_models SET model_path = %s, model_size = %s, model_mtime_ns = %s"
        " WHERE fingerprint = %s",
        (path, size, mtime_ns, fingerprint),
    )


def models(conn: Any) -> list[EmbedModelRecord]:
    """Every model the index has vectors of, the one embed registered last at the end."""
    rows = conn.execute(
        "SELECT fingerprint, model_path, model_sha256, model_size, model_mtime_ns, prompt_format, dims,"
        " window_tokens FROM embed_models ORDER BY created_at, fingerprint"
    ).fetchall()
    return [EmbedModelRecord(*row) for row in rows]


def model_window(conn: Any, model_path: str) -> int | None:
    row = conn.execute(
        "SELECT window_tokens FROM embed_models WHERE model_path = %s ORDER BY created_at DESC LIMIT 1",
        (model_path,),
    ).fetchone()
    return row[0] if row else None


def existing_embeddings(conn: Any, fingerprint: str, text_shas: Iterable[str]) -> dict[str, int]:
    wanted = list(set(text_shas))
    found: dict[str, int] = {}
    for start in range(0, len(wanted), _BATCH):
        rows = conn.execute(
            "SELECT text_sha, id FROM embeddings WHERE fingerprint = %s AND text_sha = ANY(%s)",
            (fingerprint, wanted[start : start + _BATCH]),
        ).fetchall()
        found.update({row[0]: row[1] for row in rows})
    return found


def _array(blob: bytes) -> Any:
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32)


def add_embedding(conn: Any, fingerprint: str, dims: int, text_sha: str, blob: bytes) -> int:
    """Store a vector for a text, replacing the one it had (``embed -f`` recomputes)."""
    row = conn.execute(
        "SELECT id FROM embeddings WHERE fingerprint = %s AND text_sha = %s", (fingerprint, text_sha)
    ).fetchone()
    if row is not None:
        embedding_id = int(row[0])
    else:
        embedding_id = int(
            conn.execute(
                "INSERT INTO embeddings (fingerprint, text_sha) VALUES (%s, %s) RETURNING id",
                (fingerprint, text_sha),
            ).fetchone()[0]
        )
    conn.execute(
        f"INSERT INTO {vec_table(dims)} (id, fingerprint, embedding) VALUES (%s, %s, %s)"
        " ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding",
        (embedding_id, fingerprint, _array(blob)),
    )
    return embedding_id


def link_chunks(conn: Any, rows: Sequence[tuple[str, str, str, int, int, int, int, int]]) -> None:
    """Rows of (fingerprint, hash, chunk_params, seq, window, embedding_id, start_line, end_line)."""
    if not rows:
        return
    conn.executemany(
        "INSERT INTO chunk_vectors (fingerprint, hash, chunk_params, seq, window_no, embedding_id,"
        " start_line, end_line) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
        " ON CONFLICT (fingerprint, hash, chunk_params, seq, window_no) DO UPDATE SET"
        " embedding_id = excluded.embedding_id, start_line = excluded.start_line,"
        " end_line = excluded.end_line",
        rows,
    )


def record_failure(conn: Any, fingerprint: str, content_hash: str, params: str, seq: int, error: str) -> None:
    conn.execute(
        "INSERT INTO embed_failures (fingerprint, hash, chunk_params, seq, error)"
        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (fingerprint, hash, chunk_params, seq)"
        " DO UPDATE SET error = excluded.error",
        (fingerprint, content_hash, params, seq, error),
    )


def clear(conn: Any, fingerprint: str, hashes: Sequence[str]) -> None:
    """Forget these texts' vectors for a model (embed -f); pruning then frees unused embeddings."""
    for start in range(0, len(hashes), _BATCH):
        batch = list(hashes[start : start + _BATCH])
        conn.execute(
            "DELETE FROM chunk_vectors WHERE fingerprint = %s AND hash = ANY(%s)", (fingerprint, batch)
        )
        conn.execute(
            "DELETE FROM embed_failures WHERE fingerprint = %s AND hash = ANY(%s)", (fingerprint, batch)
        )


# The window number of a chunk's quick vector (its title, headings and the first words of each
# paragraph, embedded before its full windows 0, 1, ...): store/vectors.py's QUICK_WINDOW, which
# `embed`'s quick pass uses.
QUICK_WINDOW = -1


def pending_chunks(
    conn: Any, fingerprint: str, collection: str, params: str, *, quick: bool = False
) -> list[tuple[str, int]]:
    """(content hash, seq) of this collection's chunks with no vector (nor failure) for the model;
    ``quick``: with no vector at all, quick or full (what the quick pass embeds)."""
    windows = "" if quick else f" AND v.window_no <> {QUICK_WINDOW}"
    rows = conn.execute(
        "SELECT DISTINCT c.hash, c.seq FROM documents AS d"
        " JOIN chunks AS c ON c.hash = d.hash AND c.params = %s WHERE d.collection = %s"
        " AND NOT EXISTS (SELECT 1 FROM chunk_vectors AS v WHERE v.fingerprint = %s AND v.hash = c.hash"
        f"   AND v.chunk_params = c.params AND v.seq = c.seq{windows})"
        " AND NOT EXISTS (SELECT 1 FROM embed_failures AS f WHERE f.fingerprint = %s AND f.hash = c.hash"
        "   AND f.chunk_params = c.params AND f.seq = c.seq)"
        " ORDER BY c.hash, c.seq",
        (params, collection, fingerprint, fingerprint),
    ).fetchall()
    return [(row[0], row[1]) for row in rows]


def unlink_quick(conn: Any, fingerprint: str, params: str, chunks: Iterable[tuple[str, int]]) -> None:
    """Drop the quick vectors of chunks whose full windows are now linked (``prune`` then frees
    the embeddings nothing else uses)."""
    rows = [(fingerprint, content_hash, params, seq) for content_hash, seq in chunks]
    if rows:
        conn.executemany(
            "DELETE FROM chunk_vectors WHERE fingerprint = %s AND hash = %s AND chunk_params = %s"
            f" AND seq = %s AND window_no = {QUICK_WINDOW}",
            rows,
        )


def collection_quick_count(conn: Any, collection: str, params: str, fingerprint: str | None) -> int:
    """Chunks of the collection searched by their quick vector only (no full windows yet)."""
    if fingerprint is None:
        return 0
    row = conn.execute(
        "SELECT count(*) FROM chunk_vectors WHERE fingerprint = %s AND chunk_params = %s"
        f" AND window_no = {QUICK_WINDOW} AND hash IN (SELECT hash FROM documents WHERE collection = %s)",
        (fingerprint, params, collection),
    ).fetchone()
    return int(row[0])


def collection_vector_counts(
    conn: Any, collection: str, params: str, fingerprint: str | None
) -> tuple[int, int, int]:
    """(chunks with a vector for this model, chunks, chunks with vectors only from other models)."""
    hashes = "SELECT hash FROM documents WHERE collection = %s"
    total = conn.execute(
        f"SELECT coalesce(sum(chunk_count), 0) FROM chunk_runs WHERE params = %s AND hash IN ({hashes})",
        (params, collection),
    ).fetchone()[0]
    embedded = 0
    if fingerprint is not None:
        embedded = conn.execute(
            "SELECT count(*) FROM chunk_vectors WHERE fingerprint = %s AND chunk_params = %s"
            f" AND window_no = 0 AND hash IN ({hashes})",
            (fingerprint, params, collection),
        ).fetchone()[0]
    stale = conn.execute(
        "SELECT count(*) FROM (SELECT DISTINCT hash, seq FROM chunk_vectors AS o WHERE fingerprint <> %s"
        f" AND chunk_params = %s AND window_no = 0 AND hash IN ({hashes}) AND NOT EXISTS (SELECT 1 FROM"
        " chunk_vectors AS c WHERE c.fingerprint = %s AND c.hash = o.hash AND c.chunk_params ="
        " o.chunk_params AND c.seq = o.seq AND c.window_no = 0)) AS s",
        (fingerprint or "", params, collection, fingerprint or ""),
    ).fetchone()[0]
    return int(embedded), int(total), int(stale)


def prune_if_present(conn: Any, *, keep_unlinked: bool = False) -> int:
    """Prune vectors when the index has any."""
    return prune(conn, keep_unlinked=keep_unlinked) if has_vec_tables(conn) else 0


def prune(conn: Any, *, keep_unlinked: bool = False) -> int:
    """Unlink vectors of chunks that no longer exist, then drop embeddings nothing points to
    (store/vectors.py says why ``keep_unlinked`` keeps them)."""
    if deferred(conn, f"vectors {keep_unlinked}", lambda: _prune(conn, keep_unlinked)):
        return 0
    return _prune(conn, keep_unlinked)


def _prune(conn: Any, keep_unlinked: bool) -> int:
    conn.execute(
        "DELETE FROM chunk_vectors AS v WHERE NOT EXISTS (SELECT 1 FROM chunk_runs AS r"
        " WHERE r.hash = v.hash AND r.params = v.chunk_params)"
    )
    conn.execute(
        "DELETE FROM embed_failures AS f WHERE NOT EXISTS (SELECT 1 FROM chunk_runs AS r"
        " WHERE r.hash = f.hash AND r.params = f.chunk_params)"
    )
    if keep_unlinked:
        return 0
    orphans = conn.execute(
        "SELECT e.id, m.dims FROM embeddings AS e JOIN embed_models AS m ON m.fingerprint = e.fingerprint"
        " WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors AS v WHERE v.embedding_id = e.id)"
    ).fetchall()
    by_dims: dict[int, list[int]] = {}
    for embedding_id, dims in orphans:
        by_dims.setdefault(int(dims), []).append(int(embedding_id))
    for dims, ids in by_dims.items():
        for start in range(0, len(ids), _BATCH):
            batch = ids[start : start + _BATCH]
            conn.execute(f"DELETE FROM {vec_table(dims)} WHERE id = ANY(%s)", (batch,))
            conn.execute("DELETE FROM embeddings WHERE id = ANY(%s)", (batch,))
    return len(orphans)


def unlink_superseded(conn: Any, fingerprint: str, family: str) -> int:
    """Unlink the vectors of ``family`` (store/vectors.py) from chunks that now have one of
    ``fingerprint``."""
    cursor = conn.execute(
        "DELETE FROM chunk_vectors AS o WHERE fingerprint <> %s AND fingerprint LIKE %s AND EXISTS (SELECT 1"
        " FROM chunk_vectors AS c WHERE c.fingerprint = %s AND c.hash = o.hash AND"
        " c.chunk_params = o.chunk_params AND c.seq = o.seq AND c.window_no = 0)",
        (fingerprint, family, fingerprint),
    )
    return int(cursor.rowcount or 0)


def unlinked_count(conn: Any) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM embeddings AS e WHERE NOT EXISTS"
            " (SELECT 1 FROM chunk_vectors AS v WHERE v.embedding_id = e.id)"
        ).fetchone()[0]
    )


def unusable_vectors(
    conn: Any, dims: int, fingerprint: str, limit: int = UNUSABLE_SCAN_MAX
) -> UnusableVectors:
    """Count the model's vectors that no search can score, newest first, at most ``limit``."""
    total = model_vector_count(conn, fingerprint)
    table = vec_table(dims)
    if conn.execute("SELECT to_regclass(%s)", (table,)).fetchone()[0] is None:
        return UnusableVectors(0, 0, total)
    row = conn.execute(
        "SELECT count(*), count(*) FILTER (WHERE NOT (vector_norm(embedding) > 0"
        " AND vector_norm(embedding) < 'Infinity'::float8))"
        f" FROM (SELECT embedding FROM {table} WHERE fingerprint = %s ORDER BY id DESC LIMIT %s) AS s",
        (fingerprint, int(limit)),
    ).fetchone()
    return UnusableVectors(int(row[1]), int(row[0]), total)


def model_vector_count(conn: Any, fingerprint: str) -> int:
    row = conn.execute("SELECT count(*) FROM embeddings WHERE fingerprint = %s", (fingerprint,)).fetchone()
    return int(row[0])


# The collection's embeddings for a model: what a nearest-neighbour search may return.
_COLLECTION_EMBEDDINGS = (
    "SELECT v.embedding_id FROM documents AS d JOIN chunk_vectors AS v ON v.hash = d.hash"
    " AND v.chunk_params = %(params)s AND v.fingerprint = %(fingerprint)s WHERE d.collection = %(collection)s"
)


# A vector with no direction (all zeros: pgvector refuses NaN and infinite values, not zeros) has
# a NaN cosine distance, which PostgreSQL sorts after every number: never a neighbour (as
# SQLite's knn leaves out its NULL distances).
_USABLE = "distance IS NOT NULL AND distance <> 'NaN'::float8"


def knn(
    conn: Any, dims: int, fingerprint: str, query: bytes, k: int, collection: str, params: str
) -> list[tuple[int, float]]:
    """The k nearest of one collection's vectors (cosine distance), nearest first: exact while the
    model's vectors are within the in-memory size (module docstring), else by the HNSW index.
    Vectors with no direction are left out (``_USABLE``)."""
    arguments = {
        "query": _array(query),
        "fingerprint": fingerprint,
        "collection": collection,
        "params": params,
        "k": int(k),
    }
    if _model_bytes(conn, dims, fingerprint) <= _exact_scan_bytes():
        return _exact(conn, dims, arguments)
    found = _approximate(conn, dims, fingerprint, arguments)
    if len(found) < k and len(found) < _collection_vector_total(conn, arguments):
        return _exact(conn, dims, arguments)
    return found


def _exact(conn: Any, dims: int, arguments: dict[str, Any]) -> list[tuple[int, float]]:
    # The distances are computed in a materialised step, so no index can stand in for the scan.
    rows = conn.execute(
        f"WITH scored AS MATERIALIZED (SELECT e.id, e.embedding <=> %(query)s AS distance"
        f" FROM {vec_table(dims)} AS e WHERE e.fingerprint = %(fingerprint)s"
        f" AND e.id IN ({_COLLECTION_EMBEDDINGS}))"
        f" SELECT id, distance FROM scored WHERE {_USABLE} ORDER BY distance, id LIMIT %(k)s",
        arguments,
    ).fetchall()
    return [(int(row[0]), float(row[1])) for row in rows]


def _approximate(
    conn: Any, dims: int, fingerprint: str, arguments: dict[str, Any]
) -> list[tuple[int, float]]:
    # relaxed_order, then sorted again: pgvector's strict_order drops the neighbours a filtered
    # scan finds out of order, and lost a tenth of a 1% collection's nearest ten at 300,000
    # vectors (recall@10 0.88 against 0.96 relaxed, at the same latency: docs/scaling.md). The
    # outer ORDER BY gives the exact distance order sqlite-vec's results have. ef_search at least
    # k (its cap is 1,000) so one pass of the graph can fill a small limit.
    conn.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
    conn.execute(
        "SELECT set_config('hnsw.ef_search', %s, true)", (str(min(max(int(arguments["k"]), 40), 1000)),)
    )
    rows = conn.execute(
        f"WITH nearest AS MATERIALIZED (SELECT e.id, e.embedding <=> %(query)s AS distance"
        f" FROM {vec_table(dims)} AS e"
        f" WHERE e.fingerprint = {_literal(fingerprint)} AND e.id IN ({_COLLECTION_EMBEDDINGS})"
        " ORDER BY e.embedding <=> %(query)s LIMIT %(k)s)"
        f" SELECT id, distance FROM nearest WHERE {_USABLE} ORDER BY distance, id",
        arguments,
    ).fetchall()
    return [(int(row[0]), float(row[1])) for row in rows]


def _collection_vector_total(conn: Any, arguments: dict[str, Any]) -> int:
    return int(
        conn.execute(
            f"SELECT count(DISTINCT embedding_id) FROM ({_COLLECTION_EMBEDDINGS}) AS c", arguments
        ).fetchone()[0]
    )


def _model_bytes(conn: Any, dims: int, fingerprint: str) -> int:
    """The size of the model's vectors as float32 (counted once per read block)."""
    cache = getattr(conn, "positions_cache", None)
    key = ("model-vectors", fingerprint)
    if cache is not None and key in cache:
        return int(cache[key])
    size = model_vector_count(conn, fingerprint) * int(dims) * 4
    if cache is not None:
        cache[key] = size
    return size


def _exact_scan_bytes() -> int:
    # The size below which SQLite holds a model's vectors in memory and scores each one; the same
    # setting moves both (a search layer setting: imported here, at the call, not at load).
    from ...search.vector_cache import memory_budget_bytes

    return memory_budget_bytes()


def collection_entries(conn: Any, fingerprint: str, collection: str, params: str) -> CollectionEntries:
    rows = conn.execute(
        "SELECT d.id, v.embedding_id, v.start_line, v.end_line FROM documents AS d"
        " JOIN chunk_vectors AS v ON v.hash = d.hash AND v.chunk_params = %s AND v.fingerprint = %s"
        " WHERE d.collection = %s ORDER BY d.id, v.seq, v.window_no",
        (params, fingerprint, collection),
    ).fetchall()
    return _entries(rows)


def entries_for_embeddings(
    conn: Any, fingerprint: str, collection: str, params: str, embedding_ids: Sequence[int]
) -> CollectionEntries:
    """The collection's chunk windows that use these embeddings, ordered by document id."""
    rows = conn.execute(
        "SELECT d.id, v.embedding_id, v.start_line, v.end_line FROM chunk_vectors AS v"
        " JOIN documents AS d ON d.hash = v.hash AND d.collection = %s"
        " WHERE v.embedding_id = ANY(%s) AND v.fingerprint = %s AND v.chunk_params = %s"
        " ORDER BY d.id, v.seq, v.window_no",
        (collection, list(embedding_ids), fingerprint, params),
    ).fetchall()
    return _entries(rows)


def _entries(rows: Sequence[tuple[int, int, int, int]]) -> CollectionEntries:
    columns = list(zip(*rows, strict=True)) if rows else [(), (), (), ()]
    return CollectionEntries(*(list(column) for column in columns))


def read_model_vectors(
    conn: Any, dims: int, fingerprint: str, expected: int | None = None
) -> tuple[Any, Any]:
    """Every stored vector of one model as (embedding ids, float32 matrix), in no set order."""
    import numpy as np

    load_extension(conn)
    ids: list[int] = []
    rows: list[Any] = []
    with conn.raw.cursor(binary=True) as cursor:
        cursor.execute(f"SELECT id, embedding FROM {vec_table(dims)} WHERE fingerprint = %s", (fingerprint,))
        for embedding_id, vector in cursor:
            ids.append(embedding_id)
            rows.append(vector.to_numpy())  # pgvector's binary loader gives a Vector
    if expected is not None and len(ids) > expected:
        raise VectorsUnavailable("the vector table holds more vectors than the index lists")
    matrix = np.vstack(rows).astype(np.float32, copy=False) if rows else np.empty((0, dims), np.float32)
    return np.asarray(ids, dtype=np.int64), matrix
