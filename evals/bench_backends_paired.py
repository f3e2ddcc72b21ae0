"""Keyword search latency on one PostgreSQL index, two versions of tansaku's code, paired.

    .venv/bin/python evals/bench_backends_paired.py --files 10000 --before /tmp/base/src [--rounds 4]
    .venv/bin/python evals/bench_backends_paired.py --corpus npm-docs --before /tmp/base/src

Not a test. bench_backends.py measures one version at a time, and on a shared machine the load
moves between two of its runs more than a change moves the figures. Here the corpus is indexed
once (with this checkout's code) into a throwaway PostgreSQL, then each round runs every query
once in a fresh process per version (a warm-up query first; the order alternates between
rounds), so both versions meet the same load. ``--before`` is the ``src`` folder of the other
version (e.g. ``git archive BASE src | tar -x -C /tmp/base``); its schema must be this one's.
Prints p50 / p95 per version and the load average's range.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import bench_backends as bb

HERE = Path(__file__).resolve().parent
WORKER = """
import json, sys, time
from tansaku.api import Tansaku
queries, url = json.loads(sys.argv[1]), sys.argv[2]
api = Tansaku(url)
api.search(queries[0], limit=10, snippets=False)
spent = []
for query in queries:
    started = time.perf_counter()
    api.search(query, limit=10, snippets=False)
    spent.append((time.perf_counter() - started) * 1000)
print(json.dumps(spent))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, help="evals/corpus_gen.py's synthetic corpus of this many files")
    parser.add_argument("--corpus", help="a corpus of evals/cache/corpora with judged queries")
    parser.add_argument("--before", type=Path, required=True, help="the src folder of the other version")
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    if (args.files is None) == (args.corpus is None):
        raise SystemExit("give --files N or --corpus NAME")
    if args.files is not None:
        root, queries = bb.synthetic(args.files)
        name = f"synthetic-{args.files}"
    else:
        name, root, queries = args.corpus, bb.CORPORA / args.corpus, bb.queries_for(args.corpus)
    codes = {"before": str(args.before.resolve()), "after": str(HERE.parent / "src")}
    work = Path(tempfile.mkdtemp(prefix="tansaku-paired-"))
    env = dict(
        os.environ, TANSAKU_CONFIG_DIR=str(work / "config"), TANSAKU_INDEX_PATH=str(work / "index.sqlite")
    )
    with bb.throwaway_server() as url:
        index = [sys.executable, "-m", "tansaku"]
        mask = bb.MASKS.get(name, "**/*.md")
        here = dict(env, PYTHONPATH=codes["after"])
        subprocess.run(
            [*index, "collection", "add", str(root), "--name", name, "--mask", mask], env=here, check=True
        )
        subprocess.run([*index, "--index", url, "update", "-c", name], env=here, check=True)
        times: dict[str, list[float]] = {version: [] for version in codes}
        loads = []
        for number in range(args.rounds):
            for version in list(codes) if number % 2 == 0 else list(reversed(codes)):
                loads.append(os.getloadavg()[0])
                done = subprocess.run(
                    [sys.executable, "-c", WORKER, json.dumps(queries), url],
                    env=dict(env, PYTHONPATH=codes[version]),
                    check=True,
                    capture_output=True,
                    text=True,
                )
                times[version] += json.loads(done.stdout.strip().splitlines()[-1])
    for version, values in times.items():
        print(
            f"{name} {version}: {len(values)} searches, p50 {bb.percentile(values, 0.5):.1f} ms,"
            f" p95 {bb.percentile(values, 0.95):.1f} ms"
        )
    print(f"load {min(loads):.2f} to {max(loads):.2f}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
