"""`query` with expansion, given a longer budget than the CLI's, on judged sets.

    TANSAKU_CONFIG_DIR=... TANSAKU_INDEX_PATH=... .venv/bin/python evals/bench_expansion.py \
        --budget 20 -c zh-docs evals/sets/zh-docs-v1.jsonl evals/sets/zh-docs-holdout-v1.jsonl

The CLI stops an expansion after ``hybrid.steps.EXPANSION_TIMEOUT`` (1.5 s), which an
instruction-tuned model of 0.5-1.5B parameters does not reach on 2 CPU cores (about 3-4.5 s a
query): this measures what its lines are worth when they are allowed to finish, with the
generate model the index's config names (``tansaku models add generate FILE``). Reports MRR@10 of
``query --no-rerank`` (the harness's "query-expanded") and the seconds a set took; compare with
``tansaku bench SET --mode query-fused`` on the same index. Not a test.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sets", nargs="+", type=Path)
    parser.add_argument("-c", "--collection", required=True)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds an expansion may take")
    args = parser.parse_args(argv)

    import tansaku.hybrid.steps as steps
    from tansaku.api import Tansaku
    from tansaku.eval.harness import run_bench

    steps.EXPANSION_TIMEOUT = args.budget
    api = Tansaku()
    for set_path in args.sets:
        started = time.perf_counter()
        report = run_bench(api, set_path, args.collection, ["query-expanded"])
        took = time.perf_counter() - started
        for summary in report.summaries:
            if summary.kind == "all":
                mrr, queries = summary.mrr_at_10, summary.queries
                print(f"{set_path.stem}: MRR@10 {mrr:.3f} over {queries} queries, {took:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
