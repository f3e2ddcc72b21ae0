"""bench_backends.py's keyword measures on indexes built once, for before / after comparisons.

    .venv/bin/python evals/bench_backends_kept.py build --files 100000 --url postgresql://... --dir DIR
    PYTHONPATH=OTHER/src .venv/bin/python evals/bench_backends_kept.py search --files 100000 ...
    .venv/bin/python evals/bench_backends_kept.py serve --files 100000 --url ... --dir DIR --code OTHER

Not a test. Building the synthetic corpus's PostgreSQL index takes 14 minutes at 100,000 files;
bench_backends.py builds both indexes on every run. Here ``build`` makes them once (the SQLite
index and config in DIR, the PostgreSQL one in database ``kN`` of the server ``--url`` names,
e.g. one started with bench_backends' throwaway_server and left running); ``search`` runs
bench_backends' in-process measure on them (the 83 queries through ``Tansaku.search``, limit 10,
SQLite and PostgreSQL in turn, each PostgreSQL search on its own connection, as a command) with
the code on ``PYTHONPATH``; ``serve`` runs its ``measure_serve`` (one client, then 8) with the
servers started from ``--code``'s checkout. Alternate two versions' runs: the machine's load
moves more between runs than a change moves the figures.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import bench_backends as bb


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("build", "search", "serve"))
    parser.add_argument("--files", type=int, required=True)
    parser.add_argument("--url", required=True, help="the server (its database kN holds the index)")
    parser.add_argument("--dir", type=Path, required=True, help="the SQLite index and the config")
    parser.add_argument("--code", type=Path, help="serve: the checkout whose servers to start")
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    name = f"k{args.files // 1000}"
    work = args.dir / name
    work.mkdir(parents=True, exist_ok=True)
    os.environ["TANSAKU_CONFIG_DIR"] = str(work / "config")
    os.environ["TANSAKU_INDEX_PATH"] = str(work / "index.sqlite")
    root, queries = bb.synthetic(args.files)
    corpus = f"synthetic-{args.files}"
    if args.what == "build":
        from tansaku.api import Tansaku

        url = bb.fresh_database(args.url, name)
        for label, api in (("sqlite", Tansaku()), ("postgresql", Tansaku(url))):
            started = time.perf_counter()
            api.add_collection(str(root), name=corpus, masks=["**/*.md"])
            print(f"{label}: {time.perf_counter() - started:.1f} s (load {bb.load()})", flush=True)
        return
    head, _, query = args.url.partition("?")
    url = head.rsplit("/", 1)[0] + f"/{name}" + (f"?{query}" if query else "")
    if args.what == "search":
        from tansaku.api import Tansaku

        apis = {"sqlite": Tansaku(), "postgresql": Tansaku(url)}
        for api in apis.values():
            api.search(queries[0], limit=10, snippets=False)  # the files' and server's caches
        times: dict[str, list[float]] = {label: [] for label in apis}
        same, started_load = 0, bb.load()
        for query_text in queries:
            tops = []
            for label, api in apis.items():
                started = time.perf_counter()
                result = api.search(query_text, limit=10, snippets=False)
                times[label].append((time.perf_counter() - started) * 1000)
                tops.append([(hit.path, hit.score) for hit in result.hits])
            same += tops[0] == tops[1]
        shown = ", ".join(
            f"{label} {bb.percentile(v, 0.5):.1f} / {bb.percentile(v, 0.95):.1f} ms"
            for label, v in times.items()
        )
        print(f"{shown}; same top 10 {same} of {len(queries)}; load {started_load} to {bb.load()}")
        return
    code = (args.code or bb.HERE.parent).resolve()
    sys.path.insert(0, str(code / "evals"))
    del sys.modules["bench_backends"]
    import bench_backends as other  # its measure_serve starts its own checkout's servers

    report: dict[str, object] = {"queries": len(queries)}
    with tempfile.TemporaryDirectory() as tmp:
        other.measure_serve(report, url, Path(tmp), queries, args.clients)
    print(other.serve_summary(report))


if __name__ == "__main__":
    main()
