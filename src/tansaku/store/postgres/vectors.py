"""Vectors on PostgreSQL: what differs from store/vectors.py, under the same names, arguments and
results (store/vectors.py's ``@both`` functions serve both backends).

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
from typing import Any

from ..vectors import (
    UNUSABLE_SCAN_MAX,
    EmbedModelRecord,
    UnusableVectors,
    VectorsUnavailable,
    model_vector_count,
    unlink_gone,
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


def index_model(conn: Any, record: EmbedModelRecord) -> None:
    """The model's own HNSW index (store/vectors.py's register_model)."""
    _ensure_model_index(conn, record.dims, record.fingerprint)


def _array(blob: bytes) -> Any:
    import numpy as np

    return np.frombuffer(blob, dtype=np.float32)


def put_vector(
    conn: Any, dims: int, fingerprint: str, embedding_id: int, blob: bytes, *, replacing: bool
) -> None:
    """The vector of an embedding (store/vectors.py's add_embedding), replaced when it has one."""
    conn.execute(
        f"INSERT INTO {vec_table(dims)} (id, fingerprint, embedding) VALUES (%s, %s, %s)"
        " ON CONFLICT (id) DO UPDATE SET embedding = excluded.embedding",
        (embedding_id, fingerprint, _array(blob)),
    )


def prune(conn: Any, *, keep_unlinked: bool = False) -> int:
    """Unlink vectors of chunks that no longer exist, then drop embeddings nothing points to
    (store/vectors.py says why ``keep_unlinked`` keeps them)."""
    if deferred(conn, f"vectors {keep_unlinked}", lambda: _prune(conn, keep_unlinked)):
        return 0
    return _prune(conn, keep_unlinked)


def _prune(conn: Any, keep_unlinked: bool) -> int:
    orphans = unlink_gone(conn, keep_unlinked=keep_unlinked)
    by_dims: dict[int, list[int]] = {}
    for embedding_id, dims in orphans:
        by_dims.setdefault(int(dims), []).append(int(embedding_id))
    for dims, ids in by_dims.items():
        for start in range(0, len(ids), _BATCH):
            batch = ids[start : start + _BATCH]
            conn.execute(f"DELETE FROM {vec_table(dims)} WHERE id = ANY(%s)", (batch,))
            conn.execute("DELETE FROM embeddings WHERE id = ANY(%s)", (batch,))
    return len(orphans)


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
    # setting moves both.
    from ..memory_budget import memory_budget_bytes

    return memory_budget_bytes()


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
